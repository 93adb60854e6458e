"""Checks an xlsx/xlsm before python-calamine opens it.

Calamine is fast but trusts its input: it inflates parts without a cap, and it sizes
memory from the file's own claims. Measured with python-calamine 0.9.1:

* a 600-byte sheet with cells at A1 and XFD20000 makes it allocate 10 GB for one dense
  cell range (32 bytes per cell between the extremes) and abort the whole process;
* ``<sst uniqueCount="2000000000">`` in sharedStrings.xml makes it reserve 48 GB up
  front and abort.

So every part is stream-inflated here under the Limits (never trusting header sizes),
and refused when its prolog declares a DTD (``<!DOCTYPE`` / ``<!ENTITY``: billion
laughs, XXE; the first 64 KiB are searched, and a longer prolog is refused), when a
shared-strings table claims more strings than it can hold, or when a sheet's cells can
span more than ``Limits.max_cells`` (lowered for a small file: Limits.for_file).
(Calamine's XML reader does not expand entities anyway; the refusal makes the attack
visible instead of a confusing parse error.)

The span check is cheap on ordinary files and exact on the rest. While inflating, two
literal-prefix regex searches look for any cell tag that is not in the form every common
writer emits (``<c r="B12" s="1" t="s">``: r first, one letter, at most six digits,
nothing but short attributes after it) or that has a namespace prefix. A sheet without
one spans at most 999,999 x 26 cells. A sheet with one
(more than 26 columns, a million rows, r-less, repeated-r or namespace-prefixed tags,
UTF-16) is inflated again and every ``r="..."`` measured, counting r-less tags as
calamine places them: one after another. Measured with python-calamine 0.9.1: a cell
tag that repeats r (``<c r="A2" r="XFD20000">``) is placed by the last one.

Calamine copies a shared string into every cell that refers to it (textbudget), so the
cells' text is added up too and refused past ``Limits.max_text_bytes``: the sheets'
own bytes (inline strings, at most all of them) plus, for each shared-string cell, the
length of the string it refers to. A cheap bound comes first: cell tags (counted while
inflating) times the longest string, taken as the whole table, then as its longest
``<si>`` element; only a workbook past both is inflated again and its shared-string
cells charged one by one.

check_workbook returns the cells the sheets span, the figure a message is charged
before the reader opens the workbook (PRICEFEED_MESSAGE_PARSE_CELLS): a sheet measured
exactly as above, or one in the common form measured while it inflates, its rows up to
a tenth more than it has (_SIMPLE_REF).
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import pairwise

from core.storedtext import Text

from . import messages
from .archives import Budget, member_chunks, mib, open_zip
from .errors import SheetTooLarge, XmlRefused
from .textbudget import check_text_bytes
from .types import Limits, letter_to_index

_SCAN = 1 << 18  # scan in 256 KiB pieces: big enough to amortise calls, small for cache
_TAIL = 256  # bytes carried between pieces so that no tag is cut in two
_LOOKAHEAD = 64  # a cell tag this close to a piece's end is judged with the next piece
_PROLOG = 1 << 16  # a prolog (XML declaration, comments) longer than this is refused

_DTD = re.compile(rb"<![Dd][Oo][Cc][Tt][Yy][Pp][Ee]|<![Ee][Nn][Tt][Ii][Tt][Yy]")
# The whole cell tag as every common writer emits it (Excel, LibreOffice, openpyxl, 1C):
# r first with one column letter and at most six row digits, then only short attributes
# such as s="3" t="s", single spaces, double quotes. A sheet whose cell tags all look
# like that spans at most 999,999 x 26 cells, whatever its row tags say: calamine places
# a cell by its own r (the last one, if a tag repeats it: hence the whole tag is matched)
# and uses a row's r only for r-less cells, which are not in that form. Anything else
# (wider sheets, longer references, r-less, repeated-r or prefixed tags) is measured
# exactly. Possessive quantifiers keep the lookahead cheap.
_OTHER_CELL = re.compile(rb'<c(?! r="[A-Z][0-9]{1,6}"(?: [stcvmph]{1,2}="[^"<>]*+")*+ ?/?>)[\s/>]')
_PREFIXED = re.compile(rb":(?:c|row)[\s/>]")
_SIMPLE_SPAN = 999_999 * 26
# A sheet whose cells are all in that form is measured while it inflates (its span is
# what a message is charged: pricefeed.imports.lifecycle.charge_cells). Its rows are
# counted up to a bound: the highest row number seen, rounded up to two significant
# digits (100,003 -> 109,999; at most a tenth more than the sheet has). Each piece's
# last cell reference raises the bound, then the one search that looks for an unusual
# tag (_past: _OTHER_CELL narrowed to the columns and rows measured so far) finds a
# reference past them too; only a piece that has one (rows out of order, a wider row)
# is read reference by reference. Rounding keeps the patterns few (at most 540 bounds,
# compiled once per process): a pattern per exact row number cost 0.4 ms to compile,
# once per 256 KiB piece.
_SIMPLE_REF = re.compile(rb'<c r="([A-Z])([0-9]{1,6})"')
_REF_START = b'<c r="'
_SST_TAG = re.compile(rb"<(?:[\w.-]+:)?sst\b([^>]*)>")
_UNIQUE_COUNT = re.compile(rb"""\buniqueCount\s*=\s*["']\s*(\d+)""")

