"""Why a file could not be read (a ParseError's message, stored as a msgid and its values as
an import's last error or an attachment's archive error) is shown in Russian with its
values, and in English as it was made; a reason stored in English before is read once by
the data migration (core.legacy_texts) into the same form."""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext

from core.legacy_texts import converted
from core.storedtext import FOREIGN, Text, as_json, text_of
from pricefeed import parsing, texts
from pricefeed.limits import file_size_problem
from pricefeed.models import PriceImport
from pricefeed.parsing import Limits, ParseOptions, deadline, expand, parse
from pricefeed.parsing import messages as m
from tests.factories import receive, run_all
from tests.parsing import builders as b

MiB = 2**20
CSV = "Артикул;Цена\nA-1;10\n".encode()
PARSING = Path(parsing.__file__).parent
_PLACEHOLDER = re.compile(r"%\((\w+)\)s")


def in_russian(text) -> str:
    with translation.override("ru"):
        return texts.translated(as_json(text))


def in_english(text) -> str:
    with translation.override("en"):
        return texts.translated(as_json(text))


@pytest.mark.parametrize(
    ("english", "russian"),
    [
        (
            "archive 'attachment': entry '/etc/passwd' has an absolute path",
            "архив во вложении: у элемента '/etc/passwd' абсолютный путь",
        ),
        (
            "archive 'inner.zip': entry '../a.csv' climbs out of the archive ('..')",
            "архив 'inner.zip': элемент '../a.csv' выходит за пределы архива ('..')",
        ),
        (
            "entry 'prices/2024.csv' inflates to more than 50 MiB",
            "элемент архива 'prices/2024.csv': после распаковки больше 50 МиБ",
        ),
        (
            "entry 'a.csv' inflates more than 200x its compressed size (4,127 bytes): a zip bomb?",
            "элемент архива 'a.csv': после распаковки больше сжатого размера (4\xa0127 байт) "
            "более чем в 200 раз: zip-бомба?",
        ),
        (
            "archive 'attachment': more than 1,000 archive entries in all",
            "архив во вложении: элементов архива всего больше 1\xa0000",
        ),
        (
            "archive 'attachment': damaged zip archive (File is not a zip file)",
            "архив во вложении: повреждённый zip-архив (File is not a zip file)",
        ),
        (
            "gzip 'prices.csv.gz': gzip data is truncated",
            "gzip-файл 'prices.csv.gz': данные gzip обрываются",
        ),
        (
            "attachment is 60,000,000 bytes, more than 50 MiB",
            "вложение: размер — 60\xa0000\xa0000 байт, больше 50 МиБ",
        ),
        (
            # As a notification names the file where the error says "attachment".
            "p.zip is 31,457,280 bytes, more than 30 MiB",
            "p.zip: размер — 31\xa0457\xa0280 байт, больше 30 МиБ",
        ),
        (
            "workbook part 'xl/worksheets/sheet1.xml' places cells across 20,000 rows x 16,384 "
            "columns, more than 32,000,000 cells: refused (it would exhaust memory)",
            "часть книги 'xl/worksheets/sheet1.xml': ячейки занимают 20\xa0000 × 16\xa0384 "
            "(строк × столбцов), а допустимо ячеек не больше 32\xa0000\xa0000: отклонена "
            "(не хватило бы памяти)",
        ),
        (
            "workbook: damaged zip archive (Bad magic number for central directory)",
            "книга: повреждённый zip-архив (Bad magic number for central directory)",
        ),
        (
            "damaged workbook: the compound file claims 4,000,000,000 bytes for its FAT, more "
            "than the file's 1,536",
            "повреждённая книга: составной файл отводит под «таблица FAT» 4\xa0000\xa0000\xa0000 "
            "байт, больше размера самого файла (1\xa0536)",
        ),
        (
            "workbook sheet '2024' places cells across 3,002 rows x 102 columns, more than "
            "300,000 cells (max_cells, setting PRICEFEED_PARSE_MAX_CELLS): refused (it would "
            "exhaust memory)",
            "лист книги '2024': ячейки занимают 3\xa0002 × 102 (строк × столбцов), а допустимо "
            "ячеек не больше 300\xa0000 (max_cells, настройка PRICEFEED_PARSE_MAX_CELLS): "
            "отклонена (не хватило бы памяти)",
        ),
        (
            "unsupported format: html (a web page, perhaps saved with a spreadsheet's name)",
            "неподдерживаемый формат: html (веб-страница, возможно, сохранённая под именем "
            "таблицы)",
        ),
        (
            "reading the file took more than 180 s (max_seconds, setting "
            "PRICEFEED_PARSE_MAX_SECONDS); stopped at row 12,001",
            "чтение файла заняло больше 180 с (max_seconds, настройка "
            "PRICEFEED_PARSE_MAX_SECONDS); остановлено на строке 12\xa0001",
        ),
        (
            "missing columns: price (e.g. цена, стоимость). Header row 3 has: 'Артикул', 'Имя'",
            "не найдены столбцы: price (например, цена, стоимость). В строке заголовка 3: "
            "'Артикул', 'Имя'",
        ),
        (
            file_size_problem(60 * MiB),
            "размер файла — 62\xa0914\xa0560 байт, больше предела в 52\xa0428\xa0800 байт "
            "(max_file_bytes, настройка PRICEFEED_PARSE_MAX_FILE_BYTES)",
        ),
    ],
)
def test_a_file_error_stored_in_english_before_is_converted_and_shown_in_russian(english, russian):
    with translation.override("ru"):
        assert texts.translated(converted(english)) == russian
    with translation.override("en"):
        assert texts.translated(converted(english)) == english
    assert Text.from_json(converted(english)) == english


