"""PlainLines gives exactly the rows (and errors) csv.reader gives for quote-free text."""

from __future__ import annotations

import csv
import io
import random

import pytest

from pricefeed.parsing import CorruptFile, parse, reader
from pricefeed.parsing.reader import PlainLines

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
    real = PlainLines.__iter__

    def spy(self):
        used.append(self)
        return real(self)

    monkeypatch.setattr(PlainLines, "__iter__", spy)
    monkeypatch.setattr(reader, "TEXT_CHUNK", 64)
    a, b = parse(plain), parse(quoted)
    assert len(used) == 1  # the quoted file went through the csv module
    assert a.rows == b.rows and a.errors == b.errors and a.rows_ok == 300
    assert (a.encoding, a.delimiter) == (b.encoding, b.delimiter) == ("cp1251", ";")
