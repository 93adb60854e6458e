"""Hypothesis strategies for the property tests and fuzz/run.py.

Well-formed inputs are built from their parts, so a test knows what a reader must find
in them; ``mutated`` breaks any of them, so a test also reaches the readers' error
paths. Everything is generated in memory.
"""

from __future__ import annotations

import base64
import gzip
import io
import string
import tarfile
import urllib.parse
import zipfile
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from email.utils import format_datetime
from functools import cache

from hypothesis import strategies as st

from pricefeed.parsing.archives import ARCHIVE_FORMATS, UNSUPPORTED_ARCHIVES
from pricefeed.parsing.detect import detect_format
from pricefeed.parsing.headers import SYNONYMS

CYRILLIC = "абвгдеёжзийклмнопрстуфхцчшщъыьэюяАБВГДЕЁЖЗИЙКЛМНОПРСТУФХЦЧШЩЪЫЬЭЮЯ"
WORD_CHARS = string.ascii_letters + string.digits + CYRILLIC


def short(data: bytes, limit: int = 4000) -> str:
    """``data``'s repr, or its size when that would flood a failure report."""
    return repr(data) if len(data) <= limit else f"<{len(data):,} bytes>"


# --- mutations ---------------------------------------------------------------------------

# Bytes that mean something to one of the readers: line ends, NUL, MIME delimiters and
# encoded words, archive magic numbers, bytes that are not UTF-8.
_TOKENS = (
    b"\x00",
    b"\r",
    b"\n",
    b"\r\n",
    b"\r\n\r\n",
    b"--",
    b"=?utf-8?b?",
    b"?=",
    b'"',
    b";",
    b"\xff\xfe",
    b"\xef\xbb\xbf",
    b"\xd0",
    b"PK\x03\x04",
    b"PK\x01\x02",
    b"PK\x05\x06",
    b"\x1f\x8b",
    b"ustar",
)


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[bytes]) -> bytes:
    """``base``'s bytes after one to four edits: a byte changed, a token or random bytes
    inserted, a range deleted or repeated, the tail cut, or a length field's worth of
    bytes overwritten."""
    data = bytearray(draw(base))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(
            st.sampled_from(["set", "insert", "token", "delete", "repeat", "truncate", "overwrite"])
        )
        at = draw(st.integers(0, len(data)))
        if kind == "set" and at < len(data):
            data[at] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif kind == "token":
            data[at:at] = draw(st.sampled_from(_TOKENS))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 64))]
        elif kind == "repeat":
            chunk = data[at : at + draw(st.integers(1, 256))]
            data[at:at] = chunk * draw(st.integers(1, 3))
        elif kind == "truncate":
            del data[at:]
        elif kind == "overwrite":
            value = draw(st.sampled_from([0, 1, 0xFF, 0xFFFF, 0xFFFFFFFF, len(data)]))
            data[at : at + 4] = (value & 0xFFFFFFFF).to_bytes(4, "little")
    return bytes(data)


# --- MIME --------------------------------------------------------------------------------

EOLS = (b"\r\n", b"\n")
# RFC 2046 boundary characters (no space: a trailing one would need care).
_BOUNDARY_CHARS = string.ascii_letters + string.digits + "'()+_,./:=?"
_TEXT_CHARS = string.ascii_letters + string.digits + CYRILLIC + " .,!"  # never "--"
_ATTACHMENT_TYPES = (
    "application/octet-stream",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "text/csv",
    "application/zip",
)


@dataclass
class Attachment:
    filename: str
    payload: bytes
    content_type: str
    name_form: str  # "quoted", "rfc2231", "encoded-word" or "content-type"
    line_length: int  # base64 characters per line; 0: all on one line
    cte_spelling: str


@dataclass
class TextPart:
    text: str
    subtype: str


@dataclass
class Multipart:
    subtype: str
    boundary: str
    parts: list[Attachment | TextPart | Multipart]
    preamble: str = ""
    epilogue: str = ""
    padding: str = ""  # spaces or tabs after each delimiter line (RFC 2046 allows them)


