"""One assertion for "two ways of reading a file gave the same result"."""

from __future__ import annotations

from pricefeed.parsing import ParsedFile


def assert_read_alike(got: ParsedFile, expected: ParsedFile, *, rows: list | None = None) -> None:
    """The same rows (``rows``, when a sink took them instead of ``got``), errors,
    counts and header columns."""
    assert (got.rows if rows is None else rows) == expected.rows
    assert got.errors == expected.errors
    assert (got.rows_total, got.rows_ok, got.skipped_rows, got.columns) == (
        expected.rows_total,
        expected.rows_ok,
        expected.skipped_rows,
        expected.columns,
    )
