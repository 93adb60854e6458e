class MailboxesError(Exception):
    """Something went wrong receiving mail."""


class LeaseLost(MailboxesError):
    """This instance no longer holds the mailbox's lease (or its token is stale)."""


class UidValidityChanged(MailboxesError):
    """The folder's UIDVALIDITY is not the one the checkpoint was written under."""


class ClaimLost(MailboxesError):
    """The message is no longer claimed by this worker (swept back or taken over)."""
