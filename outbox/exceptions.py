class OutboxError(Exception):
    """The outbox was used in a way that could lose or invent events."""


class NotInTransaction(OutboxError):
    """publish() was called outside the transaction that makes the change it announces."""
