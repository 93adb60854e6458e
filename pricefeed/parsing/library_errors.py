"""A library's own error (zipfile, tarfile, gzip, calamine, csv) said in our words: its text
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


# The csv module's errors, by how its message starts.
CSV_SENTENCES = {
    "line contains NUL": m.CSV_NUL,
    "new-line character seen in unquoted field": m.CSV_NEW_LINE,
    "unexpected end of data": m.CSV_CUT_SHORT,
}


def csv_described(error: BaseException) -> Text:
    """Our sentence for a csv.Error: one of ours raised as csv would (a Text) as it is,
    the csv module's own by its message."""
    (message,) = error.args[:1] or ("",)
    if isinstance(message, Text):
        return message
    message = str(message)
    if message.startswith("field larger than field limit"):
        return Text(m.CSV_FIELD_TOO_LARGE, limit=message.rpartition("(")[2].rstrip(")"))
    if message.endswith("expected after '\"'"):
        return Text(m.CSV_AFTER_QUOTE)
    for start, sentence in CSV_SENTENCES.items():
        if message.startswith(start):
            return Text(sentence)
    return Text(m.STRUCTURE_UNREADABLE)
