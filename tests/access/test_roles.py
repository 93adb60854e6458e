"""The role groups: made by migration access 0001_roles with exactly the permissions
access/roles.py names, undone by reversing it; and every admin action asks for one."""

from __future__ import annotations

import pytest
from django.apps import apps as global_apps
from django.contrib import admin
from django.contrib.auth.models import Group, Permission, User
from django.db import DEFAULT_DB_ALIAS, connection
from django.db.migrations.executor import MigrationExecutor
from django.test import RequestFactory

from access.roles import ADMINISTRATOR, OPERATOR, ROLES, VIEWER, roles_apply

pytestmark = pytest.mark.django_db

APPS = ("mailboxes", "pricefeed", "products", "outbox", "notifications", "fleet")
ROLES_MIGRATION = ("access", "0001_roles")


def held(group: Group) -> set[str]:
    return {
        f"{app_label}.{codename}"
        for app_label, codename in group.permissions.values_list(
            "content_type__app_label", "codename"
        )
    }


def migrate(target: tuple[str, str | None]) -> None:
    executor = MigrationExecutor(connection)
    executor.migrate([target])


def test_migrate_makes_each_role_a_group_with_exactly_its_permissions():
    for name, permissions in ROLES.items():
        assert held(Group.objects.get(name=name)) == permissions


def test_each_role_holds_everything_of_the_one_before():
    assert ROLES[VIEWER] < ROLES[OPERATOR] < ROLES[ADMINISTRATOR]


def test_viewer_sees_every_model_of_the_apps():
    # Machinery tables with no permissions of their own (matching's keys) aside.
    models = [
        m
        for label in APPS
        for m in global_apps.get_app_config(label).get_models()
        if "view" in m._meta.default_permissions
    ]

    assert {f"{m._meta.app_label}.view_{m._meta.model_name}" for m in models} <= ROLES[VIEWER]


def test_no_role_touches_django_q_schedules():
    assert not [p for p in ROLES[ADMINISTRATOR] if p.endswith("schedule")]
    assert not [p for p in ROLES[ADMINISTRATOR] if p.startswith("django_q.") and "view_" not in p]


def test_every_admin_action_of_the_apps_and_django_q_asks_for_a_permission():
    request = RequestFactory().get("/")
    request.user = User(username="root", is_active=True, is_staff=True, is_superuser=True)
    checked, unguarded = [], []
    for model, model_admin in admin.site._registry.items():
        if model._meta.app_label not in (*APPS, "django_q"):
            continue
        for name, (func, _name, _description) in model_admin.get_actions(request).items():
            checked.append(f"{model._meta.label}.{name}")
            if not getattr(func, "allowed_permissions", None):
                unguarded.append(f"{model._meta.label}.{name}")
    assert unguarded == []
    assert {
        "mailboxes.InboundMessage.reprocess",
        "outbox.OutboxEvent.requeue",
        "django_q.Failure.resubmit_task",
    } <= set(checked)


def test_reversing_the_migration_deletes_the_groups_and_applying_it_makes_them_again():
    # A database where post_migrate never ran: the migration makes the permissions it needs.
    Permission.objects.filter(codename__in=["retry_outboxevent", "view_success"]).delete()

    migrate(("access", None))
    assert not Group.objects.filter(name__in=ROLES).exists()

    migrate(ROLES_MIGRATION)
    for name, permissions in ROLES.items():
        assert held(Group.objects.get(name=name)) == permissions


def test_applying_the_roles_again_sets_an_existing_group_to_exactly_the_role():
    operator = Group.objects.get(name=OPERATOR)
    operator.permissions.add(Permission.objects.get(codename="add_schedule"))
    operator.permissions.remove(Permission.objects.get(codename="test_mailbox"))

    roles_apply(apps=global_apps, using=DEFAULT_DB_ALIAS)
    roles_apply(apps=global_apps, using=DEFAULT_DB_ALIAS)

    assert Group.objects.filter(name__in=ROLES).count() == len(ROLES)
    assert held(Group.objects.get(name=OPERATOR)) == ROLES[OPERATOR]