# Exact pass (wide, long or unusual sheets only), this many bytes of XML at a time.
EXACT_WINDOW = 1 << 22
_R_ATTR = re.compile(rb"""\sr\s*=\s*["']([A-Za-z]*)([0-9]+)["']""")
_C_TAG = re.compile(rb"<(?:[\w.-]+:)?c[\s/>]")
_C_TAG_WITH_R = re.compile(rb"""<(?:[\w.-]+:)?c\s(?:[^>]*?[\s"'])?r\s*=""")
_ROW_TAG = re.compile(rb"<(?:[\w.-]+:)?row[\s/>]")
_ROW_TAG_WITH_R = re.compile(rb"""<(?:[\w.-]+:)?row\s(?:[^>]*?[\s"'])?r\s*=""")

# Text pass (a workbook whose cells may hold more text than allowed). An <si> element
# spans at least its string's UTF-8 bytes (entities only shrink when decoded); a
# shared-string cell tag (t="s") takes the first <v> number after it as its index. A
# tag's attributes are scanned up to the next "<" at most (no attribute value holds one;
# a ">" may be in one), so that a run of unclosed tags costs linear time, not quadratic.
_SI_TAG = re.compile(rb"<(?:[\w.-]+:)?si[\s/>]")
_SHARED_OR_VALUE = re.compile(
    rb"""<(?:[\w.-]+:)?c\s[^<]*?\bt\s*=\s*["']s["']"""
    rb"""|<(?:[\w.-]+:)?v(?:\s[^<]*?)?>\s*([0-9]{1,10})"""
)


def check_workbook(data: bytes, limits: Limits) -> int:
    """Refuse an xlsx/xlsm that is a zip bomb, an XML bomb or XXE, or a memory bomb for
    calamine; see the module docstring. Raises ArchiveRefused, XmlRefused, SheetTooLarge
    or CorruptFile; for a workbook that is safe to open, returns the cells its sheets
    span in all (each sheet from A1 to its last row and column, as measured for the
    span check: calamine reads the sheets it is asked for, the reader may try several)."""
    limits = limits.for_file(len(data))
    budget = Budget(limits)
    zf, infos = open_zip(data, messages.WORKBOOK, budget)
    cells = 0
    with zf:
        tables: list[_PartScan] = []
        sheets: list[_PartScan] = []
        for info in infos:
            if info.is_dir():
                continue
            label = Text(messages.WORKBOOK_PART, name=info.filename)
            scan = _PartScan(info.filename, track=limits.max_cells >= _SIMPLE_SPAN)
            for chunk in _member_chunks(zf, info, label, budget, limits):
                scan.feed(chunk)
            scan.finish()
            if scan.sheet and (scan.unusual or limits.max_cells < _SIMPLE_SPAN):
                # The same bytes again, already within the caps: not charged twice.
                cells += _exact_span(_again(zf, info, limits), info.filename, limits)
            elif scan.sheet:
                cells += scan.span()
            scan.info = info
            if scan.strings:
                tables.append(scan)
            elif scan.sheet:
                sheets.append(scan)
        _check_text(zf, tables, sheets, limits)
    return cells


def _again(zf, info, limits) -> bytes:
    """A part inflated a second time: already within the caps, so not charged twice."""
    label = Text(messages.WORKBOOK_PART, name=info.filename)
    return _utf8(b"".join(_member_chunks(zf, info, label, Budget(limits), limits)))


def _utf8(data: bytes) -> bytes:
    return data.decode(_utf16_codec(data), "replace").encode("utf-8") if _is_utf16(data) else data


