"""The sentences mailboxes stores for operators (a message's reasons and warnings), as
msgids: each is stored as a ``Text`` (a msgid and its values) and said in the reader's
language by core.texts where it is shown. A value that is foreign text (a server's reply,
a library's exception) stays as it is inside the translated sentence.
"""

from __future__ import annotations

from core.texts import Text, as_json, gettext_noop, shown, text_of, translated, translated_all

__all__ = ["Text", "as_json", "shown", "text_of", "translated", "translated_all"]

# recording.py: a message refused before it is processed.
MESSAGE_TOO_LARGE = gettext_noop(
    "message is %(size)s bytes, over the limit of %(limit)s bytes "
    "(PRICEFEED_MAX_MESSAGE_BYTES); body not stored"
)
NOT_RECORDED = gettext_noop("could not record message: %(error)s")
DUPLICATE_MESSAGE_ID = gettext_noop(
    "Message-ID %(message_id)s was already recorded (message %(first)s) with different "
    "content; this copy is kept for inspection and not processed"
)
FIRST_BY_UID = gettext_noop("uid %(uid)s")
NO_MESSAGE_ID_HASHED = gettext_noop(
    "no Message-ID header: duplicates are recognised by content hash"
)
NO_MESSAGE_ID = gettext_noop("no Message-ID header")
FROM_SHOWS_ANOTHER_ADDRESS = gettext_noop(
    "the From field's display name or a comment shows the address %(shown)s, but the "
    "message is from %(address)s"
)

# mime.py and mimebudget.py: warnings, and refusals over the MIME budget.
MORE_NOTES = gettext_noop("... and %(count)s more")
UNREADABLE_FILENAME = gettext_noop("part %(part)s: unreadable filename (%(error)s)")
NESTED_TOO_DEEP = gettext_noop("MIME parts nested too deep for the parser")
UNREADABLE_MESSAGE = gettext_noop("the email parser cannot read the message (%(error)s)")
TOO_MANY_PARTS = gettext_noop("more than %(limit)s MIME parts (PRICEFEED_MIME_MAX_PARTS)")
TOO_DEEP = gettext_noop("MIME parts nested more than %(limit)s deep (PRICEFEED_MIME_MAX_DEPTH)")
HEADER_TOO_LARGE = gettext_noop(
    "a header block is over %(limit)s bytes (PRICEFEED_MIME_MAX_HEADER_BYTES)"
)
TOO_MANY_FIELDS = gettext_noop(
    "a header block has more than %(limit)s fields (PRICEFEED_MIME_MAX_HEADER_FIELDS)"
)
TOO_MANY_ENCODED_WORDS = gettext_noop(
    "header %(header)s holds more than %(limit)s encoded words (PRICEFEED_MIME_MAX_ENCODED_WORDS)"
)
TOO_MANY_PARAMS = gettext_noop(
    "header %(header)s has more than %(limit)s parameters (PRICEFEED_MIME_MAX_PARAMS)"
)
TOO_MANY_COMMENTS = gettext_noop(
    "header %(header)s holds more than %(limit)s comments and quoted strings "
    "(PRICEFEED_MIME_MAX_COMMENTS)"
)
FIELD_TOO_LONG = gettext_noop(
    "header %(header)s is longer than %(limit)s bytes (PRICEFEED_MIME_MAX_CONTENT_FIELD_BYTES)"
)
CONTENT_FIELDS_TOO_LONG = gettext_noop(
    "the Content-Type and Content-Disposition fields of the message are longer than "
    "%(limit)s bytes together (PRICEFEED_MIME_MAX_CONTENT_BYTES)"
)

# listener.py: what a listener that lost its lease says (stored as the mailbox's error).
LEASE_NOT_RENEWED = gettext_noop("lease on mailbox %(mailbox)s not renewed in time")
LEASE_LOST_IN_STEP = gettext_noop(
    "lease on mailbox %(mailbox)s not renewed in time; the step under way failed: %(error)s"
)
UIDVALIDITY_CHANGED = gettext_noop("UIDVALIDITY changed from %(old)s to %(new)s")
UIDVALIDITY_MISMATCH = gettext_noop("checkpoint has UIDVALIDITY %(checkpoint)s, server %(server)s")
