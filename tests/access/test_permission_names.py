"""Permissions and roles in the reader's language on the group and user pages: Django
stores the permissions' names and the groups' in English, and they stay so."""

from __future__ import annotations

import html

import pytest
from django.contrib.auth.models import Group, Permission
from django.urls import reverse
from django.utils import translation

from access.permissions import permission_label, permission_name, role_name
from access.roles import OPERATOR, VIEWER

pytestmark = pytest.mark.usefixtures("fast_password_hashing")


def page(client, url: str, language: str) -> str:
    with translation.override(language):
        response = client.get(url, headers={"accept-language": language})
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def permission(app_label: str, codename: str) -> Permission:
    return Permission.objects.get(content_type__app_label=app_label, codename=codename)


@pytest.mark.django_db
def test_a_default_permission_is_named_by_its_action_and_its_models_translated_name():
    view = permission("pricefeed", "view_priceimport")

    assert view.name == "Can view price import"  # stored as Django made it
    with translation.override("ru"):
        assert permission_name(view) == "Может просматривать: импорт прайс-листа"
        assert permission_label(view) == (
            "Прайс-листы | импорт прайс-листа | Может просматривать: импорт прайс-листа"
        )
    with translation.override("en"):
        assert permission_name(view) == "Can view price import"


@pytest.mark.django_db
def test_the_projects_own_permissions_are_named_in_russian():
    with translation.override("ru"):
        names = {
            codename: permission_name(permission(app_label, codename))
            for app_label, codename in [
                ("mailboxes", "test_mailbox"),
                ("mailboxes", "release_mailboxlease"),
                ("mailboxes", "reprocess_inboundmessage"),
                ("mailboxes", "fail_inboundmessage"),
                ("pricefeed", "rerun_priceimport"),
                ("outbox", "retry_outboxevent"),
                ("outbox", "fail_outboxevent"),
            ]
        }
    untranslated = {codename: name for codename, name in names.items() if name.startswith("Can ")}
    assert untranslated == {}
    assert names["rerun_priceimport"] == "Может повторно запускать неудавшиеся импорты"


def test_the_group_form_lists_permissions_and_the_list_roles_in_russian(admin_client):
    operator = Group.objects.get(name=OPERATOR)
    url = reverse("admin:auth_group_change", args=[operator.pk])

    text = page(admin_client, url, "ru")
    assert "Прайс-листы | импорт прайс-листа | Может просматривать: импорт прайс-листа" in text
    assert "Может повторно запускать неудавшиеся импорты" in text
    assert "Can view price import" not in text
    assert "Can run failed imports again" not in text

    listed = page(admin_client, reverse("admin:auth_group_changelist"), "ru")
    assert "оператор" in listed and "наблюдатель" in listed
    assert "Can view price import" in page(admin_client, url, "en")


def test_the_user_form_names_permissions_and_roles_in_russian(admin_client, admin_user):
    url = reverse("admin:auth_user_change", args=[admin_user.pk])

    text = page(admin_client, url, "ru")
    assert "Может просматривать: импорт прайс-листа" in text
    assert "администратор" in text


@pytest.mark.django_db
def test_a_group_that_is_no_role_keeps_its_name():
    with translation.override("ru"):
        assert role_name(Group(name="suppliers desk")) == "suppliers desk"
        assert role_name(Group(name=VIEWER)) == "наблюдатель"
