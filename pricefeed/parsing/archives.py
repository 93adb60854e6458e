"""Unpacking attachments in memory, under caps counted on the bytes as they inflate.

Nothing here touches the filesystem: archives are read from ``bytes`` and members come
back as ``bytes``. Entry names are only ever used as labels, but they are still checked:
an archive that carries an absolute name, a ``..`` component, a drive letter or a link
is refused as a whole (UnsafeEntryName). Skipping just that entry would hide an archive
built to attack some other unpacker, and a refusal is what the operator should see.

Python 3.11's zipfile trusts the central directory: it lacks gh-109858's check for
entries that share their data (the "overlapping" zip bomb), and builds one ZipInfo per
directory record before anyone can count them. Both are checked here first.

tarfile parses pax extended headers and GNU long names with regular expressions that
backtrack on long digit runs (CVE-2024-6232: minutes for an 80,000-digit header in a
241-byte .tar.gz on an unpatched interpreter) and reads them whole into memory. Whatever
the interpreter, check_tar_headers() reads the headers first, in linear time, and
refuses oversized or malformed ones (TarHeaderRefused) before tarfile sees the archive.
"""

from __future__ import annotations

import io
import lzma
import re
import stat
import struct
import tarfile
import unicodedata
import zipfile
import zlib
from collections.abc import Iterator

from core.storedtext import Text

from . import messages
from .errors import (
    ArchiveTooLarge,
    CorruptFile,
    FileTooLarge,
    NestingTooDeep,
    OverlappingEntries,
    TarHeaderRefused,
    TooManyEntries,
    TooManyFiles,
    UnsafeEntryName,
    UnsupportedArchive,
)
from .library_errors import described
from .types import Limits, Member

CHUNK = 1 << 16
# The ratio cap applies once a member has inflated past this: a small file of blanks
# compresses far better than 200:1 and is no threat.
RATIO_GRACE = 1 << 20

ARCHIVE_FORMATS = frozenset({"zip", "gzip", "tar"})
UNSUPPORTED_ARCHIVES = frozenset({"rar", "7z", "bzip2", "xz", "zstd", "cab", "arj"})

_DRIVE = re.compile(r"[A-Za-z]:")
_GZIP_SUFFIXES = (".tgz", ".gz", ".gzip")