@dataclass
class MailSpec:
    """A generated message and what readers must find in it."""

    raw: bytes
    subject: str
    from_address: str
    message_id: str
    sent_at: datetime
    # (key, filename, payload) of every attachment, in walk order.
    attachments: list[tuple[str, str, bytes]] = field(default_factory=list)

    def __repr__(self) -> str:
        return f"MailSpec(raw={short(self.raw)})"

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(repr(self))


def _encoded_words(text: str, width: int) -> str:
    chunks = [text[i : i + width] for i in range(0, len(text), width)] or [""]
    return " ".join(f"=?utf-8?B?{base64.b64encode(c.encode()).decode()}?=" for c in chunks)


_filenames = st.builds(
    lambda stem, ext: stem + ext,
    st.text(WORD_CHARS + " _", min_size=1, max_size=20).map(str.strip).filter(bool),
    st.sampled_from([".csv", ".xlsx", ".zip", ".txt", ""]),
)

attachments = st.builds(
    Attachment,
    filename=_filenames,
    payload=st.binary(max_size=1024),
    content_type=st.sampled_from(_ATTACHMENT_TYPES),
    name_form=st.sampled_from(["quoted", "rfc2231", "encoded-word", "content-type"]),
    line_length=st.sampled_from([76, 64, 4, 0]) | st.integers(1, 25).map(lambda n: 4 * n),
    cte_spelling=st.sampled_from(["base64", "Base64", "BASE64"]),
)
text_parts = st.builds(
    TextPart,
    text=st.text(_TEXT_CHARS, max_size=200),
    subtype=st.sampled_from(["plain", "html"]),
)


def _multiparts(children: st.SearchStrategy) -> st.SearchStrategy[Multipart]:
    return st.builds(
        Multipart,
        subtype=st.sampled_from(["mixed", "alternative", "related"]),
        boundary=st.text(_BOUNDARY_CHARS, min_size=1, max_size=50),
        parts=st.lists(children, min_size=1, max_size=4),
        preamble=st.text(_TEXT_CHARS, max_size=40),
        epilogue=st.text(_TEXT_CHARS, max_size=40),
        padding=st.sampled_from(["", " ", "\t ", "  "]),
    )


mime_trees = st.recursive(
    st.one_of(attachments, text_parts),
    _multiparts,
    max_leaves=6,
)


class _Renderer:
    def __init__(self, eol: bytes) -> None:
        self.eol = eol
        self.index = 0  # walk order: the message itself is part 0
        self.boundaries = 0
        self.found: list[tuple[str, str, bytes]] = []

    def lines(self, *lines: str) -> bytes:
        return b"".join(line.encode() + self.eol for line in lines)

    def entity(self, node: Attachment | TextPart | Multipart, top_headers: bytes) -> bytes:
        key = f"part{self.index}"
        self.index += 1
        if isinstance(node, TextPart):
            head = self.lines(
                f"Content-Type: text/{node.subtype}; charset=utf-8",
                "Content-Transfer-Encoding: 8bit",
            )
            body = node.text.encode()
            return top_headers + head + self.eol + body
        if isinstance(node, Attachment):
            self.found.append((key, node.filename, node.payload))
            return top_headers + self._attachment(node)
        self.boundaries += 1
        # The counter keeps boundaries of nested multiparts apart.
        boundary = f"{node.boundary}={self.boundaries}"
        eol = self.eol
        out = [
            top_headers,
            self.lines(f'Content-Type: multipart/{node.subtype}; boundary="{boundary}"'),
            eol,
        ]
        if node.preamble:
            out.append(node.preamble.encode() + eol)
        for part in node.parts:
            out.append(f"--{boundary}{node.padding}".encode() + eol)
            out.append(self.entity(part, b""))
            out.append(eol)  # the line break before a delimiter belongs to it
        out.append(f"--{boundary}--{node.padding}".encode() + eol)
        if node.epilogue:
            out.append(node.epilogue.encode() + eol)
        return b"".join(out)

    def _attachment(self, node: Attachment) -> bytes:
        name = node.filename
        if node.name_form == "quoted" and name.isascii():
            type_line = f"Content-Type: {node.content_type}"
            disposition = f'Content-Disposition: attachment; filename="{name}"'
        elif node.name_form in ("quoted", "rfc2231"):
            type_line = f"Content-Type: {node.content_type}"
            quoted = urllib.parse.quote(name.encode(), safe="")
            disposition = f"Content-Disposition: attachment; filename*=utf-8''{quoted}"
        elif node.name_form == "encoded-word":
            type_line = f"Content-Type: {node.content_type}"
            disposition = f'Content-Disposition: attachment; filename="{_encoded_words(name, 60)}"'
        else:
            type_line = f'Content-Type: {node.content_type}; name="{_encoded_words(name, 60)}"'
            disposition = ""
        encoded = base64.b64encode(node.payload).decode()
        width = node.line_length or max(len(encoded), 1)
        body_lines = [encoded[i : i + width] for i in range(0, len(encoded), width)]
        head = [type_line, f"Content-Transfer-Encoding: {node.cte_spelling}"]
        if disposition:
            head.append(disposition)
        return self.lines(*head) + self.eol + self.eol.join(line.encode() for line in body_lines)


