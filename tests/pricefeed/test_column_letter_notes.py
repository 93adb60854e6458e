"""The config form says how a column given as two letters ("ID") will be read."""

from __future__ import annotations

import json

import pytest
from django.contrib.messages import get_messages
from django.forms.models import model_to_dict
from django.urls import reverse
from django.utils import translation

from core.texts import Text, as_json
from pricefeed.forms import PriceListConfigForm
from pricefeed.models import PriceListConfig
from pricefeed.parsing.messages import LETTER_READ_AS_HEADER
from pricefeed.texts import translated

pytestmark = pytest.mark.django_db


def post_data(config: PriceListConfig, columns: dict) -> dict:
    """What the config form posts for ``config`` (its fields' current values, whatever
    fields the form has), with ``columns``."""
    data: dict = {}
    for name, value in model_to_dict(config, fields=PriceListConfigForm._meta.fields).items():
        if name == "columns" or value is None or value is False:
            continue
        if value is True:
            data[name] = "on"
        elif isinstance(value, list):
            data[name] = [str(v) for v in value]
        else:
            data[name] = str(value)
    data["columns"] = json.dumps(columns, ensure_ascii=False)
    return data


def form(mailbox, columns: dict) -> PriceListConfigForm:
    return PriceListConfigForm(
        data=post_data(PriceListConfig(mailbox=mailbox, name="Опт"), columns)
    )


def test_two_letters_are_accepted_with_a_note_on_how_they_are_read(mailbox):
    f = form(mailbox, {"sku": "ID", "name": "Наименование", "price": "C"})
    assert f.is_valid(), f.errors
    assert f.column_notes == [
        "“ID” for sku will be read as the header “ID” if the sheet's header row has one, "
        "else as column ID."
    ]


def test_single_letters_and_header_texts_need_no_note(mailbox):
    f = form(mailbox, {"sku": "A", "name": "Наименование", "price": "Цена"})
    assert f.is_valid(), f.errors
    assert f.column_notes == []


def test_the_columns_help_says_a_header_of_that_text_wins(mailbox):
    assert "“ID”" in str(form(mailbox, {}).fields["columns"].help_text)


def test_the_admin_saves_the_config_and_shows_the_note_as_a_warning(admin_client, config):
    url = reverse("admin:pricefeed_pricelistconfig_change", args=[config.pk])
    columns = {"sku": "No", "price": "Цена"}

    response = admin_client.post(url, post_data(config, columns))

    assert response.status_code == 302, response.context["adminform"].form.errors
    config.refresh_from_db()
    assert config.columns == {"sku": "No", "price": "Цена"}
    notes = [(m.level_tag, m.message) for m in get_messages(response.wsgi_request)]
    assert (
        "warning",
        "“No” for sku will be read as the header “No” if the sheet's header row has one, "
        "else as column NO.",
    ) in notes


def test_the_parsers_warning_about_a_letter_read_as_a_header_is_translated():
    warning = Text(LETTER_READ_AS_HEADER, field="quantity", text="'L'", column="E")
    with translation.override("ru"):
        assert translated(as_json(warning)) == (
            "quantity читается из столбца с заголовком 'L' (столбец E), а не из столбца 'L'"
        )