def test_a_file_error_made_from_no_known_template_is_converted_to_a_foreign_text():
    older = "attachment: unreadable (some older wording)"
    assert converted(older) == {"text": FOREIGN, "params": {"text": older}}
    with translation.override("ru"):
        assert texts.translated(converted(older)) == older


# -- every template, from the raise sites that make it ---------------------------------------


def _template_uses() -> list[tuple[str, int, str, set[str]]]:
    """(module, line, template name, names given) for every ``Text(m.NAME, ...)`` and
    ``Text(messages.NAME, ...)`` in the parsing library."""
    uses = []
    for path in sorted(PARSING.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "Text"
                and node.args
            ):
                continue
            first = node.args[0]
            if not (
                isinstance(first, ast.Attribute)
                and isinstance(first.value, ast.Name)
                and first.value.id in ("m", "messages")
            ):
                continue
            names = {keyword.arg for keyword in node.keywords}
            uses.append((path.name, node.lineno, first.attr, names))
    return uses


def test_every_raise_site_gives_its_template_exactly_the_values_it_names():
    uses = _template_uses()
    assert len(uses) > 60
    for module, line, name, given in uses:
        template = getattr(m, name)
        assert set(_PLACEHOLDER.findall(template)) == given, f"{module}:{line} {name}"


def test_every_msgid_of_the_library_is_used_and_translated():
    used = {name for _, _, name, _ in _template_uses()}
    source = "\n".join(
        path.read_text() for path in PARSING.glob("*.py") if path.name != "messages.py"
    )
    for name in dir(m):
        template = getattr(m, name)
        if not (name.isupper() and isinstance(template, Text)):
            continue
        assert name in used or re.search(rf"\b(m|messages)\.{name}\b", source), name
        values = {key: f"<{key}>" for key in _PLACEHOLDER.findall(template)}
        with translation.override("ru"):
            assert gettext(template) != template, name
            assert texts.translated(Text(template, **values)) == gettext(template) % values, name


def _xls_with_sector_shift(shift: int) -> bytes:
    data = bytearray(b.xls([["Артикул", "Цена"], ["A-1", 1]]))
    data[30:32] = shift.to_bytes(2, "little")
    return bytes(data)


def _zip_in_zip() -> bytes:
    return b.zip_of({"inner.zip": b.zip_of({"a.csv": CSV})})


