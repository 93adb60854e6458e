"""PlainLines gives exactly the rows (and errors) csv.reader gives for quote-free text."""

from __future__ import annotations

import csv
import io
import random
from decimal import Decimal

import pytest

from pricefeed.parsing import CorruptFile, ParseOptions, parse, rows
from pricefeed.parsing.plainlines import PlainLines

from .alike import assert_read_alike

# Everything the csv module might treat specially, except the quote it is not given.
ALPHABET = ["a", "Ж", "1", " ", ";", ",", "\t", "|", "\r", "\n", "\r\n", "\x00", "\x0b", "'"]


def _csv_rows(data: bytes, encoding: str, delimiter: str) -> list[list[str]]:
    stream = io.TextIOWrapper(io.BytesIO(data), encoding=encoding, errors="replace", newline="")
    return list(csv.reader(stream, delimiter=delimiter))


@pytest.mark.parametrize("seed", range(40))
def test_rows_match_the_csv_module_on_random_quote_free_text(seed, monkeypatch):
    rnd = random.Random(seed)
    text = "".join(rnd.choice(ALPHABET) for _ in range(rnd.randint(0, 400)))
    encoding = rnd.choice(["utf-8", "cp1251", "koi8-r", "utf-8-sig"])
    data = text.encode(encoding)
    # Small steps put chunk boundaries everywhere, "\r\n" pairs included.
    monkeypatch.setattr(PlainLines, "STEP", rnd.choice([1, 2, 7, 64, 1 << 18]))
    for delimiter in (";", ",", "\t", "|"):
        plain = PlainLines(data, encoding, "replace", delimiter)
        assert list(plain) == _csv_rows(data, encoding, delimiter), (text, encoding)


def test_a_utf8_bom_is_dropped_at_the_start_only():
    data = "\ufeffA;B\n\ufeffC;D\n".encode()
    assert list(PlainLines(data, "utf-8-sig", "strict", ";")) == [["A", "B"], ["\ufeffC", "D"]]


def test_text_with_a_quote_or_in_utf16_is_left_to_the_csv_module():
    assert PlainLines.fits(b"A;B\n", "cp1251")
    assert not PlainLines.fits(b'A;"B;C"\n', "cp1251")
    assert not PlainLines.fits("A;B\n".encode("utf-16"), "utf-16")


def test_an_oversized_field_is_refused_at_its_line_as_by_the_csv_module(monkeypatch):
    monkeypatch.setattr(PlainLines, "STEP", 16)
    limit = csv.field_size_limit()
    data = ("Артикул;Цена\nA-1;1\nA-2;" + "9" * (limit + 1) + "\nA-3;3\n").encode()
    with pytest.raises(CorruptFile) as plain:
        parse(data)
    quoted = data.replace(b"A-1;1", b'"A-1";1')  # the same table through the csv module
    with pytest.raises(CorruptFile) as by_csv:
        parse(quoted)
    assert str(plain.value) == str(by_csv.value)
    assert str(plain.value).startswith("malformed text table at line 3: field larger than")


def test_parse_reads_quote_free_and_quoted_files_alike(monkeypatch):
    lines = [f"A-{i};Товар {i};{i},50;{i % 3}\r\n" for i in range(300)]
    body = "Прайс;;;\r\n\r\nАртикул;Наименование;Цена;Остаток\r\n" + "".join(lines)
    plain = body.encode("cp1251")
    quoted = body.replace("Товар 7;", '"Товар 7";').encode("cp1251")
    used = []
    real = PlainLines.head

    def spy(self, n):
        used.append(self)
        return real(self, n)

    monkeypatch.setattr(PlainLines, "head", spy)
    monkeypatch.setattr(rows, "TEXT_CHUNK", 64)
    a, b = parse(plain), parse(quoted)
    assert len(used) == 1  # the quoted file went through the csv module
    assert a.rows == b.rows and a.errors == b.errors and a.rows_ok == 300
    assert (a.encoding, a.delimiter) == (b.encoding, b.delimiter) == ("cp1251", ";")


def _price_list(rnd: random.Random) -> str:
    """A quote-free price list with the odd lines real ones have."""
    width = rnd.choice([2, 3, 5])
    head = ["Артикул", "Цена", "Наименование", "Остаток", "Валюта"][:width]
    lines = ["Прайс-лист" + ";" * rnd.choice([0, width - 1]), ";".join(head)]
    for i in range(rnd.randint(0, 120)):
        price = rnd.choice(["12,50", "1 234,5", "7", "-3", "1,234", "99999999999999,9"])
        row = [f"A-{i}", price, f" Товар {i} ", rnd.choice(["", "5", "2,5", "много"]), "руб."]
        row = row[:width]
        odd = rnd.random()
        if odd < 0.03:
            row = []  # an empty line
        elif odd < 0.06:
            row.append("лишнее")  # one field too many
        elif odd < 0.09:
            row = row[:1]  # a section title, or a row cut short
        elif odd < 0.12:
            row[1] = rnd.choice(["по запросу", "", "1e400", "100000000000000"])
        lines.append(";".join(row))
    end = rnd.choice(["\n", "\r\n"])
    return end.join(lines) + rnd.choice([end, ""])


@pytest.mark.parametrize("seed", range(60))
def test_columns_straight_from_the_text_give_the_rows_of_the_row_path(seed, monkeypatch):
    rnd = random.Random(seed)
    data = _price_list(rnd).encode("cp1251")
    options = ParseOptions(number_format=rnd.choice(["auto", "comma"]))
    monkeypatch.setattr(PlainLines, "STEP", rnd.choice([1, 40, 300, 1 << 18]))
    by_columns = parse(data, options)
    monkeypatch.setattr(PlainLines, "columns_of", lambda self, text, wanted: None)
    by_rows = parse(data, options)
    assert_read_alike(by_columns, by_rows)


def test_the_straight_path_is_taken_for_plain_lines(monkeypatch):
    lines = "".join(f"A-{i};{i},50;Товар {i};{i % 4};руб.\r\n" for i in range(600))
    data = ("Артикул;Цена;Наименование;Остаток;Валюта\r\n" + lines).encode("cp1251")
    monkeypatch.setattr(PlainLines, "STEP", 512)
    taken = []
    real = PlainLines.columns_of
    monkeypatch.setattr(
        PlainLines, "columns_of", lambda *a: taken.append(real(*a) is not None) or real(*a)
    )
    parsed = parse(data)
    assert parsed.rows_ok == 600 and not parsed.errors
    assert sum(taken) >= 0.9 * len(taken) and len(taken) > 20
    assert parsed.rows[-1] == (601, "A-599", "Товар 599", Decimal("599.50"), "RUB", Decimal(3))


def test_columns_of_refuses_a_text_whose_lines_differ_in_width():
    plain = PlainLines(b"", "utf-8", "strict", ";")
    assert plain.columns_of("a;1;x\nb;2;y\n", [0, 1, 2]) == [["a", "b"], ["1", "2"], ["x", "y"]]
    assert plain.columns_of("a;1;x\nb;2\n", [0, 1]) is None
    # The same number of delimiters in all, spread unevenly over the lines:
    assert plain.columns_of("a;1;x\nb;2\nc;3;z;w\n", [0, 1]) is None
    assert plain.columns_of("a;1\n\nb;2\n", [0, 1]) is None  # an empty line
    assert plain.columns_of("a;1\n", [0, 2]) is None  # a column past the line
