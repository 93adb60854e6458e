"""Cursor pagination, never OFFSET: each page continues from the last row of the one
before through an index, so page 10,000 costs what page 1 does."""

from __future__ import annotations

from rest_framework import pagination


class CursorPagination(pagination.CursorPagination):
    """Pages of ``page_size`` rows (default 100, at most 1000), in the view's
    ``ordering``: a unique column (a primary key, a config's current SKU) wherever
    there is one, so that the cursor never needs DRF's offset for ties."""

    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000
    ordering = "-id"

    def get_ordering(self, request, queryset, view):
        ordering = getattr(view, "ordering", None) or self.ordering
        return (ordering,) if isinstance(ordering, str) else tuple(ordering)
