"""Hostile price-list files built in memory, for tests and benchmarks of the parsing
library's defences (issue 11).

* ``xls_with_cells``: a real legacy .xls (a compound file holding a BIFF8 "Workbook"
  stream) with cells where you put them, even where Excel never would (column 65535);
  python-calamine opens it like any other when the cells are ordinary.
* ``tar_gz_pax_bomb``: a tiny .tar.gz whose pax extended header is one long run of digits
  (the CVE-2024-6232 shape that makes an unpatched tarfile backtrack for minutes).
* ``tar_gz_gnu_longname``: a .tar.gz whose one member carries a GNU long name of any length.
* ``handmade_xlsx``: an xlsx assembled from raw XML parts; ``xlsx_shared_string_copies``
  and ``xls_shared_string_copies``: workbooks whose cells all refer to one long shared
  string (a small file that a reader copying the string into every cell inflates to GBs);
  ``xlsx_far_cell``: a tiny xlsx with one cell far from the others; ``xlsx_wide_span``:
  the same padded to a size that allows its span; ``xlsx_empty_rows``: two price rows
  a million empty rows apart.

Everything is written byte by byte from the formats' specifications ([MS-CFB], [MS-XLS],
POSIX ustar/pax, GNU tar), so that a file can be exactly as malformed as a test needs.
"""

from __future__ import annotations

import gzip
import io
import math
import random
import struct
import zipfile

# --- compound file (OLE2 / CFB), version 3 ---------------------------------------------

SECTOR = 512
MINI_SECTOR = 64
MINI_CUTOFF = 4096  # streams shorter than this live in the mini stream
ENDOFCHAIN = 0xFFFFFFFE
FREESECT = 0xFFFFFFFF
FATSECT = 0xFFFFFFFD
NOSTREAM = 0xFFFFFFFF
CFB_SIGNATURE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def _directory_entry(
    name: str, kind: int, *, child: int = NOSTREAM, start: int = ENDOFCHAIN, size: int = 0
) -> bytes:
    """One 128-byte directory entry (kind 0: unused, 2: stream, 5: root storage)."""
    if not name:
        return b"\0" * 64 + struct.pack("<HBB", 0, 0, 0) + b"\xff" * 12 + b"\0" * 48
    raw = (name + "\0").encode("utf-16-le")
    return (
        raw.ljust(64, b"\0")
        + struct.pack("<HBBIII", len(raw), kind, 1, NOSTREAM, NOSTREAM, child)
        + b"\0" * 16  # CLSID
        + b"\0" * 4  # state bits
        + b"\0" * 16  # creation and modification times
        + struct.pack("<IQ", start, size)
    )


def _chain(first: int, count: int) -> list[int]:
    """FAT entries of ``count`` consecutive sectors starting at ``first``."""
    return [first + i + 1 for i in range(count - 1)] + [ENDOFCHAIN] if count else []