@st.composite
def mails(draw: st.DrawFn) -> MailSpec:
    """A well-formed message: top headers (Cyrillic encoded words in From and Subject),
    then a tree of multiparts, text parts and base64 attachments (or one attachment as
    the whole message), with either line ending throughout."""
    eol = draw(st.sampled_from(EOLS))
    subject = draw(st.text(_TEXT_CHARS + "—«»-", max_size=120).map(str.strip))
    display = draw(st.text(WORD_CHARS + " ", max_size=30).map(str.strip))
    local = draw(st.text(string.ascii_letters + string.digits + "._", min_size=1, max_size=20))
    domain = draw(st.text(string.ascii_lowercase + string.digits, min_size=1, max_size=15))
    address = f"{local}@{domain}.ru"
    id_left = draw(st.text(string.ascii_letters + string.digits + ".$", min_size=1, max_size=40))
    message_id = f"{id_left}@{domain}"
    sent_at = draw(
        st.datetimes(
            min_value=datetime(1990, 1, 1),
            max_value=datetime(2090, 1, 1),
            timezones=st.sampled_from(
                [UTC, timezone(timedelta(hours=3)), timezone(-timedelta(hours=5, minutes=30))]
            ),
        )
    ).replace(microsecond=0)
    width = draw(st.integers(1, 40))
    top = b"".join(
        line.encode() + eol
        for line in (
            f"From: {_encoded_words(display, width) if display else ''} <{address}>",
            "To: buyer@pricefeed.example",
            f"Subject: {_encoded_words(subject, width)}" if subject else "Subject:",
            f"Message-ID: <{message_id}>",
            f"Date: {format_datetime(sent_at)}",
            "MIME-Version: 1.0",
        )
    )
    renderer = _Renderer(eol)
    raw = renderer.entity(draw(mime_trees), top)
    return MailSpec(
        raw=raw,
        subject=subject,
        from_address=address.lower(),
        message_id=f"<{message_id}>",
        sent_at=sent_at,
        attachments=renderer.found,
    )


# Header blocks as a hostile sender might write them: known fields with junk, very long
# or encoded values, continuation lines, stray bytes.
_HEADER_NAMES = ("From", "Subject", "Message-ID", "Date", "Content-Type", "To", "X-Junk")
_header_values = st.one_of(
    st.binary(max_size=200),
    st.text(max_size=200).map(lambda s: s.encode("utf-8", "surrogatepass")),
    st.builds(
        lambda word, n: word * n,
        st.sampled_from([b"a", b"<x@y> ", b"=?utf-8?b?0J8=?= ", b"\x00", b"\xd0\x9f", b"x" * 100]),
        st.integers(1, 1200),
    ),
)