def _check_text(zf, tables: list[_PartScan], sheets: list[_PartScan], limits: Limits) -> None:
    """Refuse a workbook whose cells' text exceeds ``max_text_bytes`` (module docstring):
    each bound is tried before the costlier one under it."""
    budget = limits.max_text_bytes
    inline = sum(sheet.size for sheet in sheets)
    tags = sum(sheet.cell_tags for sheet in sheets)
    if inline + tags * max((t.size for t in tables), default=0) <= budget:
        return
    lengths = _string_lengths([_again(zf, t.info, limits) for t in tables])
    if inline + tags * max(lengths, default=0) <= budget:
        return
    total = inline
    for sheet in sheets:
        total += _shared_bytes(_again(zf, sheet.info, limits), lengths)
        check_text_bytes(total, limits)


def _string_lengths(tables: list[bytes]) -> list[int]:
    """The byte length of each shared string (its <si> element), by index: the longest
    over the tables when there are several (a reader takes one of them)."""
    lengths: list[int] = []
    for data in tables:
        starts = [m.start() for m in _SI_TAG.finditer(data)]
        for i, (start, end) in enumerate(pairwise([*starts, len(data)])):
            if i < len(lengths):
                lengths[i] = max(lengths[i], end - start)
            else:
                lengths.append(end - start)
    return lengths


def _shared_bytes(sheet: bytes, lengths: list[int]) -> int:
    """The bytes of shared strings a sheet's cells copy: each t="s" cell charged the
    length of the string its value names."""
    total = 0
    waiting = False
    count = len(lengths)
    for m in _SHARED_OR_VALUE.finditer(sheet):
        index = m.group(1)
        if index is None:
            waiting = True
        elif waiting:
            waiting = False
            if int(index) < count:
                total += lengths[int(index)]
    return total


def _member_chunks(zf, info, label, budget, limits):
    # An xlsx part is not a price-list file: a 100k-row sheet is ~45 MB of XML, so parts
    # are capped by the attachment's total, not by max_file_bytes.
    return member_chunks(zf, info, label, budget, cap=limits.max_total_inflated, size=_SCAN)


