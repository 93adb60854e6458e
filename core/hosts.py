"""Where a connection goes: whether an address keeps its traffic on this host."""

from __future__ import annotations

import ipaddress


def loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (``127.0.0.0/8``, ``::1``) or
    ``localhost``: what is sent there never crosses a network. A host name other
    than ``localhost`` is not: it may resolve anywhere."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