# Content-Type and Content-Disposition values made of what the email parser is slow on
# (comments, nested or not, quoted strings, runs of short tokens and specials), with
# quoted pairs, folding and parameters between them.
_CONTENT_FIELD_PIECES = (
    b"(a)",
    b"((a)(b))",
    b'"a"',
    b'"(a)"',
    b'("a")',
    b'"a\\""',
    b"\\(",
    b"a",
    b" ",
    b";",
    b"=",
    b"@,",
    b"\r\n ",
    b'; x="v"',
)
content_field_values = st.lists(
    st.sampled_from(_CONTENT_FIELD_PIECES)
    | st.binary(max_size=3).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b"")),
    max_size=80,
).map(b"".join)


@st.composite
def header_blocks(draw: st.DrawFn) -> bytes:
    eol = draw(st.sampled_from([b"\r\n", b"\n", b"\r"]))
    lines = []
    for _ in range(draw(st.integers(0, 8))):
        name = draw(st.sampled_from(_HEADER_NAMES) | st.text(min_size=0, max_size=10))
        value = draw(_header_values)
        sep = draw(st.sampled_from([b": ", b":", b" : ", b":\t"]))
        line = name.encode("utf-8", "surrogatepass") + sep + value
        if draw(st.booleans()):
            line += eol + draw(st.sampled_from([b" ", b"\t"])) + draw(_header_values)
        lines.append(line)
    return eol.join(lines) + eol + eol + draw(st.binary(max_size=100))


# --- archives ----------------------------------------------------------------------------

_NAME_CHARS = string.ascii_letters + string.digits + "_-" + CYRILLIC
_name_parts = st.text(_NAME_CHARS, min_size=1, max_size=12)
safe_names = st.builds(
    lambda dirs, stem, ext: "/".join([*dirs, stem + ext]),
    st.lists(_name_parts, max_size=2),
    _name_parts,
    st.sampled_from([".csv", ".txt", ".bin", ""]),
)
# Names expand() must refuse (UnsafeEntryName).
unsafe_names = st.sampled_from(
    [
        "../evil.csv",
        "a/../../evil.csv",
        "/etc/evil.csv",
        "\\evil.csv",
        "C:evil.csv",
        "c:/x.csv",
        "a\x01b.csv",
        "..",
        "./",
    ]
)


def _not_an_archive(data: bytes) -> bool:
    return detect_format(data) not in ARCHIVE_FORMATS | UNSUPPORTED_ARCHIVES


# Price lists that parse: a member whose rows are read exercises parse() past detection.
_SAMPLE_TABLES = (
    "Артикул;Наименование;Цена\nA-1;Кабель;1 234,50\nA-2;Щит;99\n".encode("cp1251"),
    b'\xef\xbb\xbfSKU,Name,Price,Qty\nX1,Cable,"1,234.50",5\n',
    "Код\tЦена, руб.\n1\t10\n".encode("utf-16"),
)
leaf_files = st.deferred(
    lambda: st.one_of(
        st.binary(max_size=512),
        st.sampled_from(_SAMPLE_TABLES),
        workbooks,
    ).filter(_not_an_archive)
)


@dataclass
class Archive:
    """A generated archive, and the members expand() must give for it: (path, data)."""

    data: bytes
    members: list[tuple[str, bytes]]
    kind: str

    def __repr__(self) -> str:
        paths = [path for path, _ in self.members]
        return f"Archive(kind={self.kind!r}, members={paths!r}, data={short(self.data)})"

    def _repr_pretty_(self, printer, cycle) -> None:  # how Hypothesis prints an example
        printer.text(repr(self))


_ZIP_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA)


def make_zip(files: list[tuple[str, bytes]], method: int, directories: bool) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=method) as zf:
        seen_dirs = set()
        for name, data in files:
            if directories and "/" in name:
                folder = name.rsplit("/", 1)[0] + "/"
                if folder not in seen_dirs:
                    seen_dirs.add(folder)
                    zf.writestr(zipfile.ZipInfo(folder), b"")
            zf.writestr(name, data)
    return buf.getvalue()


