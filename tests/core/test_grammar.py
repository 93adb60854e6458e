"""Our models' names in the admin's sentences (core/grammar.py): the declared forms, and
the admin's pages through the test client, in Russian and in English."""

from __future__ import annotations

import json
import re
from datetime import datetime
from html import unescape

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth.models import User
from django.urls import reverse
from django.utils import timezone, translation

from core import grammar
from core.adminutils import GrammarAdminMixin
from mailboxes.models import InboundMessage
from notifications.models import Subscription
from tests.factories import create_message

RU = {"HTTP_ACCEPT_LANGUAGE": "ru"}
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}


def opts(label: str):
    return apps.get_model(label)._meta


def text(response) -> str:
    """The page's text, tags gone and spaces collapsed."""
    page = re.sub(r"<[^>]+>", " ", response.content.decode())
    return " ".join(unescape(page).split())


# -- the table ----------------------------------------------------------------------


def test_every_model_the_admin_shows_has_its_forms_declared():
    shown = {model._meta.label_lower for model in admin.site._registry}
    for model_admin in admin.site._registry.values():
        shown |= {inline.model._meta.label_lower for inline in model_admin.inlines}
    assert shown - set(grammar.NOUNS) == set()


def test_every_admin_says_its_sentences_with_the_declared_forms():
    plain = [
        model._meta.label_lower
        for model, model_admin in admin.site._registry.items()
        if not isinstance(model_admin, GrammarAdminMixin)
    ]
    assert plain == []


@pytest.mark.parametrize("label", sorted(grammar.NOUNS))
def test_in_english_the_forms_are_the_models_own_names(label):
    meta = opts(label)
    with translation.override("en"):
        assert grammar.accusative(meta) == str(meta.verbose_name)
        assert grammar.counted(1, meta).lower() == f"1 {meta.verbose_name}".lower()
        # "catalogue" names the list; its rows are entries.
        plural = (
            "catalogue entries" if label == "pricefeed.catalogueentry" else meta.verbose_name_plural
        )
        assert grammar.accusative_plural(meta).lower() == str(plural).lower()
        assert grammar.counted(2, meta).lower() == f"2 {plural}".lower()


@pytest.mark.parametrize(
    ("label", "number", "said"),
    [
        ("mailboxes.inboundmessage", 1, "1 входящее сообщение"),
        ("mailboxes.inboundmessage", 3, "3 входящих сообщения"),
        ("mailboxes.inboundmessage", 27, "27 входящих сообщений"),
        ("mailboxes.inboundmessage", 11, "11 входящих сообщений"),
        ("mailboxes.inboundmessage", 21, "21 входящее сообщение"),
        ("pricefeed.priceimport", 13, "13 импортов прайс-листов"),
        ("pricefeed.catalogueentry", 65, "65 позиций каталога"),
        ("pricefeed.catalogueentry", 1, "1 позиция каталога"),
        ("notifications.subscription", 2, "2 подписки"),
        ("auth.user", 5, "5 пользователей"),
    ],
)
def test_russian_counts_take_the_form_the_number_asks_for(label, number, said):
    with translation.override("ru"):
        assert grammar.counted(number, opts(label)) == said


@pytest.mark.parametrize(
    ("label", "accusative", "plural"),
    [
        ("notifications.subscription", "подписку", "подписки"),
        ("auth.user", "пользователя", "пользователей"),
        ("auth.group", "группу", "группы"),
        ("pricefeed.pricelistconfig", "настройку прайс-листа", "настройки прайс-листов"),
        ("pricefeed.catalogueentry", "позицию каталога", "позиции каталога"),
        ("mailboxes.mailbox", "почтовый ящик", "почтовые ящики"),
    ],
)
def test_russian_objects_of_a_verb_are_in_the_accusative(label, accusative, plural):
    with translation.override("ru"):
        assert grammar.accusative(opts(label)) == accusative
        assert grammar.accusative_plural(opts(label)) == plural


def test_a_model_without_declared_forms_keeps_djangos_names():
    meta = opts("contenttypes.contenttype")
    with translation.override("ru"):
        assert grammar.counted(2, meta) == f"2 {meta.verbose_name_plural}"
        assert grammar.accusative(meta) == str(meta.verbose_name)


@pytest.mark.parametrize("msgid", grammar.REWORDED)
def test_djangos_gendered_sentences_are_worded_for_every_name(msgid):
    with translation.override("ru"):
        said = translation.gettext(msgid)
    assert said != msgid
    # Django's own: "{name} … был успешно добавлен", "Удаление %(object_name)s", "оно".
    for agreeing in ("был", "Удаление", "оно", "Удален "):
        assert agreeing not in said


