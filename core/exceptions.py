"""Errors of the shared machinery."""


class CoreError(Exception):
    """Shared machinery was used in a way that could lose or duplicate work."""


class ClaimLost(CoreError):
    """The row is no longer claimed by this worker (swept back, taken over or finished)."""