def mib(n: int) -> str:
    if n >= 2**20 and n % 2**20 == 0:
        return Text(messages.MIB, count=n // 2**20)
    return Text(messages.BYTES, count=n)


class Budget:
    """What one attachment has used so far: inflated bytes, archive entries, and files
    found (``max_files``: the caller's cap on them, None for none)."""

    def __init__(self, limits: Limits, max_files: int | None = None) -> None:
        self.limits = limits
        self.inflated = 0
        self.entries = 0
        self.max_files = max_files
        # The attachment itself is one file until it opens as an archive; then its files
        # stand in its place, and so on down nested archives.
        self.files = 1
        # Paths of the entries left out as macOS metadata (is_macos_metadata).
        self.skipped: list[str] = []

    def open_archive(self, files: int, where: str) -> None:
        """An archive of ``files`` files (nested archives counted as one each, until
        opened) takes its own place in the count: refuse once they are too many."""
        self.files += files - 1
        if self.max_files is not None and self.files > self.max_files:
            raise TooManyFiles(
                Text(messages.TOO_MANY_FILES, where=where, files=self.files, limit=self.max_files)
            )

    def add_entries(self, n: int, where: str) -> None:
        self.entries += n
        if self.entries > self.limits.max_entries:
            raise TooManyEntries(
                Text(messages.TOO_MANY_ENTRIES, where=where, limit=self.limits.max_entries)
            )

    def charge(self, n: int, label: str, member_total: int, compressed: int, cap: int) -> None:
        """Account for ``n`` more inflated bytes of one member (``member_total`` so far)."""
        self.inflated += n
        limits = self.limits
        if member_total > cap:
            raise ArchiveTooLarge(Text(messages.INFLATES_PAST_CAP, label=label, limit=mib(cap)))
        if self.inflated > limits.max_total_inflated:
            raise ArchiveTooLarge(
                Text(
                    messages.INFLATES_PAST_TOTAL, label=label, limit=mib(limits.max_total_inflated)
                )
            )
        if member_total > RATIO_GRACE and member_total > limits.max_ratio * max(compressed, 1):
            raise ArchiveTooLarge(
                Text(
                    messages.INFLATES_PAST_RATIO,
                    label=label,
                    ratio=limits.max_ratio,
                    compressed=compressed,
                )
            )


def is_macos_metadata(path: str) -> bool:
    """Whether an archive entry is what macOS adds beside the files, never a price list:
    anything under ``__MACOSX/``, an AppleDouble companion ``._name`` (the resource fork
    of ``name``), a Finder ``.DS_Store``."""
    parts = path.split("/")
    return "__MACOSX" in parts[:-1] or parts[-1].startswith("._") or parts[-1] == ".DS_Store"


def sanitise_name(raw: str, where: str) -> str:
    """``raw`` as a safe relative path ("dir/file.csv"), or UnsafeEntryName. The name is
    NFC-normalised: macOS writes names decomposed ("й" as "и" and a breve), which look
    the same but match no pattern typed on another system."""
    if any(ord(ch) < 32 for ch in raw):
        raise UnsafeEntryName(Text(messages.NAME_CONTROL, where=where, name=repr(raw)))
    name = raw.replace("\\", "/")
    if name.startswith("/"):
        raise UnsafeEntryName(Text(messages.NAME_ABSOLUTE, where=where, name=repr(raw)))
    if _DRIVE.match(name):
        raise UnsafeEntryName(Text(messages.NAME_DRIVE, where=where, name=repr(raw)))
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeEntryName(Text(messages.NAME_CLIMBS, where=where, name=repr(raw)))
    if not parts:
        raise UnsafeEntryName(Text(messages.NAME_EMPTY, where=where, name=repr(raw)))
    return unicodedata.normalize("NFC", "/".join(parts))


# --- zip --------------------------------------------------------------------------------


def _central_directory_records(data: bytes) -> int:
    """Directory records in ``data`` counted without building them (0 if none found)."""
    eocd = data.rfind(b"PK\x05\x06", max(0, len(data) - 22 - 65535))
    if eocd < 0 or eocd + 22 > len(data):
        return 0
    total, cd_size = struct.unpack_from("<xxxxxxxxxxHL", data, eocd)
    cd_end = eocd
    if total == 0xFFFF or cd_size == 0xFFFFFFFF:
        locator = eocd - 20
        if locator >= 0 and data[locator : locator + 4] == b"PK\x06\x07":
            z64 = data.rfind(b"PK\x06\x06", 0, locator)
            if z64 >= 0 and z64 + 56 <= len(data):
                (cd_size,) = struct.unpack_from("<Q", data, z64 + 40)
                cd_end = z64
    return data.count(b"PK\x01\x02", max(0, cd_end - cd_size), cd_end)


def open_zip(data: bytes, where: str, budget: Budget) -> tuple[zipfile.ZipFile, list]:
    """A ZipFile over ``data`` after the entry-count and overlap checks, with its entries."""
    remaining = budget.limits.max_entries - budget.entries
    if _central_directory_records(data) > remaining:
        raise TooManyEntries(
            Text(messages.TOO_MANY_ENTRIES, where=where, limit=budget.limits.max_entries)
        )
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError) as exc:
        raise CorruptFile(Text(messages.ZIP_DAMAGED, where=where, error=described(exc))) from None
    infos = zf.infolist()
    budget.add_entries(len(infos), where)
    _check_overlaps(data, zf, infos, where)
    return zf, infos


