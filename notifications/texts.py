"""The reasons notifications stores (a notification's and its send event's ``last_error``),
as msgids said in the reader's language by core.texts. ``smtp_error`` is registered on
import, which NotificationsConfig.ready does.

An SMTP server's refusal is said as a sentence of ours around the server's own reply
(its code and text, foreign text kept as it is): ``smtp_error``, which core.texts's
``error_text`` uses for every smtplib exception, so the outbox event's reason and the
notification's say the same.
"""

from __future__ import annotations

import smtplib

from core import texts
from core.texts import Text, gettext_noop

RECIPIENT_REFUSED = gettext_noop(
    "the SMTP server refused the recipient %(recipient)s (%(code)s %(reply)s)"
)
SENDER_REFUSED = gettext_noop("the SMTP server refused the sender %(sender)s (%(code)s %(reply)s)")
DATA_REFUSED = gettext_noop("the SMTP server refused the message (%(code)s %(reply)s)")
LOGIN_REFUSED = gettext_noop("the SMTP server refused the login (%(code)s %(reply)s)")
CONNECT_REFUSED = gettext_noop("could not connect to the SMTP server (%(code)s %(reply)s)")
SERVER_ANSWERED = gettext_noop("the SMTP server answered %(code)s %(reply)s")
DISCONNECTED = gettext_noop("the SMTP server closed the connection (%(reply)s)")
SMTP_ERROR = gettext_noop("SMTP error: %(reply)s")
# An operator's action (the admin's), stored in English with the user's name.
GIVEN_UP_BY = gettext_noop("given up by %(user)s")


def server_reply(reply: bytes | str) -> str:
    """A server's reply as one line of text (its bytes decoded, whitespace runs one space)."""
    text = reply.decode("utf-8", "replace") if isinstance(reply, bytes) else str(reply)
    return " ".join(text.split())


def smtp_error(error: BaseException) -> Text:
    """An smtplib exception as the text stored for it."""
    if isinstance(error, smtplib.SMTPRecipientsRefused) and error.recipients:
        recipient, (code, reply) = next(iter(error.recipients.items()))
        return Text(
            RECIPIENT_REFUSED, recipient=recipient, code=str(code), reply=server_reply(reply)
        )
    if isinstance(error, smtplib.SMTPSenderRefused):
        return Text(
            SENDER_REFUSED,
            sender=error.sender,
            code=str(error.smtp_code),
            reply=server_reply(error.smtp_error),
        )
    for kind, template in (
        (smtplib.SMTPDataError, DATA_REFUSED),
        (smtplib.SMTPAuthenticationError, LOGIN_REFUSED),
        (smtplib.SMTPConnectError, CONNECT_REFUSED),
        (smtplib.SMTPResponseException, SERVER_ANSWERED),
    ):
        if isinstance(error, kind):
            return Text(template, code=str(error.smtp_code), reply=server_reply(error.smtp_error))
    if isinstance(error, smtplib.SMTPServerDisconnected):
        return Text(DISCONNECTED, reply=server_reply(str(error)) or "-")
    return Text(SMTP_ERROR, reply=server_reply(str(error)))


def smtp_code(error: BaseException) -> str:
    """The SMTP reply code an smtplib exception carries ("" for none: no connection,
    a mail that could not be made)."""
    if isinstance(error, smtplib.SMTPRecipientsRefused) and error.recipients:
        (code, _reply_text) = next(iter(error.recipients.values()))
        return str(code)[:3]
    if isinstance(error, smtplib.SMTPResponseException):
        return str(error.smtp_code)[:3]
    return ""


texts.register_error(smtplib.SMTPException, smtp_error)
