"""A UTF-8 file with a few undecodable lines stays UTF-8 (those lines are row errors); a
file whose non-ASCII lines are mostly not UTF-8 is read in a Cyrillic code page."""

from __future__ import annotations

import pytest

from pricefeed.parsing import NoHeaderRow, parse
from pricefeed.parsing.text import choose_encoding, first_invalid_utf8, mostly_utf8

HEAD = "Артикул;Наименование;Цена\n"


def rows(prefix: str, count: int) -> str:
    return "".join(f"{prefix}-{i};Кабель медный {i};{i},50\n" for i in range(1, count + 1))


class Blocks:
    def __init__(self) -> None:
        self.names: list[str] = []

    def __call__(self, rows: list[tuple]) -> None:
        self.names.extend(r[2] for r in rows)

    def take_block(self, block) -> None:
        self.names.extend(block.names)


@pytest.mark.parametrize("sink", [None, "blocks"])
def test_one_cp1251_line_past_the_head_of_a_utf8_file_is_a_row_error(sink):
    data = (HEAD + rows("A", 3000)).encode()
    data += "B-1;Кабель;1,00\n".encode("cp1251") + rows("C", 3000).encode()
    assert first_invalid_utf8(data) > 65536
    blocks = Blocks() if sink else None
    result = parse(data, sink=blocks)
    assert result.encoding == "utf-8"
    assert (result.rows_ok, result.errors) == (6000, [(3002, "line 3,002 is not valid UTF-8")])
    names = blocks.names if blocks else [r[2] for r in result.rows]
    assert names[-1] == "Кабель медный 3000"  # not mojibake


def test_the_same_in_a_table_with_quoted_fields():
    data = ('"Артикул";"Наименование";"Цена"\n' + rows("A", 3000)).encode()
    data += '"B-1";"Кабель";"1,00"\n'.encode("cp1251") + rows("C", 10).encode()
    result = parse(data)
    assert result.encoding == "utf-8"
    assert result.errors == [(3002, "line 3,002 is not valid UTF-8")]
    assert result.rows[-1][1:3] == ("C-10", "Кабель медный 10")


def test_a_file_with_a_bom_stays_utf8_whatever_its_lines():
    data = b"\xef\xbb\xbf" + HEAD.encode() + "B-1;Кабель;1,00\n".encode("cp1251")
    data += rows("C", 5).encode()
    result = parse(data)
    assert result.encoding == "utf-8-sig"
    assert result.errors == [(2, "line 2 is not valid UTF-8")]


def test_a_real_cp1251_file_is_read_as_cp1251():
    result = parse((HEAD + rows("A", 5000)).encode("cp1251"))
    assert (result.encoding, result.rows_ok) == ("cp1251", 5000)
    assert result.rows[0][2] == "Кабель медный 1"


def test_an_english_head_and_a_cp1251_body_is_read_as_cp1251():
    head = "Article;Name;Price\n" + "".join(f"E-{i};Cable {i};{i}.5\n" for i in range(6000))
    data = head.encode() + "".join(f"R-{i};Кабель {i};{i}.5\n" for i in range(500)).encode("cp1251")
    assert first_invalid_utf8(data) > 65536
    result = parse(data)
    assert result.encoding == "cp1251"
    assert result.rows[-1][2] == "Кабель 499"


def test_ninety_nine_percent_of_non_ascii_lines_is_enough():
    good = "Кабель\n".encode() * 99
    bad = "Кабель\n".encode("cp1251")
    assert mostly_utf8(good + bad)
    assert not mostly_utf8(good[: 98 * len("Кабель\n".encode())] + bad * 2)
    assert choose_encoding(b"sku;price\n" * 7000 + good + bad) == ("utf-8", False)


def test_an_undecodable_line_where_the_header_should_be_is_named_in_the_refusal():
    data = "Артикул;Наименование;Цена\n".encode("cp1251") + rows("A", 200).encode()
    with pytest.raises(NoHeaderRow, match=r"\(unread: line 1 is not valid UTF-8\)"):
        parse(data)
