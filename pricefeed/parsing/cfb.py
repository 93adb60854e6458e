"""One stream out of a compound file (OLE2 / [MS-CFB]: the container of a legacy .xls),
read here, checked, before python-calamine reads it.

Calamine's compound-file reader (python-calamine 0.9.1) trusts the file: it sizes
buffers from the header's and the directory's claims (``Vec::with_capacity(len)``),
grows its sector buffer to whatever sector number a chain names (a sector id of 2**31 is
a terabyte), and follows sector chains until ENDOFCHAIN, so a chain that loops grows
memory forever. Each of those aborts the whole process. So this reader follows the same
path (header, DIFAT, FAT, directory, mini stream, the wanted stream) and refuses, as
CorruptFile, every chain that loops or leaves the file and every size claimed beyond the
file's own (a truncated file, or a memory bomb), and, as WorkbookRefused, the one claim
calamine misreads (its DIFAT size) when it is absurd. It reads nothing calamine would
not, in time linear in the file's size.
"""

from __future__ import annotations

import sys
from array import array

from core.storedtext import Text

from . import messages
from .errors import CorruptFile, WorkbookRefused

SIGNATURE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
ENDOFCHAIN = 0xFFFFFFFE
DIFSECT = 0xFFFFFFFC
RESERVED = 0xFFFFFFFA  # ids from here up are markers, not sectors
MINI_SECTOR = 64
MINI_CUTOFF = 4096  # calamine reads a stream shorter than this from the mini stream
# Calamine reserves a DIFAT of as many entries as the u32 at header offset 62 says (a
# misreading that mixes two fields: 65,535 in a typical file). More than this is not a
# file but a memory claim.
DIFAT_CLAIM_CAP = 1 << 24


