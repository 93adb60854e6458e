"""manage.py products_load, run as a real process against the test database: what it
prints, in the operators' language, and how it refuses a file."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from products.models import Product
from tests.integration.support import ROOT, database_url

from .samples import BILLION_LAUGHS, template_csv

pytestmark = pytest.mark.django_db(transaction=True)


def products_load(*args: str, language: str = "ru") -> subprocess.CompletedProcess:
    env = {**os.environ, "DATABASE_URL": database_url(), "LANGUAGE_CODE": language}
    return subprocess.run(
        [sys.executable, "manage.py", "products_load", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,  # a liveness bound
    )


def test_it_prints_what_it_added_changed_retired_and_refused_in_russian(tmp_path):
    path = tmp_path / "наш каталог.csv"
    path.write_text(
        template_csv(
            [
                ("P-1", "Болт М8х40", "Bosch", "A-1", "4600000000008|4600000000009", "шт", ""),
                ("P-2", "Гайка М8", "", "", "", "шт", ""),
                ("P-2", "Гайка М8 повтор", "", "", "", "шт", ""),
            ]
        )
    )
    first = products_load(str(path))
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == [
        "Формат: наш шаблон (CSV)",
        "Прочитано товаров: 2",
        "Добавлено: 2",
        "Изменено: 0 (из них снова в продаже: 0)",
        "Выведено из ассортимента: 0",
        "Без изменений: 0",
        "Отказано строк: 1",
        "  строка 4: наш код P-2 уже был в строке 3",
        "Отброшено значений: 1",
        "  строка 2: штрихкод 4600000000009 отброшен: неверная контрольная цифра",
    ]

    path.write_text(template_csv([("P-1", "Болт М8х40 DIN933", "Bosch", "", "", "шт", "")]))
    dry = products_load(str(path), "--dry-run")
    assert "Изменено: 1 (из них снова в продаже: 0)" in dry.stdout
    assert "Выведено из ассортимента: 1" in dry.stdout
    assert dry.stdout.rstrip().endswith("Пробный прогон: ничего не записано.")
    assert Product.objects.active().count() == 2

    partial = products_load(str(path), "--no-retire")
    assert "Выведено из ассортимента: 0" in partial.stdout
    assert Product.objects.get(own_code="P-1").name == "Болт М8х40 DIN933"
    assert Product.objects.active().count() == 2


def test_a_hostile_file_is_refused_in_one_line_and_nothing_changes(tmp_path):
    path = tmp_path / "import.xml"
    path.write_text(BILLION_LAUGHS)

    done = products_load(str(path), language="en")

    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "CommandError: The file is not loaded: the XML declares entities (a DTD with "
        "ENTITY): such files are not read"
    )
    assert not Product.objects.exists()