class _PartScan:
    """One part, piece by piece: its prolog, and whether its cells are all simple."""

    def __init__(self, name: str, *, track: bool = False) -> None:
        self.name = name
        # Whether to measure the span of simple cells while inflating (span()): a
        # sheet that is not measured exactly afterwards.
        self.track = track
        self.max_row = 0  # the highest row number and column (0: A) of a simple cell
        self.max_col = 0
        self.head = b""
        self.size = 0
        self.tail = b""
        self.sheet = False
        self.unusual = False
        self.strings = False  # the part is a shared-string table
        self.cell_tags = 0  # "<c" and ":c" seen: at least the cells the part holds
        self.last = b""
        self.info = None

    def feed(self, piece: bytes) -> None:
        if not piece:
            return
        self.size += len(piece)
        # The last byte of the previous piece: a two-byte tag cut in two is counted once.
        joined = self.last + piece
        self.cell_tags += joined.count(b"<c") + joined.count(b":c")
        self.last = piece[-1:]
        if len(self.head) < _PROLOG:
            self.head += piece[: _PROLOG - len(self.head)]
        buf = self.tail + piece
        if not self.sheet and b"sheetData" in buf:
            self.sheet = True
        if not self.unusual:
            self._judge(buf, len(buf) - _LOOKAHEAD)
        self.tail = buf[-_TAIL:]

    def _judge(self, buf: bytes, before: int) -> None:
        """Sets ``unusual`` when ``buf`` has an unusual tag starting before ``before``
        (_unusual_tag). A tracked part is judged by the same search that measures it: a
        cell tag in the common form past the columns and rows measured so far fails
        that search's pattern too (_past), and only such a tag makes the piece be read
        reference by reference; each piece's last reference raises the bound first (in
        an ascending sheet, the piece's highest), so that an ordinary sheet costs one
        search a piece, as an untracked one does."""
        if not self.track:
            if _unusual_tag(buf, before):
                self.unusual = True
            return
        prefixed = _PREFIXED.search(buf)
        if prefixed and prefixed.start() < before:
            self.unusual = True
            return
        end = buf.rfind(_REF_START)
        last = _SIMPLE_REF.match(buf, end) if end >= 0 else None
        if last is None and end > 0:  # cut off by the end of the piece: the one before
            end = buf.rfind(_REF_START, 0, end)
            last = _SIMPLE_REF.match(buf, end) if end >= 0 else None
        if last is not None:
            self.max_row = max(self.max_row, _bound(int(last.group(2))))
            self.max_col = max(self.max_col, last.group(1)[0] - 65)
        found = _past(self.max_col, self.max_row).search(buf)
        if found is None or found.start() >= before:
            return  # a tag at the very end is judged whole with the next piece
        if not _OTHER_CELL.match(buf, found.start()):
            # A common cell tag past the bound: every reference of the piece is read,
            # and what follows the tag is judged as an untracked part is.
            for letter, digits in _SIMPLE_REF.findall(buf):
                self.max_row = max(self.max_row, int(digits))
                self.max_col = max(self.max_col, letter[0] - 65)
            self.max_row = _bound(self.max_row)
            found = _OTHER_CELL.search(buf, found.end())
            if found is None or found.start() >= before:
                return
        self.unusual = True

    def span(self) -> int:
        """The cells of a simple sheet measured while inflating (its rows up to the
        bound), counted as _exact_span counts them."""
        return (self.max_row + 1) * (self.max_col + 2)

    def finish(self) -> None:
        if not self.unusual:
            self._judge(self.tail, len(self.tail))
        self._check_prolog()
        self._check_shared_strings()

    def _check_prolog(self) -> None:
        head = self.head
        if _is_utf16(head):
            self.sheet = self.unusual = True  # measured exactly after decoding
            text = head.decode(_utf16_codec(head), "replace")
            dtd = _DTD.search(text.encode("ascii", "replace"))
        else:
            text = head.decode("latin-1")  # an ASCII view of any ASCII-compatible encoding
            dtd = _DTD.search(head)
        if dtd:
            self._refuse_dtd()
        i = 0
        if text.startswith("\ufeff"):
            i = 1
        elif text.startswith("\xef\xbb\xbf"):
            i = 3
        n = len(text)
        while True:
            while i < n and text[i] in " \t\r\n":
                i += 1
            if text.startswith("<?", i):
                end = text.find("?>", i + 2)
                close = 2
            elif text.startswith("<!--", i):
                end = text.find("-->", i + 4)
                close = 3
            elif text.startswith("<!", i):
                self._refuse_dtd()
            else:
                return  # the root element, or not XML at all
            if end < 0:
                if self.size > len(self.head):
                    raise XmlRefused(Text(messages.XML_PROLOG, name=self.name, limit=mib(_PROLOG)))
                return
            i = end + close

    def _refuse_dtd(self) -> None:
        raise XmlRefused(Text(messages.XML_DTD, name=self.name))

    def _check_shared_strings(self) -> None:
        head = self.head
        if _is_utf16(head):
            head = head.decode(_utf16_codec(head), "replace").encode("utf-8")
        m = _SST_TAG.search(head)
        if not m:
            return
        self.strings = True
        u = _UNIQUE_COUNT.search(m.group(1))
        # Every string needs at least "<si/>": a table cannot hold more than size/5.
        if u and int(u.group(1)) > self.size // 5 + 1:
            raise XmlRefused(
                Text(
                    messages.XML_SHARED_STRINGS,
                    name=self.name,
                    claimed=int(u.group(1)),
                    most=self.size // 5 + 1,
                )
            )


