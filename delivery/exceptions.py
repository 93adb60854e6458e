from __future__ import annotations


class DeliveryError(Exception):
    """An event could not be delivered to an endpoint (retried by the outbox)."""


class EndpointNotAllowed(DeliveryError):
    """An endpoint's URL is not one pricefeed may deliver to (its scheme, its form)."""