def compound_file(stream_name: str, payload: bytes) -> bytes:
    """A version-3 compound file with one stream; a stream under 4096 bytes is stored in
    the mini stream (as Excel stores a small workbook), a longer one in sectors."""
    mini = len(payload) < MINI_CUTOFF
    if mini:
        mini_count = math.ceil(len(payload) / MINI_SECTOR)
        ministream = payload.ljust(mini_count * MINI_SECTOR, b"\0")
        minifat = _chain(0, mini_count)
        minifat_sectors = math.ceil(len(minifat) * 4 / SECTOR)
        body_sectors = math.ceil(len(ministream) / SECTOR)
        body = ministream
    else:
        minifat = []
        minifat_sectors = 0
        body_sectors = math.ceil(len(payload) / SECTOR)
        body = payload
    others = 1 + minifat_sectors + body_sectors  # directory, mini FAT, data
    fat_sectors = 1
    while fat_sectors * SECTOR // 4 < fat_sectors + others:
        fat_sectors += 1
    if fat_sectors > 109:
        raise ValueError("payload too large for a header-only DIFAT")
    directory_at = fat_sectors
    minifat_at = directory_at + 1
    body_at = minifat_at + minifat_sectors
    fat = [FATSECT] * fat_sectors + [ENDOFCHAIN]
    fat += _chain(minifat_at, minifat_sectors) + _chain(body_at, body_sectors)
    fat += [FREESECT] * (fat_sectors * SECTOR // 4 - len(fat))
    if mini:
        root = _directory_entry(
            "Root Entry", 5, child=1, start=body_at, size=len(body) if body_sectors else 0
        )
        stream = _directory_entry(stream_name, 2, start=0, size=len(payload))
    else:
        root = _directory_entry("Root Entry", 5, child=1)
        stream = _directory_entry(stream_name, 2, start=body_at, size=len(payload))
    directory = root + stream + _directory_entry("", 0) * 2
    difat = list(range(fat_sectors)) + [FREESECT] * (109 - fat_sectors)
    header = (
        CFB_SIGNATURE
        + b"\0" * 16
        + struct.pack("<HHHHH", 0x003E, 3, 0xFFFE, 9, 6)
        + b"\0" * 6
        + struct.pack(
            "<IIIIIIIII",
            0,  # directory sectors (always 0 in version 3)
            fat_sectors,
            directory_at,
            0,  # transaction signature
            MINI_CUTOFF,
            minifat_at if minifat_sectors else ENDOFCHAIN,
            minifat_sectors,
            ENDOFCHAIN,  # first DIFAT sector: none beyond the header's 109 entries
            0,
        )
        + struct.pack("<109I", *difat)
    )
    minifat_bytes = struct.pack(f"<{len(minifat)}I", *minifat) if minifat else b""
    minifat_bytes += struct.pack("<I", FREESECT) * (minifat_sectors * SECTOR // 4 - len(minifat))
    return b"".join(
        [
            header,
            struct.pack(f"<{len(fat)}I", *fat),
            directory,
            minifat_bytes,
            body.ljust(body_sectors * SECTOR, b"\0"),
        ]
    )


# --- BIFF8 ------------------------------------------------------------------------------


def biff_record(kind: int, data: bytes = b"") -> bytes:
    return struct.pack("<HH", kind, len(data)) + data


def _bof(substream: int) -> bytes:
    # BIFF8 (0x0600), the substream's kind, build and year as Excel 97 writes them.
    return biff_record(0x0809, struct.pack("<HHHHII", 0x0600, substream, 0x0DBB, 0x07CC, 0, 6))


_EOF = biff_record(0x000A)


def _unicode(text: str, length_bytes: int) -> bytes:
    """An XLUnicodeString (length u16) or ShortXLUnicodeString (u8), stored as UTF-16."""
    count = struct.pack("<H" if length_bytes == 2 else "<B", len(text))
    return count + b"\x01" + text.encode("utf-16-le")


def _sst(strings: list[str]) -> bytes:
    """The shared-string table in records of at most 8,224 bytes: a string's characters
    that do not fit go on in a CONTINUE record that starts with the string's flags byte
    again, as [MS-XLS] 2.4.58 has it."""
    records = []
    data = struct.pack("<II", len(strings), len(strings))
    kind = 0x00FC
    for text in strings:
        if len(data) + 5 > _RECORD:
            records.append(biff_record(kind, data))
            kind, data = 0x003C, b""
        data += struct.pack("<HB", len(text), 1)
        chars = text.encode("utf-16-le")
        while True:
            room = (_RECORD - len(data)) // 2 * 2
            data += chars[:room]
            chars = chars[room:]
            if not chars:
                break
            records.append(biff_record(kind, data))
            kind, data = 0x003C, b"\x01"
    records.append(biff_record(kind, data))
    return b"".join(records)


_RECORD = 8224  # the most data one BIFF8 record holds


def biff8_workbook(
    sheets: list[tuple[str, bytes]], *, strings: list[str], globals_extra: bytes = b""
) -> bytes:
    """A Workbook stream: the globals (code page, one BOUNDSHEET8 per sheet, the shared
    strings) then each sheet's records between its own BOF and EOF."""
    bound_size = [len(biff_record(0x0085, b"\0" * 6 + _unicode(n, 1))) for n, _ in sheets]
    head = _bof(0x0005) + biff_record(0x0042, struct.pack("<H", 1200)) + globals_extra
    tail = _sst(strings) + _EOF
    position = len(head) + sum(bound_size) + len(tail)
    bound = []
    bodies = []
    for name, records in sheets:
        body = _bof(0x0010) + records + _EOF
        bound.append(biff_record(0x0085, struct.pack("<IBB", position, 0, 0) + _unicode(name, 1)))
        bodies.append(body)
        position += len(body)
    return head + b"".join(bound) + tail + b"".join(bodies)


def cell_records(
    cells: list[tuple[int, int, str | float]], strings: list[str], index: dict[str, int]
) -> bytes:
    """NUMBER records for numbers, LABELSST records (strings added to ``strings``)."""
    out = []
    for row, col, value in cells:
        if isinstance(value, str):
            if value not in index:
                index[value] = len(strings)
                strings.append(value)
            out.append(biff_record(0x00FD, struct.pack("<HHHI", row, col, 0, index[value])))
        else:
            out.append(biff_record(0x0203, struct.pack("<HHHd", row, col, 0, float(value))))
    return b"".join(out)


def dimensions(first_row: int, last_row: int, first_col: int, last_col: int) -> bytes:
    """A DIMENSIONS record: rows and columns as [first, last + 1), as Excel writes them
    (the column end, 16 bits, stops at 65535)."""
    end_col = min(last_col + 1, 0xFFFF)
    return biff_record(
        0x0200, struct.pack("<IIHHH", first_row, last_row + 1, first_col, end_col, 0)
    )


def xls_with_cells(
    cells: list[tuple[int, int, str | float]],
    *,
    sheet: str = "Прайс",
    dims: tuple[int, int, int, int] | None = None,
) -> bytes:
    """A legacy .xls with one worksheet holding ``cells`` as (row, column, value), both
    0-based and at most 65535; strings go through the shared-string table.

    A DIMENSIONS record is written first, from the cells unless ``dims`` gives (first row,
    last row, first column, last column) to claim instead (it can lie, as in a hostile file)."""
    strings: list[str] = []
    body = cell_records(cells, strings, {})
    if dims is None and cells:
        rows = [c[0] for c in cells]
        cols = [c[1] for c in cells]
        dims = (min(rows), max(rows), min(cols), max(cols))
    records = (dimensions(*dims) if dims else b"") + body
    return compound_file("Workbook", biff8_workbook([(sheet, records)], strings=strings))


# --- tar --------------------------------------------------------------------------------


def _octal(value: int, width: int) -> bytes:
    return f"{value:0{width - 1}o}".encode() + b"\0"


def tar_header(name: bytes, size: int, typeflag: bytes, *, gnu: bool = False) -> bytes:
    """One 512-byte tar header with a correct checksum (ustar, or GNU magic)."""
    magic = b"ustar  \0" if gnu else b"ustar\x0000"
    block = bytearray(
        name[:100].ljust(100, b"\0")
        + _octal(0o644, 8)
        + _octal(0, 8)
        + _octal(0, 8)
        + _octal(size, 12)
        + _octal(0, 12)
        + b" " * 8  # checksum, counted as spaces
        + typeflag
        + b"\0" * 100  # link name
        + magic
        + b"\0" * 32  # user name
        + b"\0" * 32  # group name
        + b"\0" * 16  # device numbers
        + b"\0" * 155  # prefix
    ).ljust(512, b"\0")
    block[148:156] = f"{sum(block):06o}".encode() + b"\0 "
    return bytes(block)


def _padded(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % 512)


_PRICES = "Артикул;Цена\nA-1;10\n".encode()


def _tar_gz(blocks: list[bytes]) -> bytes:
    tar = b"".join(blocks) + b"\0" * 1024
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, compresslevel=9) as f:
        f.write(tar)
    return buf.getvalue()


def tar_gz_pax_bomb(digits: int = 80_000) -> bytes:
    """A .tar.gz (a few hundred bytes) whose first member's pax header is ``digits``
    digits and nothing else, followed by an ordinary price list."""
    pax = b"1" * digits
    return _tar_gz(
        [
            tar_header(b"././@PaxHeader", len(pax), b"x"),
            _padded(pax),
            tar_header(b"prices.csv", len(_PRICES), b"0"),
            _padded(_PRICES),
        ]
    )


def tar_gz_gnu_longname(length: int) -> bytes:
    """A .tar.gz holding one price list whose name, ``length`` characters ending in
    ".csv", is carried by a GNU long-name ('L') header."""
    if length < 5:
        raise ValueError("a long name has at least 5 characters")
    name = b"a" * (length - 4) + b".csv"
    return _tar_gz(
        [
            tar_header(b"././@LongLink", len(name) + 1, b"L", gnu=True),
            _padded(name + b"\0"),
            tar_header(name[:100], len(_PRICES), b"0", gnu=True),
            _padded(_PRICES),
        ]
    )


# --- xlsx -------------------------------------------------------------------------------

MAIN_NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
REL_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PKG_REL_NS = "http://schemas.openxmlformats.org/package/2006/relationships"


def handmade_xlsx(
    sheet: str,
    *,
    shared_strings: str | None = None,
    macro: bool = False,
    extra: dict[str, bytes | str] | None = None,
) -> bytes:
    """A minimal xlsx assembled from raw XML parts (for cached formula values, bombs)."""
    main = (
        "application/vnd.ms-excel.sheet.macroEnabled.main+xml"
        if macro
        else "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"
    )
    types = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" '
        'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        f'<Override PartName="/xl/workbook.xml" ContentType="{main}"/>'
        '<Override PartName="/xl/worksheets/sheet1.xml" ContentType='
        '"application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
        "</Types>"
    )
    rels = (
        f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{PKG_REL_NS}">'
        f'<Relationship Id="rId1" Type="{REL_NS}/officeDocument" Target="xl/workbook.xml"/>'
        "</Relationships>"
    )
    workbook = (
        f'<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="{MAIN_NS}" '
        f'xmlns:r="{REL_NS}"><sheets><sheet name="Лист1" sheetId="1" r:id="rId1"/>'
        "</sheets></workbook>"
    )
    sst_rel = (
        f'<Relationship Id="rId2" Type="{REL_NS}/sharedStrings" Target="sharedStrings.xml"/>'
        if shared_strings is not None
        else ""
    )
    workbook_rels = (
        f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{PKG_REL_NS}">'
        f'<Relationship Id="rId1" Type="{REL_NS}/worksheet" Target="worksheets/sheet1.xml"/>'
        f"{sst_rel}</Relationships>"
    )
    parts: dict[str, bytes | str] = {
        "[Content_Types].xml": types,
        "_rels/.rels": rels,
        "xl/workbook.xml": workbook,
        "xl/_rels/workbook.xml.rels": workbook_rels,
        "xl/worksheets/sheet1.xml": sheet,
    }
    if shared_strings is not None:
        parts["xl/sharedStrings.xml"] = shared_strings
    parts.update(extra or {})
    return zip_of(parts)


