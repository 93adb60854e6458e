"""Staff users in each role, and what an admin changelist offers and does for them."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from access.roles import ADMINISTRATOR, OPERATOR, VIEWER

# The roles the permission tests walk through; None is a staff user in no group.
ROLES = (VIEWER, OPERATOR, ADMINISTRATOR, None)
# Each role holds everything of the one before it.
RANK = {None: 0, VIEWER: 1, OPERATOR: 2, ADMINISTRATOR: 3}
# A test run once per role.
each_role = pytest.mark.parametrize("role", ROLES, ids=lambda role: role or "no group")


def at_least(role: str | None, least: str) -> bool:
    return RANK[role] >= RANK[least]


def staff(role: str | None, *, username: str | None = None) -> User:
    """An active staff user (not a superuser), in the group of ``role``."""
    user = User.objects.create_user(username or f"staff-{role or 'nobody'}", is_staff=True)
    if role is not None:
        user.groups.add(Group.objects.get(name=role))
    return user


def logged_in(client: Client, role: str | None) -> Client:
    client.force_login(staff(role))
    return client


def offered(client: Client, url: str) -> set[str]:
    """The actions a changelist offers (none when the changelist itself is refused)."""
    response = client.get(url)
    if response.status_code == 403:
        return set()
    assert response.status_code == 200
    form = response.context["action_form"]
    if form is None:
        return set()
    return {name for name, _label in form.fields["action"].choices if name}


def run_action(client: Client, url: str, action: str, *pks: object):
    """POSTs the changelist's action form, as the page would (or a crafted request)."""
    return client.post(url, {"action": action, "_selected_action": [str(pk) for pk in pks]})
