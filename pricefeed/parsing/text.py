"""Encoding and delimiter of text tables (csv, tsv, txt)."""

from __future__ import annotations

import codecs
import csv
import math
from collections import Counter

SAMPLE = 65536
DELIMITERS = (";", ",", "\t", "|")

# Letter frequencies of Russian text, per cent (case-folded; ё counted with е).
_RUSSIAN = {
    "о": 10.97, "е": 8.49, "а": 8.01, "и": 7.35, "н": 6.70, "т": 6.26, "с": 5.47,
    "р": 4.73, "в": 4.54, "л": 4.40, "к": 3.49, "м": 3.21, "д": 2.98, "п": 2.81,
    "у": 2.62, "я": 2.01, "ы": 1.90, "ь": 1.74, "г": 1.70, "з": 1.65, "б": 1.59,
    "ч": 1.44, "й": 1.21, "х": 0.97, "ж": 0.94, "ш": 0.73, "ю": 0.64, "ц": 0.48,
    "щ": 0.36, "э": 0.32, "ф": 0.26, "ъ": 0.04, "ё": 0.04,
}  # fmt: skip
# Non-letters a real price list uses above 0x7F (typographic quotes, dashes, №, NBSP...).
_COMMON_SYMBOLS = set("«»„“”‘’–—…№°±·\xa0•€™®©")


def _weights(encoding: str) -> list[float]:
    """Log-likelihood of each high byte under ``encoding`` being Russian text."""
    out = [0.0] * 256
    for b in range(128, 256):
        ch = bytes([b]).decode(encoding, "replace").lower()
        if ch in _RUSSIAN:
            out[b] = math.log(_RUSSIAN[ch] / 100)
        elif ch in _COMMON_SYMBOLS:
            out[b] = math.log(0.001)
        else:  # box drawing, control, undefined: what a wrong guess produces
            out[b] = math.log(0.00001)
    return out


_CYRILLIC = {enc: _weights(enc) for enc in ("cp1251", "koi8-r")}


def guess_cyrillic(sample: bytes) -> str:
    """cp1251 or koi8-r, whichever reads ``sample``'s high bytes as likelier Russian.

    Both encodings map most high bytes to Cyrillic letters, so "is it letters" does not
    tell them apart. Letter frequencies do: text in one encoding read as the other turns
    common letters (о, е, а) into rare ones (ю, э, ъ) and into the other case, and
    KOI8-R's box-drawing range into cp1251 punctuation. Case-folding first means an
    all-capitals price list scores the same as ordinary text.
    """
    counts = Counter(b for b in sample if b >= 128)
    if not counts:
        return "cp1251"
    scores = {
        enc: sum(n * weights[b] for b, n in counts.items()) for enc, weights in _CYRILLIC.items()
    }
    return max(scores, key=lambda enc: (scores[enc], enc == "cp1251"))


def detect_encoding(data: bytes) -> str:
    """The encoding of a text table: UTF-8 (with its BOM: "utf-8-sig"), UTF-16 with a
    BOM, otherwise cp1251 or koi8-r (see guess_cyrillic)."""
    if data.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    sample = data[:SAMPLE]
    try:
        codecs.getincrementaldecoder("utf-8")().decode(sample, final=len(data) <= SAMPLE)
    except UnicodeDecodeError:
        return guess_cyrillic(sample)
    return "utf-8"


def first_invalid_utf8(data: bytes) -> int | None:
    """Where ``data`` stops being UTF-8 (a byte offset), or None when all of it is;
    decoded a MiB at a time, at C speed."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(data)
    step = 1 << 20
    for start in [*range(0, len(view), step), len(view)]:
        # The decoder puts the bytes it holds from the last piece before this one.
        held = len(decoder.getstate()[0])
        try:
            decoder.decode(view[start : start + step], final=start == len(view))
        except UnicodeDecodeError as exc:
            return start - held + exc.start
    return None


# A file whose lines are UTF-8 save at most this share of the lines with non-ASCII bytes
# is read as UTF-8 (those lines are row errors); below it, as a Cyrillic code page.
UTF8_SHARE = 0.99


def mostly_utf8(data: bytes) -> bool:
    """Whether at least UTF8_SHARE of the lines that hold a non-ASCII byte decode as UTF-8.

    Gives up as soon as most of the first hundred non-ASCII lines (or more) do not: a
    file in a Cyrillic code page is judged on its first lines."""
    nonascii = bad = 0
    pos, size = 0, len(data)
    while pos < size:
        end = data.find(b"\n", pos + (1 << 20))
        end = size if end < 0 else end + 1
        chunk = data[pos:end]
        pos = end
        if chunk.isascii():
            continue
        for line in chunk.split(b"\n"):
            if not line.isascii():
                nonascii += 1
                try:
                    line.decode("utf-8")
                except UnicodeDecodeError:
                    bad += 1
                    if nonascii >= 100 and bad * 2 > nonascii:
                        return False
    return bad <= nonascii * (1 - UTF8_SHARE)


def choose_encoding(data: bytes) -> tuple[str, bool]:
    """(encoding, clean) of a text table; ``clean`` is False when some lines do not
    decode in it and are to be reported, not guessed at.

    UTF-16 with a BOM; UTF-8 with its BOM ("utf-8-sig"), whatever its lines; UTF-8 when
    all of the file decodes as such, or nearly every line that is not ASCII does
    (mostly_utf8: one bad byte past the first 64 KB no longer turns a whole Russian
    UTF-8 file into cp1251 mojibake); otherwise cp1251 or koi8-r (guess_cyrillic),
    judged on the first 64 KB, or on the bytes from where UTF-8 fails when those were
    UTF-8."""
    encoding = detect_encoding(data)
    if encoding.startswith("utf-16"):
        return encoding, True
    if encoding.startswith("utf-8"):
        invalid = first_invalid_utf8(data)
        if invalid is None:
            return encoding, True
        if encoding == "utf-8-sig" or mostly_utf8(data):
            return encoding, False
        return guess_cyrillic(data[invalid : invalid + SAMPLE * 16]), True
    if mostly_utf8(data):
        return "utf-8", False
    return encoding, True


def decode(data: bytes) -> tuple[str, str]:
    """(text, encoding), as choose_encoding() reads the file; bytes that do not decode
    (in a mostly-UTF-8 file, or undefined in cp1251) become U+FFFD."""
    encoding, _ = choose_encoding(data)
    return data.decode(encoding, "replace"), encoding


def detect_delimiter(text: str, complete: bool = True) -> str:
    """The delimiter among ; , tab | that splits the sample's lines most consistently.

    Reads the first 64 KB with the csv module once per candidate (quotes respected) and
    scores each by how many lines share its most common field count (>1), then by that
    count (``complete=False``: ``text`` is the head of a longer file, so its last line is
    dropped). A ';' file with decimal commas splits consistently on ',' too, but into fewer
    fields, so ';' wins; ties go to the order ; , tab |.
    """
    sample = text[:SAMPLE]
    if len(text) > SAMPLE or not complete:  # the last line may be cut short
        cut = sample.rfind("\n")
        if cut > 0:
            sample = sample[:cut]
    lines = sample.splitlines()
    best = (0, 0, 0)
    choice = ","
    for rank, delimiter in enumerate(DELIMITERS):
        try:
            widths = [len(row) for row in csv.reader(lines, delimiter=delimiter) if len(row) > 1]
        except csv.Error:
            continue
        if not widths:
            continue
        width, agreeing = Counter(widths).most_common(1)[0]
        score = (agreeing, width, -rank)
        if score > best:
            best = score
            choice = delimiter
    return choice
