"""Filters of the imports list that a field's own filter cannot give."""

from __future__ import annotations

from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from .models import PriceImport

Status = PriceImport.Status
IN_PROGRESS = "in_progress"
# Made and not finished: waiting for a worker, or being read.
PROGRESS_STATUSES = (Status.PENDING, Status.RUNNING)


class ImportStatusFilter(admin.SimpleListFilter):
    """By status, and "in progress" (pending or running) as one choice: the front page
    counts those together."""

    title = _("status")
    parameter_name = "status"

    def lookups(self, request, model_admin):
        return [(IN_PROGRESS, _("in progress (pending or running)")), *Status.choices]

    def queryset(self, request, queryset):
        value = self.value()
        if value == IN_PROGRESS:
            return queryset.filter(status__in=PROGRESS_STATUSES)
        if value in Status.values:
            return queryset.filter(status=value)
        return queryset
