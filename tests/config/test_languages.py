"""Russian and English: LANGUAGE_CODE from the environment (Russian by default), the
request's language chosen by the browser or by the switcher in the admin's header, and
Russian formats for numbers and times."""

from __future__ import annotations

import datetime as dt
import os

import pytest
from django.conf import settings
from django.urls import reverse
from django.utils import formats, translation

from tests.config.test_settings import settings_from  # noqa: F401  (a fixture)

LOGIN = "/admin/login/"


def test_language_code_is_russian_unless_the_environment_says_otherwise(settings_from):  # noqa: F811
    assert settings_from()["LANGUAGE_CODE"] == "ru"
    assert settings_from(LANGUAGE_CODE="en")["LANGUAGE_CODE"] == "en"
    assert [code for code, _ in settings_from()["LANGUAGES"]] == ["ru", "en"]


def test_the_suite_and_the_processes_it_starts_run_in_english():
    # tests/settings.py sets it in os.environ, which every manage.py process inherits.
    assert settings.LANGUAGE_CODE == "en"
    assert os.environ["LANGUAGE_CODE"] == "en"


def test_locale_middleware_sits_between_sessions_and_common_with_the_probes_first():
    middleware = settings.MIDDLEWARE
    assert middleware[0] == "monitoring.middleware.ProbeMiddleware"
    locale = middleware.index("django.middleware.locale.LocaleMiddleware")
    assert middleware.index("django.contrib.sessions.middleware.SessionMiddleware") < locale
    assert locale < middleware.index("django.middleware.common.CommonMiddleware")


@pytest.mark.django_db
def test_the_login_page_answers_in_the_browsers_language(client):
    russian = client.get(LOGIN, headers={"accept-language": "ru"})
    english = client.get(LOGIN, headers={"accept-language": "en"})
    nothing_offered = client.get(LOGIN, headers={"accept-language": "de"})

    assert "Имя пользователя" in russian.content.decode()
    assert 'lang="ru"' in russian.content.decode()
    assert "Username" in english.content.decode()
    # A language not offered: LANGUAGE_CODE (English in the suite).
    assert "Username" in nothing_offered.content.decode()


@pytest.mark.django_db
def test_the_switcher_in_the_header_keeps_the_choice_over_the_browsers(client):
    page = client.get(LOGIN, headers={"accept-language": "en"}).content.decode()
    assert 'id="language-switcher"' in page
    assert f'action="{reverse("set_language")}"' in page
    assert '<option value="ru"' in page and '<option value="en"' in page

    switched = client.post(reverse("set_language"), {"language": "ru", "next": LOGIN})

    assert switched.status_code == 302 and switched["Location"] == LOGIN
    again = client.get(LOGIN, headers={"accept-language": "en"}).content.decode()
    assert "Имя пользователя" in again
    assert '<option value="ru" selected' in again


def test_russian_formats_have_a_decimal_comma_and_24_hour_times():
    moment = dt.datetime(2026, 12, 1, 22, 5, 3)
    with translation.override("ru"):
        assert formats.number_format(1234.5, 2) == "1234,50"  # no thousands grouping
        assert formats.date_format(moment, "DATETIME_FORMAT") == "1 декабря 2026 г. 22:05"
        assert formats.time_format(moment.time(), "TIME_FORMAT") == "22:05"
    with translation.override("en"):
        assert formats.number_format(1234.5, 2) == "1234.50"
