"""The 400, 403, 404 and 500 pages: the admin's look, in the reader's language, and the
500 page shown even when the database is down."""

from __future__ import annotations

import pytest
from django.db import OperationalError
from django.db.backends.base.base import BaseDatabaseWrapper
from django.test import Client
from django.views import defaults

RUSSIAN = {"HTTP_ACCEPT_LANGUAGE": "ru"}


@pytest.mark.django_db
def test_a_missing_page_is_a_russian_404_in_the_admins_look(settings):
    settings.DEBUG = False
    response = Client().get("/admin-typo/", **RUSSIAN)
    page = response.content.decode()
    assert response.status_code == 404
    assert "Страница не найдена (404)" in page
    assert "admin/css/base.css" in page and '<html lang="ru">' in page
    assert "Not Found" not in page


@pytest.mark.django_db
def test_english_readers_get_the_pages_in_english(settings):
    settings.DEBUG = False
    response = Client().get("/admin-typo/", HTTP_ACCEPT_LANGUAGE="en")
    assert "Page not found (404)" in response.content.decode()


@pytest.mark.parametrize(
    "view, heading",
    [
        (defaults.bad_request, "Неверный запрос (400)"),
        (defaults.permission_denied, "Доступ запрещён (403)"),
    ],
)
def test_the_400_and_403_pages_are_russian(rf, view, heading):
    from django.utils import translation

    with translation.override("ru"):
        response = view(rf.get("/"), Exception())
    assert heading in response.content.decode()


def test_the_500_page_is_shown_with_the_database_down(settings, monkeypatch):
    settings.DEBUG = False

    def refused(self):
        raise OperationalError("connection refused")

    monkeypatch.setattr(BaseDatabaseWrapper, "ensure_connection", refused)
    client = Client(raise_request_exception=False)
    client.cookies["sessionid"] = "a-session-of-a-signed-in-user"  # read from the database
    response = client.get("/admin/", **RUSSIAN)
    page = response.content.decode()
    assert response.status_code == 500
    assert "Ошибка сервера (500)" in page
    assert "admin/css/base.css" in page
