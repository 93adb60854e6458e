"""One product as the catalogue's files give it, checked: what every reader hands on
(``Rows``) and why a line is refused or a value dropped (``Problem``).

Decisions (docs/products.md):

- a line without our code or without a name is refused; so is a second line of a code
  already read (the first one wins), and a value longer than its column;
- a barcode that is not 8, 12, 13 or 14 digits or whose check digit is wrong is dropped
  from the product and reported ("flagged"), the product itself is loaded: refusing
  the line would retire a product of ours over one bad barcode;
- the code of a refused line is never retired by that load (it is in the file; it could
  not be read).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from django.utils.translation import gettext_lazy as _

from pricefeed.parsing.values import BARCODE_LENGTHS, checksum_ok, checksums_ok

OWN_CODE_MAX = 100  # Product.own_code
TEXT_MAX = 255  # Product.brand, Product.article
UNIT_MAX = 32  # Product.unit
NAME_MAX = 2000  # a name or a category path longer than this is not a name
# Problems kept to print; all are counted.
PROBLEMS_KEPT = 1000
SINK_BATCH = 20_000
# Barcodes of one product written in one cell: "|" (the template's), also "," ";" or
# spaces, as people type them.
BARCODE_SEPARATORS = re.compile(r"[|,;\s]+")
CATEGORY_JOIN = " / "
# add_chunk: a chunk that is not plain is halved until its halves are, or down to this
# many lines, which go through add one by one.
CHUNK_LEAST = 64

# Why a line is refused or a value dropped: shown to operators in their language.
EMPTY_CODE = _("no own code")
EMPTY_NAME = _("no name")
DUPLICATE_CODE = _("own code %(code)s is already on line %(first)s")
TOO_LONG = _("%(column)s is longer than %(limit)s characters")
BAD_BARCODE = _("barcode %(barcode)s dropped: not 8, 12, 13 or 14 digits")
BAD_CHECK_DIGIT = _("barcode %(barcode)s dropped: wrong check digit")


def category_path(levels: list[str]) -> str:
    """Levels of a category (top first) as Product.category stores them."""
    return CATEGORY_JOIN.join(level for level in (" ".join(x.split()) for x in levels) if level)


@dataclass
class Problem:
    """Line ``line`` of the file was refused (``refused``) or one of its values was
    dropped; ``reason`` says why, translated when shown."""

    line: int
    reason: str
    refused: bool = True

    def __str__(self) -> str:
        return str(self.reason)


@dataclass
class Rows:
    """The products a file holds, checked: each a tuple (own_code, name, brand, article,
    barcodes, unit, category) in file order; what was refused or dropped; whether the
    file is the whole catalogue (``full``: a product missing from it is retired) and
    which codes it says are deleted (CommerceML's Статус="Удален")."""

    format: str = ""
    full: bool = True
    products: list[tuple] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    refused: int = 0
    flagged: int = 0
    # Codes on refused lines: in the file, so never retired by this load.
    kept_codes: set[str] = field(default_factory=set)
    deleted_codes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Where products go in batches as they are read (the database's COPY); None: they
    # stay in ``products``.
    sink: Callable[[list[tuple]], None] | None = None
    sent: int = 0
    _seen: dict[str, int] = field(default_factory=dict, repr=False)

    @property
    def count(self) -> int:
        """Products read so far (sent on and still held)."""
        return self.sent + len(self.products)

    def reset(self) -> None:
        """Forgets what was read (nothing was sent on): the file is read again."""
        assert not self.sent
        self.products.clear()
        self.problems.clear()
        self.refused = self.flagged = 0
        self.kept_codes.clear()
        self._seen.clear()

    def flush(self) -> None:
        """Sends the products held to the sink (if there is one)."""
        if self.sink is not None and self.products:
            self.sink(self.products)
            self.sent += len(self.products)
            self.products = []

    def note(self, line: int, reason: str, *, refused: bool) -> None:
        if refused:
            self.refused += 1
        else:
            self.flagged += 1
        if len(self.problems) < PROBLEMS_KEPT:
            self.problems.append(Problem(line, reason, refused))

    def add(
        self,
        line: int,
        own_code: str,
        name: str,
        brand: str = "",
        article: str = "",
        barcodes: list[str] | str = "",
        unit: str = "",
        category: str = "",
    ) -> None:
        """Checks one product and keeps it, or notes why it is refused. Values come
        stripped or not; ``barcodes`` as a list or as one cell of the template.

        The hot loop of a load (1M calls for 1M products): values are stripped inline,
        NUL characters are taken out of whole COPY chunks (products.loading), and a
        cell of one barcode is checked without splitting."""
        own_code = own_code.strip()
        if "\x00" in own_code:  # taken out of the chunk later: out of the key now
            own_code = own_code.replace("\x00", "")
        if not own_code:
            self.note(line, str(EMPTY_CODE), refused=True)
            return
        seen = self._seen
        first = seen.get(own_code)
        if first is not None:
            self.kept_codes.add(own_code)
            self.note(line, DUPLICATE_CODE % {"code": own_code[:100], "first": first}, refused=True)
            return
        seen[own_code] = line
        name = " ".join(name.split())
        brand = brand.strip()
        article = article.strip()
        unit = unit.strip()
        if (
            len(own_code) > OWN_CODE_MAX
            or len(name) > NAME_MAX
            or len(brand) > TEXT_MAX
            or len(article) > TEXT_MAX
            or len(unit) > UNIT_MAX
            or len(category) > NAME_MAX
        ):
            self._too_long(line, own_code, name, brand, article, unit, category)
            return
        if not name:
            self.kept_codes.add(own_code)
            self.note(line, str(EMPTY_NAME), refused=True)
            return
        if isinstance(barcodes, str):
            code = barcodes.strip()
            if not code:
                kept = []
            elif code.isdigit() and code.isascii() and len(code) in BARCODE_LENGTHS:
                kept = [code] if checksum_ok(code) else self._barcodes(line, [code])
            else:
                kept = self._barcodes(line, BARCODE_SEPARATORS.split(code))
        else:
            kept = self._barcodes(line, barcodes)
        products = self.products
        products.append((own_code, name, brand, article, kept, unit, category))
        if len(products) >= SINK_BATCH and self.sink is not None:
            self.flush()

    def add_chunk(
        self,
        lines: Sequence[int],
        codes: Sequence[str],
        names: Sequence[str],
        brands: Sequence[str],
        articles: Sequence[str],
        barcodes: Sequence[str],
        units: Sequence[str],
        categories: Sequence[str],
    ) -> None:
        """add of many lines at once, given as columns (``barcodes`` as cells of the
        template): the same products, problems and order as add of each line in turn.

        A million-line file is mostly plain lines: codes new and unique, values already
        stripped, within their lengths, barcodes right. Such a chunk is checked column by
        column (a few passes in C over each, not a dozen Python operations per line)
        and kept whole. A chunk that is not plain is halved, each half tried in turn (so
        the first of a repeated code still wins), down to CHUNK_LEAST lines, which go
        through add one by one."""
        if self._plain(codes, names, brands, articles, barcodes, units, categories):
            self._seen.update(zip(codes, lines, strict=True))
            kept = [cell.split("|") if cell else [] for cell in barcodes]
            products = self.products
            products.extend(
                zip(codes, names, brands, articles, kept, units, categories, strict=True)
            )
            if len(products) >= SINK_BATCH and self.sink is not None:
                self.flush()
            return
        count = len(lines)
        if count <= CHUNK_LEAST:
            for i in range(count):
                self.add(
                    lines[i],
                    codes[i],
                    names[i],
                    brands[i],
                    articles[i],
                    barcodes[i],
                    units[i],
                    categories[i],
                )
            return
        middle = count // 2
        for part in (slice(0, middle), slice(middle, count)):
            self.add_chunk(
                lines[part],
                codes[part],
                names[part],
                brands[part],
                articles[part],
                barcodes[part],
                units[part],
                categories[part],
            )

    def _plain(
        self,
        codes: Sequence[str],
        names: Sequence[str],
        brands: Sequence[str],
        articles: Sequence[str],
        barcodes: Sequence[str],
        units: Sequence[str],
        categories: Sequence[str],
    ) -> bool:
        """Whether add would keep every line of the chunk as it is (see add_chunk):
        checks over whole columns, each a pass in C (str.strip returns the very string
        when there is nothing to strip; substring searches; one big join)."""
        count = len(codes)
        if not count:
            return True
        if len(set(codes)) != count or not self._seen.keys().isdisjoint(codes):
            return False
        for column, limit in (
            (codes, OWN_CODE_MAX),
            (names, NAME_MAX),
            (brands, TEXT_MAX),
            (articles, TEXT_MAX),
            (units, UNIT_MAX),
            (categories, NAME_MAX),
        ):
            if max(map(len, column)) > limit:
                return False
        for column in (codes, names, brands, articles, units):
            if list(map(str.strip, column)) != list(column):
                return False
        if "" in codes or "" in names or "\x00" in "".join(codes):
            return False
        # A name add would not squeeze: no whitespace but single spaces (every other
        # whitespace character is not printable; so is NUL).
        text = "".join(names)
        if not text.isprintable() or "  " in text:
            return False
        joined = "\x00".join(barcodes)
        digits = joined.replace("\x00", "").replace("|", "")
        if digits and not (digits.isascii() and digits.isdigit()):
            return False
        # Cells of digits and "|", no empty part but in an empty cell.
        every = joined.replace("\x00", "|").split("|")
        if every.count("") != barcodes.count(""):
            return False
        lengths = set(map(len, every)) - {0}
        if not lengths.issubset(BARCODE_LENGTHS):
            return False
        if len(lengths) == 1:  # the usual file: EAN-13 only
            groups = [(lengths.pop(), list(filter(None, every)))]
        else:
            groups = [(n, [code for code in every if len(code) == n]) for n in lengths]
        if not all(checksums_ok(group, length) for length, group in groups):
            return False
        # add keeps a barcode repeated in one cell once.
        repeated = (cell.split("|") for cell in barcodes if "|" in cell)
        return all(len(set(parts)) == len(parts) for parts in repeated)

    def _too_long(self, line: int, *values: str) -> None:
        self.kept_codes.add(values[0][:OWN_CODE_MAX])
        columns = (
            (_("own code"), OWN_CODE_MAX),
            (_("name"), NAME_MAX),
            (_("brand"), TEXT_MAX),
            (_("article"), TEXT_MAX),
            (_("unit"), UNIT_MAX),
            (_("category"), NAME_MAX),
        )
        for (column, limit), value in zip(columns, values, strict=True):
            if len(value) > limit:
                self.note(line, TOO_LONG % {"column": column, "limit": limit}, refused=True)
                return

    def _barcodes(self, line: int, cells: list[str]) -> list[str]:
        kept: list[str] = []
        for cell in cells:
            code = cell.strip()
            if not code:
                continue
            if not (code.isdigit() and code.isascii() and len(code) in BARCODE_LENGTHS):
                self.note(line, BAD_BARCODE % {"barcode": code[:40]}, refused=False)
            elif not checksum_ok(code):
                self.note(line, BAD_CHECK_DIGIT % {"barcode": code}, refused=False)
            elif code not in kept:
                kept.append(code)
        return kept