def _check_overlaps(data: bytes, zf: zipfile.ZipFile, infos: list, where: str) -> None:
    """Refuse entries whose local header + data ranges overlap each other or the central
    directory (one compressed stream referenced many times inflates many times)."""
    spans = []
    for info in infos:
        start = info.header_offset
        if start < 0 or start + 30 > len(data) or data[start : start + 4] != b"PK\x03\x04":
            raise CorruptFile(
                Text(messages.NO_LOCAL_HEADER, where=where, name=repr(info.orig_filename))
            )
        name_len, extra_len = struct.unpack_from("<HH", data, start + 26)
        spans.append((start, start + 30 + name_len + extra_len + info.compress_size, info))
    spans.sort(key=lambda s: s[0])
    end_of_data = getattr(zf, "start_dir", len(data))
    prev_end = 0
    for start, end, info in spans:
        if start < prev_end:
            raise OverlappingEntries(
                Text(messages.ENTRIES_OVERLAP, where=where, name=repr(info.orig_filename))
            )
        prev_end = end
    if prev_end > end_of_data:
        raise OverlappingEntries(Text(messages.DATA_OVERLAPS_DIRECTORY, where=where))


def member_chunks(
    zf: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    label: str,
    budget: Budget,
    cap: int,
    size: int = CHUNK,
) -> Iterator[bytes]:
    """The inflated bytes of one zip entry in chunks, charged to ``budget`` as they come."""
    total = 0
    try:
        with zf.open(info) as f:
            while True:
                chunk = f.read(size)
                if not chunk:
                    return
                total += len(chunk)
                budget.charge(len(chunk), label, total, info.compress_size, cap)
                yield chunk
    except RuntimeError as exc:  # zipfile's "File ... is encrypted, password required"
        raise UnsupportedArchive(Text(messages.ENTRY_ENCRYPTED, label=label)) from exc
    except NotImplementedError as exc:
        raise UnsupportedArchive(Text(messages.ENTRY_COMPRESSION, label=label, error=exc)) from None
    except (zipfile.BadZipFile, zlib.error, lzma.LZMAError, EOFError, OSError, ValueError) as exc:
        raise CorruptFile(Text(messages.ENTRY_DAMAGED, label=label, error=described(exc))) from None


def entry_name(info: zipfile.ZipInfo) -> str:
    """The entry's name as its creator meant it: zip tools on Russian Windows write names
    in the OEM code page (cp866) without the UTF-8 flag; zipfile reads those as cp437."""
    name = info.orig_filename
    if not info.flag_bits & 0x800:
        try:
            raw = name.encode("cp437")
        except UnicodeEncodeError:
            return name
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw.decode("cp866")
    return name


def _is_link_or_special(info: zipfile.ZipInfo) -> str | None:
    """The template of the refusal of a link or a special file (None for a file or a
    directory)."""
    mode = info.external_attr >> 16
    kind = stat.S_IFMT(mode)
    if kind == stat.S_IFLNK:
        return messages.ENTRY_SYMLINK
    if kind and kind not in (stat.S_IFREG, stat.S_IFDIR):
        return messages.ENTRY_SPECIAL
    return None


def _expand_zip(data: bytes, prefix: str, depth: int, budget: Budget, out: list[Member]) -> None:
    where = Text(messages.ARCHIVE, path=prefix) if prefix else messages.ATTACHMENT_ARCHIVE
    zf, infos = open_zip(data, where, budget)
    with zf:
        files = []
        for info in infos:  # check every name before inflating anything
            name = sanitise_name(entry_name(info), where)
            problem = _is_link_or_special(info)
            if problem:
                raise UnsafeEntryName(Text(problem, where=where, name=repr(name)))
            if info.is_dir():
                continue
            if is_macos_metadata(name):
                budget.skipped.append(f"{prefix}/{name}" if prefix else name)
            else:
                files.append((info, name))
        budget.open_archive(len(files), where)
        for info, name in files:
            path = f"{prefix}/{name}" if prefix else name
            content = b"".join(
                member_chunks(
                    zf,
                    info,
                    Text(messages.ENTRY, path=path),
                    budget,
                    cap=budget.limits.max_file_bytes,
                )
            )
            _expand(content, path, name, depth, budget, out)


# --- gzip -------------------------------------------------------------------------------


