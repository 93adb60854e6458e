"""The reasons a delivery stores, in English, shown translated (core.texts)."""

from __future__ import annotations

from core import texts
from core.texts import Text, gettext_noop, text_of

from .exceptions import DeliveryError

HTTP_STATUS = gettext_noop("the webhook answered HTTP %(status)s: %(detail)s")
HTTP_FAILED = gettext_noop("the webhook could not be reached: %(detail)s")
AMQP_FAILED = gettext_noop("RabbitMQ could not be reached: %(detail)s")
AMQP_UNROUTABLE = gettext_noop(
    "RabbitMQ returned the message: no queue is bound for routing key %(key)s"
)
AMQP_NACKED = gettext_noop("RabbitMQ refused the message (nack)")
AMQP_CHANNEL = gettext_noop("RabbitMQ closed the channel: %(detail)s")
NOT_ALLOWED = gettext_noop("the endpoint's address is not allowed: %(detail)s")
NO_EVENT = gettext_noop("the event %(event)s is gone from the outbox")


def _described(error: BaseException) -> Text:
    """A delivery's own errors are their reason as it is (no exception name before it)."""
    return text_of(error)


texts.register_error(DeliveryError, _described)