def make_tar(files: list[tuple[str, bytes]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name, data in files:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def make_gzip(data: bytes, inner_name: str) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename=inner_name, mode="wb", fileobj=buf, mtime=0) as gz:
        gz.write(data)
    return buf.getvalue()


@st.composite
def archives(
    draw: st.DrawFn, depth: int = 1, kinds: tuple[str, ...] = ("zip", "tar", "gzip")
) -> Archive:
    """A zip, tar or gzip (of a file or of a tar) holding plain files and, up to three
    levels deep, other archives; names are safe and unique."""
    kind = draw(st.sampled_from(kinds))
    if kind == "gzip":
        # The header's FNAME: gzip(1) stores a base name, in Latin-1.
        inner_name = draw(
            st.text(string.ascii_letters + string.digits + "_", min_size=1, max_size=12)
        )
        if depth < 3 and draw(st.booleans()):
            inner = draw(archives(depth + 1, ("tar",)))
            inner_name += ".tar"
            paths = [(f"{inner_name}/{path}", data) for path, data in inner.members]
            return Archive(make_gzip(inner.data, inner_name), paths, kind)
        content = draw(leaf_files)
        return Archive(make_gzip(content, inner_name), [(inner_name, content)], kind)
    # An empty tar is 10 KiB of zeros without the "ustar" magic: not an archive by its
    # content, so a tar holds at least one file.
    names = draw(
        st.lists(safe_names, min_size=1 if kind == "tar" else 0, max_size=5, unique_by=str.casefold)
    )
    files: list[tuple[str, bytes]] = []
    members: list[tuple[str, bytes]] = []
    for name in names:
        if depth < 3 and draw(st.integers(0, 4)) == 0:
            inner = draw(archives(depth + 1))
            files.append((name, inner.data))
            members.extend((f"{name}/{path}", data) for path, data in inner.members)
        else:
            data = draw(leaf_files)
            files.append((name, data))
            members.append((name, data))
    if kind == "zip":
        data = make_zip(files, draw(st.sampled_from(_ZIP_METHODS)), draw(st.booleans()))
    else:
        data = make_tar(files)
    return Archive(data, members, kind)


@cache
def seed_workbooks() -> tuple[bytes, ...]:
    """A few real xlsx files to mutate: the workbook guard and calamine's path."""
    import openpyxl

    books = []
    for rows in (
        [["Артикул", "Наименование", "Цена"], ["A-1", "Кабель", 12.5], ["A-2", "Щит", 1000]],
        [["Прайс"], [], ["SKU", "Price", "Qty"], ["X", "1 234,50", 3]],
    ):
        wb = openpyxl.Workbook()
        for row in rows:
            wb.active.append(row)
        buf = io.BytesIO()
        wb.save(buf)
        books.append(buf.getvalue())
    return tuple(books)


workbooks: st.SearchStrategy[bytes] = st.sampled_from([0, 1]).map(lambda i: seed_workbooks()[i])


# --- text tables -------------------------------------------------------------------------

TEXT_ENCODINGS = ("utf-8", "utf-8-sig", "cp1251", "koi8-r", "utf-16")
DELIMITERS = (";", ",", "\t", "|")


def _header_synonyms(fieldname: str) -> st.SearchStrategy[str]:
    return st.sampled_from(SYNONYMS[fieldname]).flatmap(
        lambda syn: st.sampled_from([syn, syn.upper(), f"{syn}, руб.", f" {syn} "])
    )


# Text as a person types it into a cell: no control characters (damage comes from
# ``mutated``).
_typed = st.characters(exclude_categories=("Cc", "Cs"))
_price_texts = st.one_of(
    st.decimals(
        allow_nan=False, allow_infinity=False, places=2, min_value=-(10**15), max_value=10**15
    ).map(lambda d: f"{d:f}"),
    st.decimals(allow_nan=False, allow_infinity=False, places=2, min_value=0, max_value=10**7).map(
        lambda d: f"{d:,.2f}".replace(",", " ").replace(".", ",")
    ),
    st.sampled_from(
        ["по запросу", "1 234 руб", "$5", "€12,50", "1,234", "1.234", "-", "", "NaN", "1e5"]
    ),
    st.text(_typed, max_size=10),
)
_cells = {
    "sku": st.text(string.ascii_uppercase + string.digits + "-" + CYRILLIC, max_size=12),
    "name": st.text(WORD_CHARS + ' ";,|\t\n-', max_size=40),
    "price": _price_texts,
    "quantity": st.sampled_from(["", "5", "10 шт.", "в наличии", ">10", "1 000", "12,5"])
    | st.text(_typed, max_size=6),
    "currency": st.sampled_from(["", "RUB", "руб.", "$", "usd", "EUR", "тенге"])
    | st.text(_typed, max_size=6),
    "extra": st.text(_typed, max_size=10),
}


@dataclass
class TableSpec:
    data: bytes
    encoding: str
    delimiter: str

    def __repr__(self) -> str:
        return f"TableSpec(encoding={self.encoding!r}, data={short(self.data)})"

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(repr(self))


@st.composite
def text_tables(draw: st.DrawFn) -> TableSpec:
    """A CSV-ish price list: optional title lines, a header naming the columns by their
    synonyms (in any order, with extra columns), data rows of plausible and junk cells,
    blank lines; any delimiter, quoting, line end, encoding and BOM."""
    delimiter = draw(st.sampled_from(DELIMITERS))
    encoding = draw(st.sampled_from(TEXT_ENCODINGS))
    eol = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    # The required columns, and some of the others, in any order.
    fields = draw(
        st.permutations(
            [
                "sku",
                "price",
                *draw(st.sets(st.sampled_from(["name", "quantity", "currency", "extra"]))),
            ]
        )
    )
    quote_all = draw(st.booleans())

    def cell(text: str) -> str:
        needs = any(ch in text for ch in (delimiter, '"', "\n", "\r"))
        if needs or (quote_all and text):
            return '"' + text.replace('"', '""') + '"'
        return text

    header = [draw(_header_synonyms(f)) if f != "extra" else draw(_cells["extra"]) for f in fields]
    lines = [cell(t) for t in draw(st.lists(st.text(WORD_CHARS + " ", max_size=20), max_size=2))]
    lines.append(delimiter.join(map(cell, header)))
    for _ in range(draw(st.integers(0, 25))):
        if draw(st.integers(0, 9)) == 0:
            lines.append("")
            continue
        row = [draw(_cells[f]) for f in fields]
        if draw(st.integers(0, 9)) == 0:
            row = row[: draw(st.integers(0, len(row)))]
        lines.append(delimiter.join(map(cell, row)))
    text = eol.join(lines) + (eol if draw(st.booleans()) else "")
    return TableSpec(text.encode(encoding, "replace"), encoding, delimiter)


# --- numbers -----------------------------------------------------------------------------

# Decimals as prices are stored: at most 14 digits before the point, 0 to 4 after it.
prices = st.integers(0, 4).flatmap(
    lambda places: st.decimals(
        min_value=Decimal(-(10**14)) + 1,
        max_value=Decimal(10**14) - 1,
        places=places,
        allow_nan=False,
        allow_infinity=False,
    )
)

GROUP_SPACES = ("", " ", "\xa0", "\u202f", "\u2009")


def group(digits: str, sep: str) -> str:
    """ "1234567" grouped by three from the right with ``sep``."""
    head = len(digits) % 3 or 3
    return sep.join([digits[:head]] + [digits[i : i + 3] for i in range(head, len(digits), 3)])


def formatted(value: Decimal, *, decimal: str, grouping: str, minus: str = "-") -> str:
    """``value`` written with ``decimal`` as the decimal separator and ``grouping``
    between thousands, every digit of its exponent kept ("12.50" stays "12,50")."""
    text = f"{value:f}"
    sign = minus if text.startswith("-") else ""
    whole, _, frac = text.lstrip("-").partition(".")
    out = sign + group(whole, grouping)
    return out + decimal + frac if frac else out
