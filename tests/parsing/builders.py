"""Fixture files for the parsing tests, generated in memory."""

from __future__ import annotations

import gzip
import io
import stat
import struct
import tarfile
import zipfile
import zlib
from xml.sax.saxutils import escape

import openpyxl

from devkit.hostile_files import MAIN_NS, handmade_xlsx, zip_of  # noqa: F401 (re-exported)


def xlsx(rows: list[list], *, title: str = "Прайс", merges: tuple[str, ...] = ()) -> bytes:
    """An xlsx written by openpyxl; ``rows`` start at A1 (None leaves a cell empty)."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = title
    for r, row in enumerate(rows, start=1):
        for c, value in enumerate(row, start=1):
            if value is not None:
                ws.cell(row=r, column=c, value=value)
    for ref in merges:
        ws.merge_cells(ref)
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def _cell_xml(ref: str, value: object) -> str:
    if isinstance(value, tuple):  # ("formula", cached value)
        formula, cached = value
        return f'<c r="{ref}"><f>{escape(formula)}</f><v>{cached}</v></c>'
    if isinstance(value, int | float):
        return f'<c r="{ref}"><v>{value}</v></c>'
    return f'<c r="{ref}" t="inlineStr"><is><t>{escape(str(value))}</t></is></c>'


def sheet_xml(rows: list[list], *, prolog: str = "") -> str:
    """Worksheet XML; a cell given as (formula, cached) gets <f> and its cached <v>."""
    out = []
    for r, row in enumerate(rows, start=1):
        cells = "".join(
            _cell_xml(f"{chr(65 + c)}{r}", v) for c, v in enumerate(row) if v is not None
        )
        out.append(f'<row r="{r}">{cells}</row>')
    return (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>{prolog}'
        f'<worksheet xmlns="{MAIN_NS}"><sheetData>{"".join(out)}</sheetData></worksheet>'
    )


def zip_with_symlink(name: str, target: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        info = zipfile.ZipInfo(name)
        info.create_system = 3
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(info, target)
        zf.writestr("other.csv", "Артикул;Цена\nA1;10\n")
    return buf.getvalue()


def zip_of_zeros(name: str, size: int) -> bytes:
    """A zip holding ``size`` zero bytes, written in chunks (never all in memory)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open(name, "w", force_zip64=True) as f:
            chunk = b"\0" * (1 << 20)
            for _ in range(size // len(chunk)):
                f.write(chunk)
    return buf.getvalue()


def gzip_of_zeros(size: int) -> bytes:
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"\0" * (1 << 20)
    parts = [comp.compress(chunk) for _ in range(size // len(chunk))]
    parts.append(comp.flush())
    return b"".join(parts)


def overlapping_zip(copies: int, payload_size: int = 1 << 20) -> bytes:
    """One deflated member referenced by ``copies`` central-directory entries: each
    "file" inflates the same data again (the overlapping-entry zip bomb)."""
    payload = b"\0" * payload_size
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    data = comp.compress(payload) + comp.flush()
    crc = zlib.crc32(payload)
    name = b"a.csv"
    local = struct.pack(
        "<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, crc, len(data), len(payload), len(name), 0
    )
    body = local + name + data
    central = b""
    for i in range(copies):
        cname = name if i == 0 else f"a{i}.csv".encode()
        central += struct.pack(
            "<IHHHHHHIIIHHHHHII",
            0x02014B50, 20, 20, 0, 8, 0, 0, crc, len(data), len(payload),
            len(cname), 0, 0, 0, 0, 0, 0,
        ) + cname  # fmt: skip
    eocd = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, copies, copies, len(central), len(body), 0)
    return body + central + eocd


def gz(data: bytes, name: str | None = None) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename=name or "", mode="wb", fileobj=buf, mtime=0) as f:
        f.write(data)
    return buf.getvalue()


def tar_of(files: dict[str, bytes], *, symlink: tuple[str, str] | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        if symlink:
            info = tarfile.TarInfo(symlink[0])
            info.type = tarfile.SYMTYPE
            info.linkname = symlink[1]
            tf.addfile(info)
    return buf.getvalue()


def xls(rows: list[list], *, sheet: str = "Прайс") -> bytes:
    """A legacy .xls written by xlwt (a dev dependency, tests only)."""
    import xlwt

    wb = xlwt.Workbook(encoding="utf-8")
    ws = wb.add_sheet(sheet)
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            if value is not None:
                ws.write(r, c, value)
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
PDF = b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n"
