"""Cursor pagination, never OFFSET: each page continues from the last row of the one
before through an index, so page 10,000 costs what page 1 does."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from rest_framework import pagination


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

    def get_ordering(self, request, queryset, view):
        ordering = getattr(view, "ordering", None) or self.ordering
        return (ordering,) if isinstance(ordering, str) else tuple(ordering)
