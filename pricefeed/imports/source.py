"""Where an import's bytes come from: the stored message, an attachment in it, a file
inside an archive attachment."""

from __future__ import annotations

import hashlib
import unicodedata

from core.texts import Text, gettext_noop
from mailboxes.exceptions import RawMessageMissing
from mailboxes.mime import attachment_payload
from mailboxes.selectors import message_raw
from pricefeed import parsing
from pricefeed.limits import parse_limits
from pricefeed.matching import member_key
from pricefeed.models import PriceImport

ARCHIVES = ("zip", "gzip")
# Why an import FAILED, stored in English and translated where it is shown
# (pricefeed.texts).
ARCHIVE_OPENS_NOW = gettext_noop(
    "the archive can be opened now (limits changed?): reprocess the message to import the "
    "files inside it"
)
NOT_IN_ARCHIVE = gettext_noop("file %(path)s is no longer in the archive")
RAW_MISSING = gettext_noop("the message's raw bytes are not stored")


def import_file(price_import: PriceImport) -> tuple[bytes, str]:
    """(bytes of the file an import reads, their sha256)."""
    part, _, path = price_import.attachment_key.partition("/")
    try:
        raw = message_raw(price_import.message_id)
    except RawMessageMissing:
        raise parsing.ParseError(RAW_MISSING) from None
    payload = attachment_payload(raw, part)
    digest = hashlib.sha256(payload).hexdigest()
    if not path and price_import.sha256 and digest != price_import.sha256:
        # The attachment's digest, recorded when the import was created, must match:
        # if the quick MIME reader cut out another part, let the email parser decide.
        payload = attachment_payload(raw, part, quick=False)
        digest = hashlib.sha256(payload).hexdigest()
    del raw
    limits = parse_limits()
    if not path:
        if parsing.detect_format(payload) in ARCHIVES:
            # Imported whole only when it could not be opened when the message was
            # matched: opening it again gives the reason (or says what changed).
            parsing.expand(payload, price_import.filename, limits)
            raise parsing.ParseError(ARCHIVE_OPENS_NOW)
        return payload, digest
    # Paths inside archives are NFC now; an import made before that has the name as the
    # archive wrote it (decomposed, from macOS).
    wanted = unicodedata.normalize("NFC", price_import.attachment_key)
    for member in parsing.expand(payload, price_import.filename, limits):
        if member_key(part, member.path) == wanted:
            return member.data, hashlib.sha256(member.data).hexdigest()
    raise parsing.ParseError(Text(NOT_IN_ARCHIVE, path=repr(path)))