# -- the admin's pages ----------------------------------------------------------------


@pytest.fixture
def superuser_client(client, db):
    user = User.objects.create_superuser("root", "root@example.com", "x")
    client.force_login(user)
    return client


@pytest.mark.usefixtures("fast_password_hashing")
def test_the_user_list_says_its_sentences_with_declined_names(superuser_client):
    url = reverse("admin:auth_user_changelist")
    page = text(superuser_client.get(url, **RU))
    assert "Выберите пользователя для изменения" in page
    assert "Добавить пользователя" in page
    assert "1 пользователь" in page
    english = text(superuser_client.get(url, **EN))
    assert "Select user to change" in english
    assert "Add user" in english
    add = text(superuser_client.get(reverse("admin:auth_user_add"), **RU))
    assert "Добавить пользователя | pricefeed" in add  # the page's title, and its crumb:
    assert "Пользователи › Добавить пользователя" in add


@pytest.mark.usefixtures("fast_password_hashing")
def test_a_subscription_is_added_and_deleted_in_sentences_that_agree(superuser_client):
    add = reverse("admin:notifications_subscription_add")
    page = text(superuser_client.get(add, **RU))
    assert "Добавить подписку" in page
    assert "Добавить подписка" not in page
    form = superuser_client.get(add, **RU).context["adminform"].form
    initial = {name: form.get_initial_for_field(field, name) for name, field in form.fields.items()}
    data = {name: value for name, value in initial.items() if value not in (None, "", False)}
    data["email"] = "ops@buyer.test"
    added = superuser_client.post(add, data, follow=True, **RU)
    said = text(added)
    assert "Добавлено: подписка «" in said, said[:2000]
    assert "был успешно добавлен" not in said

    subscription = Subscription.objects.get()
    change = reverse("admin:notifications_subscription_change", args=[subscription.pk])
    assert "Изменить подписку" in text(superuser_client.get(change, **RU))
    delete = reverse("admin:notifications_subscription_delete", args=[subscription.pk])
    assert "Вы уверены, что хотите удалить подписку" in text(superuser_client.get(delete, **RU))
    changelist = reverse("admin:notifications_subscription_changelist")
    listed = superuser_client.get(changelist, **RU)
    assert ("delete_selected", "Удалить выбранные подписки") in listed.context[
        "action_form"
    ].fields["action"].choices
    confirm = superuser_client.post(
        changelist, {"action": "delete_selected", "_selected_action": [subscription.pk]}, **RU
    )
    assert "Вы уверены, что хотите удалить подписки?" in text(confirm)
    deleted = superuser_client.post(
        changelist,
        {"action": "delete_selected", "_selected_action": [subscription.pk], "post": "yes"},
        follow=True,
        **RU,
    )
    assert "Удалено: 1 подписка." in text(deleted)
    assert not Subscription.objects.exists()


@pytest.mark.usefixtures("fast_password_hashing")
def test_the_message_list_counts_and_its_days_are_in_the_genitive(superuser_client, mailbox):
    moment = timezone.make_aware(datetime(2026, 12, 2, 12, 0))
    for _ in range(3):
        create_message(mailbox, status=InboundMessage.Status.DONE)
    InboundMessage.objects.update(received_at=moment)
    url = reverse("admin:mailboxes_inboundmessage_changelist")
    december = f"{url}?received_at__year=2026&received_at__month=12"
    page = text(superuser_client.get(december, **RU))
    assert "3 входящих сообщения" in page
    assert "2 декабря" in page
    assert "Декабрь" not in page.replace("Декабрь 2026", "")
    english = text(
        superuser_client.get(f"{url}?received_at__year=2026&received_at__month=12", **EN)
    )
    assert "3 inbound messages" in english
    assert "December 2" in english


@pytest.mark.usefixtures("fast_password_hashing")
def test_an_inline_adds_another_object_named_in_the_accusative(superuser_client, mailbox):
    url = reverse("admin:mailboxes_mailbox_change", args=[mailbox.pk])
    page = superuser_client.get(url, **RU).content.decode()
    inlines = [
        json.loads(unescape(data)) for data in re.findall(r'data-inline-formset="([^"]+)"', page)
    ]
    said = [inline["options"]["addText"] for inline in inlines]
    assert "Добавить ещё настройку прайс-листа" in said
    assert not [text for text in said if "еще один" in text]