def _u32s(raw: bytes | memoryview) -> array:
    values = array("I")
    values.frombytes(raw[: len(raw) // 4 * 4])
    if sys.byteorder == "big":
        values.byteswap()
    return values


class CompoundFile:
    """A compound file's directory and sector chains, checked as calamine will use them.

    ``stream(*names)`` is the first stream named like one of ``names`` (tried in order),
    its bytes as calamine will read them, or None when there is none."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        if len(data) < 512 or data[:8] != SIGNATURE:
            raise CorruptFile(messages.CFB_NO_HEADER)
        header = memoryview(data)[:512]
        version = int.from_bytes(header[26:28], "little")
        shift = int.from_bytes(header[30:32], "little")
        if shift not in (9, 12):
            raise CorruptFile(Text(messages.CFB_SECTOR_SHIFT, shift=shift))
        if int.from_bytes(header[32:34], "little") != 6:
            raise CorruptFile(messages.CFB_MINI_SHIFT)
        self.version = version
        self.size = 1 << shift
        if len(data) < self.size:
            raise CorruptFile(messages.CFB_HEADER_CUT)
        # Sectors present in the file (the last one may be cut short).
        self.sectors = -(-(len(data) - self.size) // self.size)

        def u32(at: int) -> int:
            return int.from_bytes(header[at : at + 4], "little")

        dir_len, fat_len, dir_start = u32(40), u32(44), u32(48)
        mini_fat_start, mini_fat_len, difat_start = u32(60), u32(64), u32(68)
        if u32(62) > DIFAT_CLAIM_CAP:
            raise WorkbookRefused(
                Text(messages.CFB_DIFAT_CLAIM, claimed=u32(62), limit=DIFAT_CLAIM_CAP)
            )
        self._claim(messages.CFB_FAT, fat_len * self.size, len(data))
        self._claim(messages.CFB_DIRECTORY, dir_len * self.size, len(data))
        self._claim(messages.CFB_MINI_FAT, mini_fat_len * self.size, len(data))

        # The DIFAT: 109 entries in the header, then a chain of DIFAT sectors, each
        # ending with the number of the next.
        difat = _u32s(header[76:512])
        seen = bytearray(self.sectors)
        sector_id = difat_start
        while sector_id < RESERVED:
            self._check_sector(sector_id, seen, messages.CFB_DIFAT_CHAIN)
            difat.extend(_u32s(self._sector(sector_id)))
            sector_id = difat.pop()
        fat = array("I")
        for sector_id in difat:
            if sector_id < DIFSECT:  # calamine reads every id below DIFSECT as a FAT sector
                if sector_id >= self.sectors:
                    raise CorruptFile(Text(messages.CFB_FAT_SECTOR, sector=sector_id))
                fat.extend(_u32s(self._sector(sector_id)))
        self.fat = fat

        directory = self._chain(dir_start, self.fat, messages.CFB_DIRECTORY, dir_len * self.size)
        if len(directory) % 128:
            raise CorruptFile(messages.CFB_ENTRY_CUT)
        self.entries = [
            self._entry(memoryview(directory)[i : i + 128]) for i in range(0, len(directory), 128)
        ]
        if not self.entries or (version != 3 and self.entries[0][1] == ENDOFCHAIN):
            raise CorruptFile(messages.CFB_EMPTY_ROOT)
        self.ministream = b""
        self.minifat = array("I")
        if mini_fat_len > 0:
            _, root_start, root_len = self.entries[0]
            self._claim(messages.CFB_MINI_STREAM, root_len, len(data))
            self.ministream = self._chain(root_start, self.fat, messages.CFB_MINI_STREAM, root_len)
            self.minifat = _u32s(
                self._chain(
                    mini_fat_start, self.fat, messages.CFB_MINI_FAT, mini_fat_len * self.size
                )
            )

    def stream(self, *names: str) -> bytes | None:
        for wanted in names:
            for name, start, length in self.entries:
                if name == wanted:
                    label = Text(messages.CFB_STREAM, name=name)
                    if length < MINI_CUTOFF:
                        return self._mini_chain(start, label, length)
                    self._claim(label, length, len(self.data))
                    return self._chain(start, self.fat, label, length)
        return None

    # --- internals ---------------------------------------------------------------------

    def _claim(self, what: str, claimed: int, cap: int) -> None:
        # Calamine reserves what is claimed before reading: a claim past the file's size
        # (truncation, or a memory bomb) is refused before it can.
        if claimed > cap:
            raise CorruptFile(Text(messages.CFB_CLAIM, claimed=claimed, what=what, size=cap))

    def _sector(self, sector_id: int) -> bytes:
        start = self.size + sector_id * self.size
        return self.data[start : start + self.size]

    def _check_sector(self, sector_id: int, seen: bytearray, what: str) -> None:
        if sector_id >= self.sectors:
            raise CorruptFile(
                Text(messages.CFB_SECTOR_PAST_END, what=what, sector=f"{sector_id:#x}")
            )
        if seen[sector_id]:
            raise CorruptFile(Text(messages.CFB_LOOP, what=what, sector=sector_id))
        seen[sector_id] = 1

    def _chain(self, start: int, fat: array, what: str, length: int) -> bytes:
        """The sectors of a chain, cut to ``length`` when it is not 0 (as calamine)."""
        seen = bytearray(self.sectors)
        pieces = []
        sector_id = start
        while sector_id != ENDOFCHAIN:
            self._check_sector(sector_id, seen, what)
            if sector_id >= len(fat):
                raise CorruptFile(Text(messages.CFB_PAST_FAT, what=what))
            pieces.append(self._sector(sector_id))
            sector_id = fat[sector_id]
        out = b"".join(pieces)
        return out[:length] if length else out

    def _mini_chain(self, start: int, what: str, length: int) -> bytes:
        ministream, minifat = self.ministream, self.minifat
        count = -(-len(ministream) // MINI_SECTOR)
        seen = bytearray(count)
        pieces = []
        sector_id = start
        while sector_id != ENDOFCHAIN:
            if sector_id >= count or sector_id >= len(minifat):
                raise CorruptFile(
                    Text(messages.CFB_MINI_PAST_END, what=what, sector=f"{sector_id:#x}")
                )
            if seen[sector_id]:
                raise CorruptFile(Text(messages.CFB_MINI_LOOP, what=what, sector=sector_id))
            seen[sector_id] = 1
            at = sector_id * MINI_SECTOR
            pieces.append(ministream[at : at + MINI_SECTOR])
            sector_id = minifat[sector_id]
        out = b"".join(pieces)
        return out[:length] if length else out

    def _entry(self, raw: memoryview) -> tuple[str, int, int]:
        """(name, first sector, length) of a 128-byte directory entry, read as calamine:
        the name up to its first NUL, a 64-bit length in 4096-byte-sector files."""
        name = bytes(raw[:64]).decode("utf-16-le", "replace").split("\0", 1)[0]
        start = int.from_bytes(raw[116:120], "little")
        length = int.from_bytes(raw[120:124] if self.size == 512 else raw[120:128], "little")
        return name, start, length
