"""What a file is, judged by its content only (a supplier's file name means little)."""

from __future__ import annotations

import io
import zipfile

from .archives import _central_directory_records

_WORKBOOK_PARTS = (b"[Content_Types].xml", b"_rels/", b"docProps/", b"xl/")
_OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")
# Bytes that never occur in a text table (NUL is tested separately; \x1a is the DOS EOF
# some old exporters append).
_CONTROL = bytes(c for c in range(32) if c not in (9, 10, 12, 13, 26))
_NOT_CONTROL = bytes(c for c in range(256) if c not in _CONTROL)

_MAGIC = (
    (b"%PDF-", "pdf"),
    (b"\x89PNG\r\n\x1a\n", "image"),
    (b"\xff\xd8\xff", "image"),
    (b"GIF87a", "image"),
    (b"GIF89a", "image"),
    (b"II*\x00", "image"),
    (b"MM\x00*", "image"),
    (b"Rar!\x1a\x07", "rar"),
    (b"7z\xbc\xaf\x27\x1c", "7z"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"MSCF\x00\x00\x00\x00", "cab"),
    (b"{\\rtf", "rtf"),
    (b"\x7fELF", "executable"),
)


def detect_format(data: bytes) -> str:
    """The file's kind from its bytes: "xlsx", "xlsm", "xls", "csv" (any delimited text),
    "zip", "gzip", "tar", or something parse() refuses: "pdf", "image", "rar", "7z",
    "bzip2", "xz", "xlsb", "ods", "docx", "doc", "encrypted" (password-protected Office
    file), "html", "xml", "rtf", "executable", "empty", "unknown"."""
    if not data:
        return "empty"
    if data[:4] in (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08"):
        return _zip_kind(data)
    if data[:2] == b"\x1f\x8b":
        return "gzip"
    if data[:8] == _OLE2:
        return _ole_kind(data)
    if data[:3] == b"BZh" and data[3:4].isdigit():
        return "bzip2"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image"
    if data[:2] == b"BM" and len(data) > 14 and data[6:10] == b"\0\0\0\0":
        return "image"
    for magic, kind in _MAGIC:
        if data.startswith(magic):
            return kind
    if data[:2] == b"MZ" and b"\0" in data[:64]:
        return "executable"
    if data[257:262] == b"ustar":
        return "tar"
    if b"%PDF-" in data[:1024]:
        return "pdf"
    return _text_kind(data)


def _zip_kind(data: bytes) -> str:
    # A workbook has a few dozen parts; the entry cap is enforced later, but do not build
    # a hundred thousand ZipInfo objects just to name the file.
    if _central_directory_records(data) > 10_000:
        return "zip"
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            names = set(zf.namelist())
            if "[Content_Types].xml" in names:
                with zf.open("[Content_Types].xml") as f:
                    types = f.read(1 << 20).lower()
                if "xl/workbook.xml" in names:
                    return "xlsm" if b"macroenabled" in types else "xlsx"
                if "xl/workbook.bin" in names:
                    return "xlsb"
                if "word/document.xml" in names:
                    return "docx"
                if "ppt/presentation.xml" in names:
                    return "pptx"
            if "mimetype" in names:
                with zf.open("mimetype") as f:
                    mimetype = f.read(200)
                if mimetype.startswith(b"application/vnd.oasis.opendocument.spreadsheet"):
                    return "ods"
                if mimetype.startswith(b"application/vnd.oasis.opendocument"):
                    return "odf"
    except Exception:
        # A damaged zip is still a zip (expand() or the workbook guard says what is wrong);
        # the first local header still names a truncated workbook's part.
        name_len = int.from_bytes(data[26:28], "little")
        if data[30 : 30 + name_len].startswith(_WORKBOOK_PARTS):
            return "xlsx"
        return "zip"
    return "zip"


def _ole_kind(data: bytes) -> str:
    """Compound-file (OLE2) documents: the stream names are UTF-16LE in the directory."""
    if "EncryptedPackage".encode("utf-16-le") in data:
        return "encrypted"  # a password-protected xlsx wrapped in OLE2
    for stream in ("Workbook", "WORKBOOK", "Book", "BOOK"):
        if stream.encode("utf-16-le") in data:
            return "xls"
    if "WordDocument".encode("utf-16-le") in data:
        return "doc"
    return "ole"


def _text_kind(data: bytes) -> str:
    sample = data[:65536]
    if sample.startswith(_BOMS):
        return "csv"
    if b"\0" in sample:
        return "unknown"
    controls = len(sample.translate(None, _NOT_CONTROL))
    if controls > len(sample) // 100:
        return "unknown"
    head = sample.lstrip()[:1024].lower()
    if head.startswith(b"<"):
        if head.startswith((b"<!doctype html", b"<html")) or b"<table" in head:
            return "html"
        if b"urn:schemas-microsoft-com:office:spreadsheet" in sample:
            return "xml-spreadsheet"  # Excel 2003 XML
        if head.startswith(b"<?xml"):
            return "xml"
    return "csv"