def _bound(row: int) -> int:
    """``row`` rounded up to two significant digits (99 and below as they are)."""
    if row < 100:
        return row
    unit = 10 ** (len(str(row)) - 2)
    return (row // unit + 1) * unit - 1 if row % unit != unit - 1 else row


@lru_cache(maxsize=1024)
def _past(col: int, row: int) -> re.Pattern[bytes]:
    """_OTHER_CELL for a sheet measured up to column ``col`` (0: A) and row ``row``: it
    also matches a cell tag in the common form whose reference is past either (a later
    letter, or a row number above ``row``; one with leading zeros and more digits than
    ``row`` is taken as past it, and then read exactly)."""
    digits = str(row)
    # As a trie of the digits, most likely first (as many digits as ``row``), so that a
    # reference within is matched without backtracking: a pattern of plain alternatives
    # made the search that every piece costs twice as slow.
    within = _up_to(digits)
    if len(digits) > 1:
        within += f"|[0-9]{{1,{len(digits) - 1}}}+"
    letters = f"A-{chr(65 + col)}"
    return re.compile(
        f'<c(?! r="[{letters}](?:{within})"(?: [stcvmph]{{1,2}}="[^"<>]*+")*+ ?/?>)[\\s/>]'.encode()
    )


def _up_to(digits: str) -> str:
    """A pattern of the numbers of len(digits) digits up to ``digits`` (leading zeros
    included)."""
    if not digits:
        return ""
    first, rest = int(digits[0]), len(digits) - 1
    lower = f"[0-{first - 1}][0-9]{{{rest}}}|" if first else ""
    return f"(?:{lower}{first}{_up_to(digits[1:])})"


def _unusual_tag(buf: bytes, before: int) -> bool:
    """Whether ``buf`` has an unusual tag starting before ``before``: a tag cut off by the
    end of the piece is judged again, whole, with the next piece (the carried tail)."""
    for pattern in (_OTHER_CELL, _PREFIXED):
        m = pattern.search(buf)
        if m and m.start() < before:
            return True
    return False


def _is_utf16(head: bytes) -> bool:
    return head[:2] in (b"\xff\xfe", b"\xfe\xff", b"<\0", b"\0<")


def _utf16_codec(piece: bytes) -> str:
    if piece[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "utf-16"
    return "utf-16-le" if piece[:2] == b"<\0" else "utf-16-be"


def _exact_span(data: bytes, name: str, limits: Limits) -> int:
    """Measure a sheet's cell span from every r attribute, as calamine will place cells;
    returns it (rows x columns, counted from A1). Read a window at a time, each ending
    before a "<" (no attribute, so no match, spans one): the matches of one window are
    held at once, never those of the whole sheet (a list per reference of a sheet of
    millions of cells took 660 MB)."""
    max_row = max_col = 0
    letters: set[bytes] = set()
    rless_rows = rless_cells = 0
    start, size = 0, len(data)
    while start < size:
        end = data.find(b"<", start + EXACT_WINDOW) if start + EXACT_WINDOW < size else -1
        end = size if end < 0 else end
        refs = _R_ATTR.findall(data, start, end)
        rows_seen = {row for _col, row in refs}
        if rows_seen:
            max_row = max(max_row, max(map(int, rows_seen)))
        letters.update(col for col, _row in refs if col)
        del refs, rows_seen
        rless_rows += len(_ROW_TAG.findall(data, start, end)) - len(
            _ROW_TAG_WITH_R.findall(data, start, end)
        )
        rless_cells += len(_C_TAG.findall(data, start, end)) - len(
            _C_TAG_WITH_R.findall(data, start, end)
        )
        start = end
    max_col = max((letter_to_index(x.decode()) + 1 for x in letters), default=0)
    rows = max_row + max(0, rless_rows) + 1
    cols = max_col + max(0, rless_cells) + 1
    if rows * cols > limits.max_cells:
        raise SheetTooLarge(
            Text(
                messages.XLSX_SHEET_SPAN, name=name, rows=rows, columns=cols, limit=limits.max_cells
            )
        )
    return rows * cols


def check_xml_defences() -> list[str]:
    """Problems with the XML defences of the libraries that read spreadsheets here, for a
    Django system check: openpyxl must parse through defusedxml (it only does when
    defusedxml is importable and OPENPYXL_DEFUSEDXML is not "False")."""
    problems = []
    try:
        import defusedxml  # noqa: F401
    except ImportError:
        problems.append("defusedxml is not installed: openpyxl would parse XML unguarded")
    try:
        import openpyxl
        from openpyxl.xml import functions as oxml
    except ImportError:
        return problems
    if not getattr(openpyxl, "DEFUSEDXML", False):
        problems.append(
            "openpyxl.DEFUSEDXML is False (defusedxml missing or OPENPYXL_DEFUSEDXML=False): "
            "openpyxl would expand XML entities"
        )
    if not getattr(oxml.iterparse, "__module__", "").startswith("defusedxml"):
        problems.append("openpyxl.xml.functions.iterparse is not defusedxml's")
    bomb = b'<!DOCTYPE x [<!ENTITY a "aaaa">]><x>&a;</x>'
    try:
        oxml.fromstring(bomb)
    except Exception:  # defusedxml raises EntitiesForbidden; anything but success is fine
        pass
    else:
        problems.append("openpyxl.xml.functions.fromstring expands XML entities")
    try:
        import python_calamine  # noqa: F401
    except ImportError:
        problems.append("python-calamine is not installed: xlsx/xls files cannot be read")
    return problems


__all__ = ["check_workbook", "check_xml_defences", "mib"]
