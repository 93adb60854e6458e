from __future__ import annotations


class FleetError(Exception):
    """A process of this installation cannot run alongside the others."""


class BrokerMismatch(FleetError):
    """This process would hand work to another django-q2 broker than the live processes."""
