"""django-q2 entry points of this app: load by id, call one service."""

from __future__ import annotations

from . import services


def mailbox_test_connection(mailbox_id: int) -> bool | None:
    """*Test connection* of one mailbox (enqueued by ``services.mailbox_tests_request``)."""
    return services.mailbox_test_run(mailbox_id=mailbox_id)
