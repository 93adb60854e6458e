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


def decode(data: bytes) -> tuple[str, str]:
    """(text, encoding). A file whose first 64 KB looked like UTF-8 but turns out not to
    be is read as Cyrillic after all; bytes undefined in cp1251 become U+FFFD."""
    encoding = detect_encoding(data)
    try:
        return data.decode(encoding), encoding
    except UnicodeDecodeError:
        if encoding.startswith("utf-16"):
            return data.decode(encoding, "replace"), encoding
        if encoding.startswith("utf-8"):
            encoding = guess_cyrillic(data[: SAMPLE * 16])
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
