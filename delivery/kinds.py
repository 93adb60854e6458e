"""The outbox event kinds delivered to other systems, and the send events of a delivery.

The kinds are the names other systems rely on (``offer.changed``, ``price.changed``,
``import.finished``); the apps publishing them own them, this app only reads them, by
name.
"""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class EventKind(models.TextChoices):
    OFFER_CHANGED = "offer.changed", _("offer changed")
    PRICE_CHANGED = "price.changed", _("price changed")
    IMPORT_FINISHED = "import.finished", _("import finished")


# The outbox events that carry one delivery each to its endpoint.
SEND_WEBHOOK = "delivery.webhook"
SEND_AMQP = "delivery.amqp"
