"""pricefeed.forms: PriceListConfigForm turns bad patterns and columns into messages."""

from __future__ import annotations

import json

import pytest

from mailboxes.models import Mailbox
from pricefeed.forms import PriceListConfigForm
from pricefeed.models import PriceListConfig

pytestmark = pytest.mark.django_db


def form(mailbox: Mailbox, **overrides: object) -> PriceListConfigForm:
    data = {
        "name": "Опт",
        "mailbox": mailbox.pk,
        "enabled": "on",
        "sender_pattern": "*@supplier.ru",
        "subject_pattern": "re:прайс|price",
        "filename_pattern": "прайс_*.xlsx",
        "sender_auth": PriceListConfig.SenderAuth.RECORD,
        "columns": json.dumps({"sku": "Артикул", "price": "C"}, ensure_ascii=False),
        "sheet": "",
        "number_format": PriceListConfig.NumberFormat.AUTO,
        "mode": PriceListConfig.Mode.SNAPSHOT,
        "default_currency": "RUB",
        "max_bad_rows_percent": "10",
    }
    data.update(overrides)
    return PriceListConfigForm(data=data)


def test_valid_config_is_accepted_and_saved(mailbox):
    f = form(mailbox)

    assert f.is_valid(), f.errors
    config = f.save()
    assert config.columns == {"sku": "Артикул", "price": "C"}
    assert config.filename_pattern == "прайс_*.xlsx"


def test_patterns_are_stored_without_surrounding_spaces(mailbox):
    f = form(mailbox, sender_pattern="  *@supplier.ru  ")

    assert f.is_valid(), f.errors
    assert f.cleaned_data["sender_pattern"] == "*@supplier.ru"


def test_empty_patterns_and_columns_are_accepted(mailbox):
    f = form(mailbox, sender_pattern="", subject_pattern="", filename_pattern="", columns="{}")

    assert f.is_valid(), f.errors


@pytest.mark.parametrize("field", ["sender_pattern", "subject_pattern", "filename_pattern"])
def test_invalid_regex_is_rejected_with_a_message(mailbox, field):
    f = form(mailbox, **{field: "re:(прайс"})

    assert not f.is_valid()
    (message,) = f.errors[field]
    assert message.startswith("invalid regular expression:")
    assert "Traceback" not in message


def test_glob_with_unclosed_bracket_is_accepted_as_literal(mailbox):
    f = form(mailbox, filename_pattern="прайс[.xlsx")

    assert f.is_valid(), f.errors


def test_unknown_column_field_is_rejected_naming_it(mailbox):
    f = form(mailbox, columns=json.dumps({"sku": "A", "цена": "B", "colour": "C"}))

    assert not f.is_valid()
    (message,) = f.errors["columns"]
    assert message.startswith("Unknown field(s) colour, цена;")
    assert "sku, name, price, currency, quantity" in message


def test_columns_that_are_not_an_object_are_rejected(mailbox):
    f = form(mailbox, columns=json.dumps(["sku", "price"]))

    assert not f.is_valid()
    assert "Expected an object" in f.errors["columns"][0]


def test_empty_column_reference_is_rejected(mailbox):
    f = form(mailbox, columns=json.dumps({"sku": "  "}))

    assert not f.is_valid()
    assert "Column for 'sku'" in f.errors["columns"][0]


def test_all_known_column_fields_are_accepted(mailbox):
    columns = {"sku": "A", "name": "Наименование", "price": "C", "currency": "D", "quantity": "E"}

    f = form(mailbox, columns=json.dumps(columns, ensure_ascii=False))

    assert f.is_valid(), f.errors
    assert f.cleaned_data["columns"] == columns


def test_sheet_number_zero_is_rejected(mailbox):
    f = form(mailbox, sheet="0")

    assert not f.is_valid()
    assert f.errors["sheet"] == ["Sheet numbers start at 1."]


def test_require_without_trusted_authserv_ids_is_refused_as_it_could_never_match(mailbox, settings):
    settings.PRICEFEED_AUTHSERV_IDS = []

    f = form(mailbox, sender_auth=PriceListConfig.SenderAuth.REQUIRE)

    assert not f.is_valid()
    (error,) = f.errors["sender_auth"]
    assert "PRICEFEED_AUTHSERV_IDS is empty" in error
    assert "would never match" in error


def test_require_with_a_trusted_authserv_id_is_accepted(mailbox, settings):
    settings.PRICEFEED_AUTHSERV_IDS = ["mx.buyer.example"]

    f = form(mailbox, sender_auth=PriceListConfig.SenderAuth.REQUIRE)

    assert f.is_valid(), f.errors
    assert f.save().sender_auth == PriceListConfig.SenderAuth.REQUIRE


def test_new_configs_require_an_authenticated_sender_once_an_authserv_id_is_trusted(
    mailbox, settings
):
    settings.PRICEFEED_AUTHSERV_IDS = []
    before = PriceListConfig.objects.create(mailbox=mailbox, name="before")
    assert before.sender_auth == PriceListConfig.SenderAuth.RECORD
    assert PriceListConfigForm()["sender_auth"].value() == PriceListConfig.SenderAuth.RECORD

    settings.PRICEFEED_AUTHSERV_IDS = ["mx.buyer.example"]

    assert PriceListConfigForm()["sender_auth"].value() == PriceListConfig.SenderAuth.REQUIRE
    after = PriceListConfig.objects.create(mailbox=mailbox, name="after")
    assert after.sender_auth == PriceListConfig.SenderAuth.REQUIRE
    before.refresh_from_db()
    assert before.sender_auth == PriceListConfig.SenderAuth.RECORD


def test_the_config_form_states_the_risk_of_record():
    help_text = str(PriceListConfigForm()["sender_auth"].help_text)

    assert "forged From address is still imported" in help_text
    assert "PRICEFEED_AUTHSERV_IDS" in help_text


@pytest.mark.parametrize("policy", ["ignore", "record"])
def test_ignore_and_record_need_no_trusted_authserv_id(mailbox, settings, policy):
    settings.PRICEFEED_AUTHSERV_IDS = []

    assert form(mailbox, sender_auth=policy).is_valid()
