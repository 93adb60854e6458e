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


def parse_networks(values: list[str]) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """Addresses and networks as written in a setting ("127.0.0.1", "10.0.0.0/8", "::1");
    ValueError names the one that is neither."""
    networks = []
    for value in values:
        try:
            networks.append(ipaddress.ip_network(value.strip(), strict=False))
        except ValueError:
            raise ValueError(f"{value!r} is not an IP address or network") from None
    return tuple(networks)


def client_address(
    remote: str | None,
    forwarded_for: str | None,
    trusted: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...],
) -> str | None:
    """The address a request came from: the connection's own (``remote``), unless it is a
    trusted proxy; then the nearest address in X-Forwarded-For that is not a trusted
    proxy, read from the right (the entries a client wrote itself are on the left, and
    are never believed past an untrusted one). A malformed entry ends the walk at the
    last address believed."""

    def is_trusted(address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in network for network in trusted)

    if not remote or not trusted or not is_trusted(remote) or not forwarded_for:
        return remote
    believed = remote
    for entry in reversed(forwarded_for.split(",")[-32:]):
        entry = entry.strip()
        try:
            ipaddress.ip_address(entry)
        except ValueError:
            return believed
        believed = entry
        if not is_trusted(entry):
            return entry
    return believed
