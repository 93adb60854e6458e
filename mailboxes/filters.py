"""The admin lists' filters by a state that is not a column: an instance's liveness, a
lease's state and whether anybody listens to a mailbox, judged as the selectors judge
them (database time), so that the front page can link to exactly the rows it counts."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.utils.translation import gettext_lazy as _

from . import selectors


class InstanceStateFilter(admin.SimpleListFilter):
    title = _("state")
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [
            ("live", _("live")),
            ("dead", _("dead")),
            ("stopped", _("stopped")),
        ]

    def queryset(self, request, queryset):
        value = self.value()
        if not value:
            return queryset
        if value not in ("live", "dead", "stopped"):
            raise IncorrectLookupParameters(value)  # a 400 (core.adminutils.ListAdminMixin)
        return selectors.instances_in_state(queryset, value)


class LeaseStateFilter(admin.SimpleListFilter):
    title = _("state")
    parameter_name = "state"
    STATES = ("held", "release requested", "free", "mailbox disabled")

    def lookups(self, request, model_admin):
        return [
            ("held", _("held (release requested or not)")),
            ("release requested", _("release requested")),
            ("free", _("free")),
            ("mailbox disabled", _("mailbox disabled")),
        ]

    def queryset(self, request, queryset):
        value = self.value()
        return selectors.leases_in_state(queryset, value) if value in self.STATES else queryset


class ListenedFilter(admin.SimpleListFilter):
    title = _("listened to")
    parameter_name = "listened"

    def lookups(self, request, model_admin):
        return [
            ("yes", _("by a live instance")),
            ("no", _("by nobody (enabled, not listened to)")),
        ]

    def queryset(self, request, queryset):
        value = self.value()
        if value in ("yes", "no"):
            return selectors.mailboxes_listened(queryset, value == "yes")
        return queryset
