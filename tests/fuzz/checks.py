"""What every ParsedFile must satisfy, whatever file it came from."""

from __future__ import annotations

from decimal import Decimal

from pricefeed.parsing import Limits, ParsedFile
from pricefeed.parsing.numbers import LIMIT


def assert_consistent(parsed: ParsedFile, limits: Limits) -> None:
    """Counts agree with rows and errors, rows are in file order below the header, and
    every value is of its type and in the stored range."""
    assert parsed.rows_ok == len(parsed.rows)
    assert 0 <= parsed.rows_ok <= parsed.rows_total <= limits.max_rows
    assert parsed.rows_failed == parsed.rows_total - parsed.rows_ok
    # One error per failed row, as many as are kept.
    assert len(parsed.errors) == min(parsed.rows_failed, limits.max_errors)
    assert parsed.skipped_rows >= 0
    numbers = [row[0] for row in parsed.rows]
    error_numbers = [number for number, _ in parsed.errors]
    assert numbers == sorted(set(numbers))
    assert error_numbers == sorted(set(error_numbers))
    assert not set(numbers) & set(error_numbers)
    assert all(n > parsed.header_row for n in numbers + error_numbers)
    for _, sku, name, price, currency, quantity in parsed.rows:
        assert isinstance(sku, str) and sku and sku == sku.strip()
        assert isinstance(name, str) and isinstance(currency, str)
        assert isinstance(price, Decimal) and price.is_finite() and -LIMIT < price < LIMIT
        assert quantity is None or (quantity.is_finite() and -LIMIT < quantity < LIMIT)
    for _, reason in parsed.errors:
        assert isinstance(reason, str) and reason


def strings_of(parsed: ParsedFile) -> list[str]:
    """Every text the parse hands on: cells, reasons, header texts."""
    out = [text for row in parsed.rows for text in (row[1], row[2], row[4])]
    out += [reason for _, reason in parsed.errors]
    out += list(parsed.columns.values())
    return out
