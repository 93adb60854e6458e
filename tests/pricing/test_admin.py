"""Rates, the bank's fetches and suppliers' terms in the admin, in Russian: viewers see,
operators enter manual rates and keep terms, the bank's rows stay as fetched."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from outbox.models import OutboxEvent
from pricing.models import Rate, RateFetch, SupplierTerms
from tests.factories import create_config, create_mailbox

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_password_hashing")]

RATES = "/admin/pricing/rate/"
FETCHES = "/admin/pricing/ratefetch/"
TERMS = "/admin/pricing/supplierterms/"


def person(role: str) -> Client:
    user = User.objects.create_user(role, password="pw", is_staff=True)
    user.groups.add(Group.objects.get(name=role))
    client = Client(HTTP_ACCEPT_LANGUAGE="ru")
    client.force_login(user)
    return client


def cbr_rate() -> Rate:
    return Rate.objects.create(
        currency="USD", date=date(2026, 12, 2), rate=Decimal("78.2284"), source=Rate.Source.CBR
    )


def test_viewers_see_rates_in_russian_and_may_not_add():
    cbr_rate()
    viewer = person("viewer")

    html = viewer.get(RATES).content.decode()

    assert "Курсы" in html and '<td class="field-source">ЦБ РФ</td>' in html
    assert "78,2284" in html
    assert viewer.get(RATES + "add/").status_code == 403


def test_an_operator_enters_a_manual_rate_as_themselves():
    operator = person("operator")

    response = operator.post(
        RATES + "add/", {"currency": "USD", "date": "02.12.2026", "rate": "80.5"}
    )

    assert response.status_code == 302, response.content.decode()[:3000]
    rate = Rate.objects.get()
    assert (rate.source, rate.entered_by.username, rate.rate) == (
        Rate.Source.MANUAL,
        "operator",
        Decimal("80.5"),
    )


def test_a_bad_manual_rate_is_refused_in_russian():
    html = (
        person("operator")
        .post(RATES + "add/", {"currency": "usd", "date": "02.12.2026", "rate": "0"})
        .content.decode()
    )

    assert "три заглавные латинские буквы" in html
    assert "Курс должен быть больше нуля" in html
    assert not Rate.objects.exists()


def test_a_second_manual_rate_for_a_currency_and_date_is_refused_in_russian():
    operator = person("operator")
    data = {"currency": "USD", "date": "02.12.2026", "rate": "80.5"}
    operator.post(RATES + "add/", data)

    html = operator.post(RATES + "add/", {**data, "rate": "81"}).content.decode()

    assert "Курс USD на 02.12.2026 уже введён вручную." in html
    assert Rate.objects.count() == 1


def test_a_manual_rate_beside_the_banks_of_its_date_is_taken():
    cbr_rate()
    response = person("operator").post(
        RATES + "add/", {"currency": "USD", "date": "02.12.2026", "rate": "80.5"}
    )
    assert response.status_code == 302
    assert Rate.objects.count() == 2


def test_the_banks_rate_is_read_only_even_to_an_operator():
    rate = cbr_rate()
    operator = person("operator")

    page = operator.get(f"{RATES}{rate.pk}/change/").content.decode()
    operator.post(
        f"{RATES}{rate.pk}/change/", {"currency": "USD", "date": "02.12.2026", "rate": "1"}
    )

    assert 'id="id_rate"' not in page
    assert Rate.objects.get().rate == Decimal("78.2284")
    assert operator.post(f"{RATES}{rate.pk}/delete/", {"post": "yes"}).status_code == 403


def test_a_failed_fetch_shows_its_error_in_russian():
    RateFetch.objects.create(
        date=date(2026, 12, 2),
        status=RateFetch.Status.FAILED,
        attempts=3,
        problem=RateFetch.Problem.STATUS,
        detail="500",
    )

    html = person("viewer").get(FETCHES).content.decode()

    assert "Загрузки курсов" in html
    assert "ошибка, будет повтор" in html
    assert "сервер ЦБ ответил ошибкой: 500" in html


def test_suppliers_terms_are_kept_by_operators_with_russian_validation():
    config = create_config(create_mailbox())
    operator = person("operator")

    refused = operator.post(
        TERMS + "add/", {"config": config.pk, "rate_surcharge": "150", "priority": "0"}
    ).content.decode()
    saved = operator.post(
        TERMS + "add/",
        {
            "config": config.pk,
            "rate_surcharge": "2",
            "enabled": "on",
            "priority": "10",
            "stale_days": "14",
        },
    )

    assert "Надбавка не может быть больше 100 процентов" in refused
    assert "Приоритет — число от 1 до 1000" in refused
    assert saved.status_code == 302
    terms = SupplierTerms.objects.get()
    assert (terms.rate_surcharge, terms.enabled, terms.priority) == (Decimal("2"), True, 10)
    # Every price is computed again with the new terms, after the save commits.
    assert OutboxEvent.objects.filter(kind="pricing.refresh").count() == 1
    assert person("viewer").get(TERMS + "add/").status_code == 403
