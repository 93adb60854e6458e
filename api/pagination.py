"""Cursor pagination, never OFFSET: each page continues from the last row of the one
before through an index, so page 10,000 costs what page 1 does.

A cursor comes from the client: its position is checked against the ordering's column
before it reaches a query (a text where an id belongs, a year-0 time, an integer past
bigint, a NUL in a text, a time without its offset), and a cursor that does not fit is
404, like one that does not decode."""

from __future__ import annotations

from datetime import UTC, datetime

from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.db.models import Field, Model
from django.utils.translation import gettext_lazy as _
from rest_framework import pagination
from rest_framework.exceptions import NotFound


class CursorPagination(pagination.CursorPagination):
    """Pages of ``page_size`` rows (default 100, at most 1000), in the view's
    ``ordering``: a unique column (a primary key, a config's current SKU) wherever
    there is one, so that the cursor never needs DRF's offset for ties."""

    page_size = 100
    page_size_query_param = "page_size"
    # The parameters' descriptions in the reference page's language (REST framework's
    # have no Russian).
    cursor_query_description = _("The cursor of the page: the next and previous links hold it.")  # type: ignore[assignment]
    page_size_query_description = _("Rows per page (at most 1000).")  # type: ignore[assignment]
    max_page_size = 1000
    ordering = "-id"
    model: type[Model] | None = None

    def get_ordering(self, request, queryset, view):
        ordering = getattr(view, "ordering", None) or self.ordering
        return (ordering,) if isinstance(ordering, str) else tuple(ordering)

    def paginate_queryset(self, queryset, request, view=None):
        self.model = queryset.model  # whose column the cursor's position is checked by
        return super().paginate_queryset(queryset, request, view)

    def decode_cursor(self, request):
        cursor = super().decode_cursor(request)
        if cursor is not None and cursor.position is not None:
            self.check_position(cursor.position)
        return cursor

    def check_position(self, position: object) -> None:
        """NotFound unless ``position`` is a value of the ordering's first column that
        the database can compare (a field's own validators hold the integer ranges)."""
        assert self.model is not None
        try:
            field = self.model._meta.get_field(self.ordering[0].lstrip("-"))
        except FieldDoesNotExist:
            return  # an annotation: compared as the text it is
        if not isinstance(field, Field):
            return  # a relation's reverse side: never an ordering here
        try:
            value = field.to_python(position)
            field.run_validators(value)
            if isinstance(value, str) and "\x00" in value:
                raise ValueError("PostgreSQL's text holds no NUL")
            if isinstance(value, datetime):
                if value.tzinfo is None:  # DRF writes aware times; a naive one is made up
                    raise ValueError("a naive time")
                value.astimezone(UTC)  # as the database gets it: year 1 at +14:00 is year 0
        except (ValidationError, ValueError, TypeError, OverflowError):
            raise NotFound(self.invalid_cursor_message) from None
