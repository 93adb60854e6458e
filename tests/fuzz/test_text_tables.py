"""Properties of parse() on text tables: generated and damaged CSV-ish bytes (any
delimiter, quoting, line end, encoding, BOM, blank lines, Cyrillic) parse into
consistent counts and rows or raise a ParseError; the three ways of taking rows (the
list, a sink, a block sink) agree."""

from __future__ import annotations

from hypothesis import event, example, given
from hypothesis import strategies as st

from pricefeed.parsing import Limits, ParseError, ParseOptions, parse

from .checks import assert_consistent, strings_of
from .strategies import TableSpec, mutated, text_tables

options = st.builds(
    ParseOptions,
    number_format=st.sampled_from(["auto", "comma", "dot"]),
    default_currency=st.sampled_from(["", "RUB"]),
)
limits = st.one_of(
    st.just(Limits()),
    st.builds(Limits, max_rows=st.integers(1, 30), max_errors=st.integers(1, 5)),
)
tables = text_tables().map(lambda spec: spec.data)


def parsed_or_none(data: bytes, opts: ParseOptions, lim: Limits, **kwargs):
    try:
        parsed = parse(data, opts, lim, **kwargs)
    except ParseError as exc:
        event(f"refused: {type(exc).__name__}")
        return None
    event("rows" if parsed.rows_ok else "no rows")
    return parsed


@given(st.one_of(tables, mutated(tables)), options, limits)
def test_a_text_table_parses_consistently_or_raises_a_parse_error(data, opts, lim):
    parsed = parsed_or_none(data, opts, lim)
    if parsed is not None:
        assert parsed.format == "csv"
        assert_consistent(parsed, lim)


class BlockSink:
    """Takes rows both ways parse() hands them over: lists and RowBlocks."""

    def __init__(self) -> None:
        self.rows: list = []

    def __call__(self, rows: list) -> None:
        self.rows.extend(rows)  # the list is reused once this returns

    def take_block(self, block) -> None:
        self.rows.extend(block.rows())


@given(st.one_of(tables, mutated(tables)), options, limits)
def test_a_sink_and_a_block_sink_get_the_rows_parse_returns(data, opts, lim):
    plain = parsed_or_none(data, opts, lim)
    listed: list = []
    by_list = parsed_or_none(data, opts, lim, sink=listed.extend)
    block_sink = BlockSink()
    by_blocks = parsed_or_none(data, opts, lim, sink=block_sink)
    if plain is None:
        assert by_list is None and by_blocks is None
        return
    assert by_list is not None and by_blocks is not None
    for streamed, rows in ((by_list, listed), (by_blocks, block_sink.rows)):
        assert rows == plain.rows
        assert streamed.rows == []
        assert (streamed.rows_ok, streamed.rows_total, streamed.errors) == (
            plain.rows_ok,
            plain.rows_total,
            plain.errors,
        )


@st.composite
def tables_with_a_nul(draw: st.DrawFn) -> bytes:
    """A generated table with one NUL character somewhere in its text."""
    spec: TableSpec = draw(text_tables())
    codec = "utf-16-le" if spec.encoding == "utf-16" else spec.encoding.replace("-sig", "")
    start = 2 if spec.encoding == "utf-16" else 3 if spec.encoding == "utf-8-sig" else 0
    step = 2 if spec.encoding == "utf-16" else 1
    at = draw(st.integers(start // step, len(spec.data) // step)) * step
    return spec.data[:at] + "\x00".encode(codec) + spec.data[at:]


@given(tables_with_a_nul(), options)
@example(b"\xef\xbb\xbfSKU;Price\nA\x00;1\n", ParseOptions())
@example("SKU;Price\nA\x00;1\n".encode("utf-16"), ParseOptions())
@example(
    ("Артикул;Цена\n" + "A;1,5\n" * 12_000 + "B\x00;2,5\n").encode(),
    ParseOptions(),
)
def test_a_nul_in_a_text_table_never_reaches_the_rows(data, opts):
    parsed = parsed_or_none(data, opts, Limits())
    if parsed is not None:
        assert not any("\x00" in text for text in strings_of(parsed))