REFUSALS = {
    "absolute entry path": lambda: expand(b.zip_of({"/etc/a.csv": CSV}), "a.zip", Limits()),
    "entry climbing out": lambda: expand(b.tar_of({"../a.csv": CSV}), "a.tar", Limits()),
    "symbolic link": lambda: expand(b.zip_with_symlink("l.csv", "/etc"), "a.zip", Limits()),
    "tar link": lambda: expand(b.tar_of({"a.csv": CSV}, symlink=("l", "a")), "a.tar", Limits()),
    "truncated gzip": lambda: expand(b.gz(CSV * 50, "p.csv")[:40], "p.csv.gz", Limits()),
    "damaged zip": lambda: expand(b.zip_of({"a.csv": CSV})[:-30], "a.zip", Limits()),
    "entry over the cap": lambda: expand(
        b.zip_of_zeros("z.csv", 2 * MiB), "z.zip", Limits(max_file_bytes=MiB)
    ),
    "zip bomb": lambda: expand(b.zip_of_zeros("z.csv", 4 * MiB), "z.zip", Limits()),
    "overlapping entries": lambda: expand(b.overlapping_zip(3, 1024), "o.zip", Limits()),
    "too many entries": lambda: expand(
        b.zip_of({"a.csv": CSV, "b.csv": CSV, "c.csv": CSV}), "a.zip", Limits(max_entries=2)
    ),
    "too many files": lambda: expand(
        b.zip_of({"a.csv": CSV, "b.csv": CSV, "c.csv": CSV}), "a.zip", Limits(), max_files=2
    ),
    "nested too deep": lambda: expand(_zip_in_zip(), "a.zip", Limits(max_depth=1)),
    "attachment too large": lambda: expand(CSV * 100, "a.csv", Limits(max_file_bytes=100)),
    "file too large": lambda: parse(CSV * 100, limits=Limits(max_file_bytes=100)),
    "empty file": lambda: parse(b""),
    "pdf": lambda: parse(b"%PDF-1.4\n" + b"x" * 100),
    "archive not expanded": lambda: parse(b.zip_of({"a.csv": CSV})),
    "no header": lambda: parse(b"a;b\n1;2\n"),
    "missing column": lambda: parse("Артикул;Наименование\nA-1;Болт\n".encode()),
    "too many rows": lambda: parse(
        "Артикул;Цена\nA-1;1\nA-2;2\nA-3;3\n".encode(), limits=Limits(max_rows=2)
    ),
    "sheet not found": lambda: parse(
        b.xlsx([["Артикул", "Цена"], ["A-1", 1]]), ParseOptions(sheet="Склад")
    ),
    "xml bomb": lambda: parse(
        b.handmade_xlsx(
            b.sheet_xml([["Артикул", "Цена"], ["A", 1]], prolog='<!DOCTYPE x [<!ENTITY a "b">]>')
        )
    ),
    "damaged compound file": lambda: parse(_xls_with_sector_shift(5)),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_a_refusal_from_a_crafted_file_is_shown_in_russian(case):
    with pytest.raises(parsing.ParseError) as exc:
        REFUSALS[case]()
    english = text_of(exc.value)
    russian = in_russian(english)
    assert russian != english
    assert re.search("[а-яё]", russian.replace(english, "")), russian
    # The values stay: every number of the English is in the Russian (as digits).
    for number in re.findall(r"\d[\d,]*", english):
        assert number.replace(",", "\xa0") in russian or number in russian, (number, russian)
    assert in_english(english) == english


def test_a_time_limit_says_where_the_parse_stopped_in_russian(monkeypatch):
    clock = itertools.count(step=1000)  # every reading of the clock is 1,000 s later
    monkeypatch.setattr(deadline, "_now", lambda: next(clock))
    with pytest.raises(parsing.ParseTimeLimit) as exc:
        parse(CSV)
    english = text_of(exc.value)
    assert "; stopped " in english
    russian = in_russian(english)
    assert russian.startswith("чтение файла заняло больше 180 с (max_seconds, настройка ")
    assert "; остановлено " in russian
    assert "stopped" not in russian and "row" not in russian


@pytest.mark.usefixtures("no_queue", "fast_password_hashing")
def test_a_refused_archive_is_shown_in_russian_on_the_import_page(
    admin_client, mailbox, config, settings
):
    settings.PRICEFEED_PARSE_MAX_ENTRIES = 2
    archive = b.zip_of({f"p{i}.csv": CSV for i in range(3)})
    (price_import,) = run_all(receive(mailbox, [("prices.zip", archive)]))
    assert price_import.status == PriceImport.Status.FAILED
    # Stored as a msgid and its values, and their English.
    assert price_import.last_error == "archive 'attachment': more than 2 archive entries in all"
    assert price_import.last_error_text == {
        "text": m.TOO_MANY_ENTRIES.template,
        "params": {"where": {"text": m.ATTACHMENT_ARCHIVE.template}, "limit": 2},
    }

    url = reverse("admin:pricefeed_priceimport_change", args=[price_import.pk])
    with translation.override("ru"):
        content = admin_client.get(url, HTTP_ACCEPT_LANGUAGE="ru").content.decode()

    assert "архив во вложении: элементов архива всего больше 2" in content