def _gzip_name(data: bytes, fallback: str) -> str:
    """The FNAME from a gzip header, else ``fallback`` without its .gz suffix."""
    name = ""
    if len(data) >= 10 and data[3] & 8:
        pos = 10
        if data[3] & 4:
            pos = 12 + int.from_bytes(data[10:12], "little")
        end = data.find(b"\0", pos, pos + 1024)
        if end > pos:
            raw = data[pos:end]
            try:
                name = raw.decode("utf-8")
            except UnicodeDecodeError:
                name = raw.decode("latin-1")
            # Only the base name: the header is the creator's, not a path we trust.
            name = name.replace("\\", "/").rsplit("/", 1)[-1]
    if not name or name in (".", ".."):
        base = fallback.rsplit("/", 1)[-1]
        low = base.lower()
        for suffix in _GZIP_SUFFIXES:
            if low.endswith(suffix) and len(base) > len(suffix):
                base = base[: -len(suffix)] + (".tar" if suffix == ".tgz" else "")
                break
        name = base or "data"
    if any(ord(ch) < 32 for ch in name):
        name = "data"
    return unicodedata.normalize("NFC", name)


def gunzip(data: bytes, label: str, budget: Budget, cap: int) -> bytes:
    """All members of a gzip stream, inflated under the caps."""
    out = []
    total = 0
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    buf = data
    while True:
        try:
            chunk = d.decompress(buf, CHUNK)
        except zlib.error as exc:
            raise CorruptFile(
                Text(messages.GZIP_DAMAGED, label=label, error=described(exc))
            ) from None
        if chunk:
            total += len(chunk)
            budget.charge(len(chunk), label, total, len(data), cap)
            out.append(chunk)
        buf = d.unconsumed_tail
        if d.eof:
            rest = d.unused_data
            if rest[:2] == b"\x1f\x8b":  # concatenated members, as `cat a.gz b.gz` makes
                d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                buf = rest
                continue
            return b"".join(out)  # trailing padding is ignored, as gzip(1) does
        if not chunk and not buf:
            raise CorruptFile(Text(messages.GZIP_TRUNCATED, label=label))


# --- tar --------------------------------------------------------------------------------

BLOCK = 512
PAX_HEADER_CAP = 64 * 1024  # one pax extended header (tarfile reads it whole)
GNU_NAME_CAP = 4096  # one GNU long name or long link name ('L', 'K')
# The longest run of digits a pax header may hold: a record's length, a size or a time
# needs at most 20; a name rarely more. A run of n digits costs an unpatched tarfile n**2
# regex steps.
PAX_DIGIT_RUN = 128
_EXTENDED = re.compile(rb"[xgXLK]")
_DIGIT_RUN = re.compile(rb"[0-9]{%d}" % (PAX_DIGIT_RUN + 1))
_PAX_RECORD = re.compile(rb"([1-9][0-9]{0,%d}) " % (len(str(PAX_HEADER_CAP)) - 1))
_ASCII = bytes(range(128))


