"""Properties of the stored-text bound (core.storedtext, issue #30): whatever a file or
a server puts in a value, a stored reason holds at most CUT characters of it, nested
reasons included, and so does a row error quoting a cell of any size."""

from __future__ import annotations

import json

from hypothesis import example, given
from hypothesis import strategies as st

from core.storedtext import CUT, Text, as_json
from pricefeed.parsing import Limits, ParseError, ParseOptions, parse
from pricefeed.parsing import messages as m

huge_texts = st.builds(
    lambda piece, n: piece * n,
    st.text(min_size=1, max_size=20),
    st.integers(1, 20_000),
)


def _values(stored: dict) -> list:
    """Every value of a stored text, those of nested texts included."""
    found = []
    for value in stored.get("params", {}).values():
        found.extend(_values(value) if isinstance(value, dict) else [value])
    return found


@given(
    st.one_of(huge_texts, st.text(), st.binary().map(repr)),
    st.sampled_from([m.PRICE_NOT_A_NUMBER, "%(value)s"]),
)
def test_a_stored_text_holds_at_most_cut_characters_of_any_value(value, template):
    stored = Text("refused: %(reason)s", reason=Text(template, value=value)).as_json()

    (kept,) = _values(stored)
    assert len(kept) <= CUT
    assert "\x00" not in kept
    kept.encode("utf-8")  # storable: no lone surrogate


@given(huge_texts.filter(lambda s: not any(c in s for c in ';"\r\n')))
@example("по запросу " * 12_000)
def test_a_row_error_quoting_a_cell_holds_at_most_cut_characters_of_it(cell):
    data = f"sku;price\r\nA-1;{cell[:100_000]}\r\n".encode()
    try:
        parsed = parse(data, ParseOptions(), Limits())
    except ParseError:
        return
    for _row, reason in parsed.errors:
        stored = as_json(reason)
        assert all(len(str(value)) <= CUT for value in _values(stored))
        # JSON writes a character as at most 6 ("\\u001f"): bounded whatever the cell.
        assert len(json.dumps(stored, ensure_ascii=False)) <= len(stored["text"]) + 6 * CUT + 100
