"""A library's own error (zipfile, tarfile, gzip, calamine) said in our words: its text
is English and written for a programmer, while the reason of a failed import is read
by an operator and, in the mail, by the supplier."""

from __future__ import annotations

from core.storedtext import Text

from . import messages as m

# Our sentence for the errors a damaged file commonly gives, by how the library's
# message starts; the rest get a general one.
SENTENCES = {
    "File is not a zip file": m.NOT_A_ZIP,
    "Bad magic number for file header": m.NOT_A_ZIP,
    "Truncated file header": m.ZIP_TRUNCATED,
    "Compressed file ended before the end-of-stream marker was reached": m.ZIP_TRUNCATED,
    "Bad CRC-32": m.CHECKSUM_WRONG,
    "CRC check failed": m.CHECKSUM_WRONG,
    "Not a gzipped file": m.NOT_GZIP,
}


def described(error: BaseException) -> Text:
    """Our sentence for a library's error."""
    message = str(error)
    for start, sentence in SENTENCES.items():
        if message.startswith(start):
            return Text(sentence)
    return Text(m.STRUCTURE_UNREADABLE)