def check_tar_headers(data: bytes, where: str) -> None:
    """Refuse a tar whose pax extended headers ('x', 'g', Solaris 'X') are larger than
    PAX_HEADER_CAP, hold a run of more than PAX_DIGIT_RUN digits or a malformed record,
    or whose GNU long names ('L', 'K') are larger than GNU_NAME_CAP; GNU sparse files are
    refused too (UnsupportedArchive).

    tarfile only ever reads headers at block boundaries, so every 512-byte block whose
    type byte is one of those and whose checksum is valid is checked, wherever it sits
    (a stale or nested header is checked too: nothing tarfile could parse is missed,
    whatever sizes the headers before it claim). The type bytes of all blocks are taken
    in one slice; time is linear in the archive, memory a block plus one header."""
    types = data[156::BLOCK]
    for found in _EXTENDED.finditer(types):
        start = found.start() * BLOCK
        block = data[start : start + BLOCK]
        if len(block) < BLOCK or not _tar_checksum_ok(block):
            continue
        kind = chr(block[156])
        size = _tar_number(block[124:136])
        if size is None or size < 0:
            raise TarHeaderRefused(Text(messages.TAR_HEADER_SIZE, where=where, offset=start))
        if kind in "LK":
            if size > GNU_NAME_CAP:
                raise TarHeaderRefused(
                    Text(messages.TAR_LONG_NAME, where=where, size=size, limit=GNU_NAME_CAP)
                )
            continue
        if size > PAX_HEADER_CAP:
            raise TarHeaderRefused(
                Text(messages.TAR_PAX_SIZE, where=where, size=size, limit=PAX_HEADER_CAP // 1024)
            )
        _check_pax_records(data[start + BLOCK : start + BLOCK + size], where)


def _check_pax_records(records: bytes, where: str) -> None:
    """Every record "<length> <keyword>=<value>\\n", exactly ``length`` bytes; then only
    NUL padding."""
    run = _DIGIT_RUN.search(records)
    if run:
        raise TarHeaderRefused(Text(messages.TAR_PAX_DIGITS, where=where, limit=PAX_DIGIT_RUN))
    pos = 0
    size = len(records)
    while pos < size and records[pos]:
        found = _PAX_RECORD.match(records, pos)
        if not found:
            raise TarHeaderRefused(Text(messages.TAR_PAX_RECORD, where=where, offset=pos))
        end = pos + int(found.group(1))
        record = records[found.end() : end]
        if end > size or not record.endswith(b"\n") or b"=" not in record[1:-1]:
            raise TarHeaderRefused(Text(messages.TAR_PAX_RECORD, where=where, offset=pos))
        if record.startswith(b"GNU.sparse."):
            raise UnsupportedArchive(Text(messages.TAR_PAX_SPARSE, where=where))
        pos = end
    if records[pos:].strip(b"\0"):
        raise TarHeaderRefused(Text(messages.TAR_PAX_TRAILING, where=where))


def _tar_checksum_ok(block: bytes) -> bool:
    """Whether a block is a tar header as tarfile judges one: its checksum field matches
    the unsigned or the signed byte sum (the field itself counted as spaces)."""
    stored = _tar_number(block[148:156])
    if stored is None:
        return False
    field = block[148:156]
    unsigned = 256 + sum(block) - sum(field)
    high = len(block.translate(None, _ASCII)) - len(field.translate(None, _ASCII))
    return stored in (unsigned, unsigned - 256 * high)


def _tar_number(field: bytes) -> int | None:
    """A tar number field: octal text up to its first NUL, or GNU base-256."""
    if field[:1] in (b"\x80", b"\xff"):
        value = int.from_bytes(field[1:], "big")
        return value - 256 ** (len(field) - 1) if field[:1] == b"\xff" else value
    text = field.split(b"\0", 1)[0].strip()
    try:
        return int(text or b"0", 8)
    except ValueError:
        return None


def _expand_tar(data: bytes, prefix: str, depth: int, budget: Budget, out: list[Member]) -> None:
    """Plain tar (its compression, if any, was a gzip layer already inflated under the
    caps). Its headers are checked first (check_tar_headers). Tar members are copies,
    not inflations: they count against entries and the per-file cap only."""
    where = Text(messages.ARCHIVE, path=prefix) if prefix else messages.ATTACHMENT_ARCHIVE
    check_tar_headers(data, where)
    try:
        tf = tarfile.open(fileobj=io.BytesIO(data), mode="r:")  # "r:" never decompresses
    except tarfile.TarError as exc:
        raise CorruptFile(Text(messages.TAR_DAMAGED, where=where, error=described(exc))) from None
    files = []
    with tf:
        try:
            for m in tf:
                budget.add_entries(1, where)
                name = sanitise_name(m.name, where)
                if m.issym() or m.islnk():
                    raise UnsafeEntryName(Text(messages.TAR_LINK, where=where, name=repr(name)))
                if m.isdir():
                    continue
                if not m.isreg():
                    raise UnsafeEntryName(Text(messages.TAR_SPECIAL, where=where, name=repr(name)))
                if m.issparse():
                    raise UnsupportedArchive(
                        Text(messages.TAR_SPARSE, where=where, name=repr(name))
                    )
                if is_macos_metadata(name):  # bsdtar on macOS adds "._" companions too
                    budget.skipped.append(f"{prefix}/{name}" if prefix else name)
                    continue
                if m.size > budget.limits.max_file_bytes:
                    raise ArchiveTooLarge(
                        Text(
                            messages.TAR_ENTRY_TOO_LARGE,
                            path=name,
                            limit=mib(budget.limits.max_file_bytes),
                        )
                    )
                files.append((m, name))
            budget.open_archive(len(files), where)
            for m, name in files:
                f = tf.extractfile(m)
                content = f.read() if f is not None else b""
                path = f"{prefix}/{name}" if prefix else name
                _expand(content, path, name, depth, budget, out)
        except tarfile.TarError as exc:
            raise CorruptFile(
                Text(messages.TAR_DAMAGED, where=where, error=described(exc))
            ) from None


# --- entry point ------------------------------------------------------------------------


def expand(
    data: bytes,
    name: str,
    limits: Limits,
    *,
    max_files: int | None = None,
    skipped: list[str] | None = None,
) -> list[Member]:
    """The files inside an attachment, in archive order, all in memory.

    zip, gzip and tar are opened, nested up to ``limits.max_depth`` levels (the
    attachment's own archive is level 1); xlsx/xlsm (zips themselves) are files, not
    archives. Directories are skipped, and so is what macOS adds beside the files
    (``__MACOSX/``, ``._name``, ``.DS_Store``: is_macos_metadata); their paths are
    appended to ``skipped`` when given. A non-archive comes back as
    ``[Member("", data)]``; a member's path is its sanitised, NFC-normalised path inside
    the archive, nested ones joined with "/" ("inner.zip/prices.csv"); a gzip's member is
    named from its header or from ``name`` without ".gz". An archive with no files gives
    ``[]``.

    ``max_files``: refuse (TooManyFiles) as soon as the files found exceed it, before
    inflating any more: an archive's files are counted from its directory when it is
    opened, a nested archive counting as one file until it is opened in turn.

    Raises FileTooLarge, the ArchiveRefused family (ArchiveTooLarge, TooManyEntries,
    TooManyFiles, NestingTooDeep, UnsafeEntryName, OverlappingEntries, TarHeaderRefused),
    UnsupportedArchive (rar, 7z, bzip2, xz, encrypted zips) and CorruptFile.
    """
    if len(data) > limits.max_file_bytes:
        raise FileTooLarge(
            Text(
                messages.ATTACHMENT_TOO_LARGE,
                where=messages.ATTACHMENT,
                size=len(data),
                limit=mib(limits.max_file_bytes),
            )
        )
    if max_files is not None and max_files < 1:
        raise TooManyFiles(
            Text(messages.NO_FILES_TAKEN, where=messages.ATTACHMENT, limit=max_files)
        )
    out: list[Member] = []
    budget = Budget(limits, max_files)
    _expand(data, "", name or "", 0, budget, out)
    if skipped is not None:
        skipped.extend(budget.skipped)
    return out


def _expand(
    data: bytes, path: str, name: str, depth: int, budget: Budget, out: list[Member]
) -> None:
    from .detect import detect_format

    fmt = detect_format(data)
    if fmt in UNSUPPORTED_ARCHIVES:
        where = f"'{path}'" if path else messages.ATTACHMENT
        raise UnsupportedArchive(Text(messages.ARCHIVE_UNSUPPORTED, format=fmt, where=where))
    if fmt not in ARCHIVE_FORMATS:
        out.append(Member(path, data))
        return
    if depth + 1 > budget.limits.max_depth:
        raise NestingTooDeep(
            Text(messages.NESTED_TOO_DEEP, path=path, limit=budget.limits.max_depth)
        )
    if fmt == "zip":
        _expand_zip(data, path, depth + 1, budget, out)
    elif fmt == "tar":
        _expand_tar(data, path, depth + 1, budget, out)
    else:
        inner_name = _gzip_name(data, name)
        label = Text(messages.GZIP, path=path or name) if path or name else messages.ATTACHMENT
        content = gunzip(data, label, budget, cap=budget.limits.max_file_bytes)
        inner_path = f"{path}/{inner_name}" if path else inner_name
        _expand(content, inner_path, inner_name, depth + 1, budget, out)
