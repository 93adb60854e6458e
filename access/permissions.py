"""Permissions and roles named in the reader's language.

Django stores ``auth.Permission.name`` in English, as made when the permission was
("Can view price import", the project's own "Can run failed imports again"), and the
role groups by their English names; the group and user forms would show those. Here a
permission is named again from what it is: a default permission (add, change, delete,
view) by its action and its model's translated verbose name, one of the project's own by
its translated name; a role group by its translated role name. Nothing stored changes.
"""

from __future__ import annotations

from django.contrib.auth.models import Group, Permission
from django.utils.translation import gettext, gettext_noop, pgettext_lazy

from .roles import ADMINISTRATOR, OPERATOR, VIEWER

# The default permissions' names, by action (Django's own are "Can <action> <model>",
# English only).
ACTIONS = {
    "add": gettext_noop("Can add %(model)s"),
    "change": gettext_noop("Can change %(model)s"),
    "delete": gettext_noop("Can delete %(model)s"),
    "view": gettext_noop("Can view %(model)s"),
}
# The names of the project's own permissions (Meta.permissions of mailboxes and
# pricefeed, stored in English); outbox's are marked in outbox/models.py.
CUSTOM = (
    gettext_noop("Can test a mailbox's connection"),
    gettext_noop("Can force the release of a mailbox lease"),
    gettext_noop("Can reprocess inbound messages"),
    gettext_noop("Can mark inbound messages failed"),
    gettext_noop("Can run failed imports again"),
    gettext_noop("Can approve or reject held imports"),
)
ROLE_NAMES = {
    VIEWER: pgettext_lazy("role", "viewer"),
    OPERATOR: pgettext_lazy("role", "operator"),
    ADMINISTRATOR: pgettext_lazy("role", "administrator"),
}


def permission_name(permission: Permission) -> str:
    """The permission's name in the active language."""
    action, _, model_name = permission.codename.partition("_")
    model = permission.content_type.model_class()
    if action in ACTIONS and model is not None and model_name == model._meta.model_name:
        return gettext(ACTIONS[action]) % {"model": model._meta.verbose_name}
    return gettext(permission.name)


def permission_label(permission: Permission) -> str:
    """A permission as the group and user forms list it: app | model | name, each in the
    active language (Django's own label with the stored English name)."""
    content_type = permission.content_type
    model = content_type.model_class()
    if model is None:  # a stale content type: what Django says of it
        return str(permission)
    return " | ".join(
        (
            str(model._meta.app_config.verbose_name),
            str(model._meta.verbose_name),
            permission_name(permission),
        )
    )


def role_name(group: Group) -> str:
    """A group's name, translated when it is one of the roles."""
    return str(ROLE_NAMES.get(group.name, group.name))
