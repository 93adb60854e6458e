"""Why mail could not be received or recorded."""

from __future__ import annotations


class MailboxesError(Exception):
    """Something went wrong receiving mail."""


class LeaseLost(MailboxesError):
    """This instance no longer holds the mailbox's lease (or its token is stale)."""


class UidValidityChanged(MailboxesError):
    """The folder's UIDVALIDITY is not the one the checkpoint was written under."""


class RawMessageMissing(MailboxesError):
    """The message's raw bytes are not stored (it was refused before download)."""


class ImapError(MailboxesError):
    """The IMAP server could not be used."""


class FolderMissing(ImapError):
    """The configured folder does not exist on the server."""


class CredentialsUnreadable(ImapError):
    """The stored password cannot be decrypted with the configured keys."""


class ServerClosed(ImapError):
    """The server closed the connection."""


class MessageRefused(MailboxesError):
    """A message pricefeed will not read: it is over one of the MIME budgets (parts,
    nesting, header fields, encoded words, parameters, time, memory) or broken beyond
    reading. ``str(exc)`` is the reason for operators; the message ends REJECTED."""