def zip_of(files: dict[str, bytes | str], *, compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


def xlsx_shared_string_copies(cells: int = 150_000, length: int = 32_767) -> bytes:
    """An xlsx with a header, one price row and ``cells`` cells (column A, from row 3) that
    all refer to one shared string of ``length`` characters: 1.15 MB for the defaults,
    ``cells`` x ``length`` bytes (4.9 GB) in a reader that copies the string per cell."""
    rows = [
        '<row r="1"><c r="A1" t="s"><v>1</v></c><c r="B1" t="s"><v>2</v></c></row>',
        '<row r="2"><c r="A2" t="s"><v>3</v></c><c r="B2"><v>10.5</v></c></row>',
    ]
    rows += [f'<row r="{r}"><c r="A{r}" t="s"><v>0</v></c></row>' for r in range(3, cells + 3)]
    sheet = (
        f'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{MAIN_NS}"><sheetData>'
        f"{''.join(rows)}</sheetData></worksheet>"
    )
    strings = "".join(f"<si><t>{t}</t></si>" for t in ("x" * length, "sku", "price", "A-1"))
    table = f'<sst xmlns="{MAIN_NS}" count="{cells + 3}" uniqueCount="4">{strings}</sst>'
    return handmade_xlsx(sheet, shared_strings=table)


def xlsx_far_cell(ref: str = "AE999990") -> bytes:
    """A ~1.5 KB xlsx with a header, one price row and one cell at ``ref``: a reader that
    holds the sheet as one dense range from A1 to ``ref`` holds 31 x 999,990 cells."""
    sheet = (
        f'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{MAIN_NS}"><sheetData>'
        '<row r="1"><c r="A1" t="inlineStr"><is><t>sku</t></is></c>'
        '<c r="B1" t="inlineStr"><is><t>price</t></is></c></row>'
        '<row r="2"><c r="A2" t="inlineStr"><is><t>A-1</t></is></c><c r="B2"><v>10.5</v></c>'
        f'</row><row r="{ref.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ")}"><c r="{ref}"><v>1</v></c>'
        "</row></sheetData></worksheet>"
    )
    return handmade_xlsx(sheet)


def xlsx_wide_span(ref: str = "AE999990", *, padding: int = 510_000, seed: int = 30) -> bytes:
    """An xlsx with a header and one cell at ``ref`` (no price row), made large enough by
    ``padding`` incompressible bytes in a part of its own that its span is within the
    cells a file of its size may span (64 a byte by default: AE999990 spans 32.0 M cells,
    allowed from 500 KB). A message of several is what a per-message cell budget is for:
    each file alone is within every limit."""
    sheet = (
        f'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{MAIN_NS}"><sheetData>'
        '<row r="1"><c r="A1" t="inlineStr"><is><t>sku</t></is></c>'
        '<c r="B1" t="inlineStr"><is><t>price</t></is></c></row>'
        f'<row r="{ref.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ")}"><c r="{ref}"><v>1</v></c>'
        "</row></sheetData></worksheet>"
    )
    noise = random.Random(seed).randbytes(padding)
    return handmade_xlsx(sheet, extra={"docProps/padding.bin": noise})


def xlsx_empty_rows(empty: int = 999_996) -> bytes:
    """An xlsx with a header, a price row, ``empty`` empty rows (a ``<row r="N"/>`` tag
    each, as a writer leaves formatted but empty rows) and a last price row: 2.4 MB for
    the default, which ends at row 999,999 (every cell reference in the common form)."""
    last = empty + 3
    rows = "".join(f'<row r="{r}"/>' for r in range(3, last))
    sheet = (
        f'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{MAIN_NS}"><sheetData>'
        '<row r="1"><c r="A1" t="inlineStr"><is><t>sku</t></is></c>'
        '<c r="B1" t="inlineStr"><is><t>price</t></is></c></row>'
        '<row r="2"><c r="A2" t="inlineStr"><is><t>A-1</t></is></c><c r="B2"><v>10.5</v></c>'
        f'</row>{rows}<row r="{last}"><c r="A{last}" t="inlineStr"><is><t>A-2</t></is></c>'
        f'<c r="B{last}"><v>11.5</v></c></row></sheetData></worksheet>'
    )
    return handmade_xlsx(sheet)


def xls_shared_string_copies(cells: int = 150_000, length: int = 32_767) -> bytes:
    """A legacy .xls like xlsx_shared_string_copies: ``cells`` LABELSST records (column
    A, from row 3, past 65,536 rows in further columns) referring to one string of
    ``length`` characters."""
    head = [(0, 0, "sku"), (0, 1, "price"), (1, 0, "A-1"), (1, 1, 10.5)]
    strings: list[str] = ["x" * length]
    index = {strings[0]: 0}
    body = cell_records(head, strings, index)
    label = struct.Struct("<HHHHHI")
    copies = b"".join(
        label.pack(0x00FD, 10, 2 + i % 65_534, i // 65_534 + 2, 0, 0) for i in range(cells)
    )
    return compound_file("Workbook", biff8_workbook([("Прайс", body + copies)], strings=strings))
