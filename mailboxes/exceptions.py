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


class CredentialsMissing(ImapError):
    """No password is stored for the mailbox's server (it changed since one was entered)."""


class ServerClosed(ImapError):
    """The server closed the connection."""


class ImapSettingsError(ImapError):
    """pricefeed's own IMAP settings prevent this connection; the message names the
    setting. Raised with a ``texts.Text``, to be shown translated."""


class AddressNotAllowed(ImapSettingsError):
    """The host is, or resolves to, an address outside the public internet that
    PRICEFEED_IMAP_ALLOWED_NETWORKS does not hold."""


class PlainNotAllowed(ImapSettingsError):
    """Plain-text IMAP while PRICEFEED_IMAP_ALLOW_PLAIN is off."""


class MessageRefused(MailboxesError):
    """A message pricefeed will not read: it is over one of the MIME budgets (parts,
    nesting, header fields, encoded words, parameters, time, memory) or broken beyond
    reading. ``str(exc)`` is the reason for operators; the message ends REJECTED."""
