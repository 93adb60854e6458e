"""Where IMAP connections may go: the policy every connection (the listener's and Test
connection's) and every saved mailbox goes through.

A mailbox's host is resolved once; every address it resolves to must be public unicast
(not loopback, private, link-local, unspecified, multicast, reserved, shared (carrier
NAT) or another special-purpose range), unless a network of
``PRICEFEED_IMAP_ALLOWED_NETWORKS`` holds it. An IPv6 address that stands for an IPv4
one (IPv4-mapped ``::ffff:a.b.c.d``, NAT64 ``64:ff9b::a.b.c.d``) is judged as that IPv4
address. The connection then goes to the very addresses checked (``connect``): no
second lookup a rebinding DNS server could answer differently. Plain-text IMAP needs
``PRICEFEED_IMAP_ALLOW_PLAIN``.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.conf import settings

from core.texts import gettext_noop

from .exceptions import AddressNotAllowed, ImapSettingsError, PlainNotAllowed
from .texts import Text

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

ALLOWED_NETWORKS = "PRICEFEED_IMAP_ALLOWED_NETWORKS"
ALLOW_PLAIN = "PRICEFEED_IMAP_ALLOW_PLAIN"

_SHARED = ipaddress.IPv4Network("100.64.0.0/10")  # RFC 6598, carrier-grade NAT
_PRIVATE = tuple(
    ipaddress.ip_network(n)
    for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7", "fec0::/10")
)
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052 well-known prefix


def embedded_ipv4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address reaches (IPv4-mapped, NAT64), else None."""
    if isinstance(ip, ipaddress.IPv4Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def non_public_kind(ip: IPAddress) -> str | None:
    """What keeps ``ip`` off the public internet ("loopback", "private", ...), or None
    for a public unicast address."""
    ip = embedded_ipv4(ip) or ip
    if ip.is_unspecified:
        return gettext_noop("unspecified")
    if ip.is_loopback:
        return gettext_noop("loopback")
    if ip.is_link_local:
        return gettext_noop("link-local")
    if ip.is_multicast:
        return gettext_noop("multicast")
    if ip in _SHARED:
        return gettext_noop("shared (carrier-grade NAT)")
    if any(ip.version == net.version and ip in net for net in _PRIVATE):
        return gettext_noop("private")
    if ip.is_reserved:
        return gettext_noop("reserved")
    if not ip.is_global:
        return gettext_noop("special-purpose")
    return None


def held_by(ip: IPAddress, networks: Iterable[IPNetwork]) -> bool:
    """True when one of ``networks`` holds ``ip`` or the IPv4 address it stands for."""
    candidates = [ip, *filter(None, [embedded_ipv4(ip)])]
    return any(c.version == net.version and c in net for net in networks for c in candidates)


def refusal(ip: IPAddress, networks: Iterable[IPNetwork]) -> str | None:
    """Why a connection to ``ip`` is refused (its kind), or None when it is allowed."""
    kind = non_public_kind(ip)
    if kind is None or held_by(ip, networks):
        return None
    return kind


def parse_networks(values: Iterable[str]) -> tuple[IPNetwork, ...]:
    """CIDR strings (a bare address is a /32 or /128; host bits are ignored) as networks;
    raises ImapSettingsError naming the first invalid one."""
    return _parse_networks(tuple(values))


@functools.lru_cache(maxsize=8)
def _parse_networks(values: tuple[str, ...]) -> tuple[IPNetwork, ...]:
    networks = []
    for value in values:
        try:
            networks.append(ipaddress.ip_network(value.strip(), strict=False))
        except ValueError as exc:
            raise ImapSettingsError(
                Text(
                    gettext_noop("%(setting)s: %(value)s is not a network (%(error)s)"),
                    setting=ALLOWED_NETWORKS,
                    value=repr(value),
                    error=str(exc),
                )
            ) from None
    return tuple(networks)


@dataclass(frozen=True)
class Resolved:
    """One address a host resolved to, ready for ``socket.connect``."""

    family: int
    sockaddr: tuple
    ip: IPAddress


def resolve(host: str, port: int) -> list[Resolved]:
    """The TCP addresses of ``host`` (one lookup; an IP literal is taken as it is), in
    the resolver's order. Raises socket.gaierror when there are none."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except UnicodeError as exc:  # the name cannot be encoded (IDNA): no lookup possible
        raise socket.gaierror(socket.EAI_NONAME, "not a valid host name") from exc
    found: list[Resolved] = []
    for family, _type, _proto, _name, sockaddr in infos:
        if family in (socket.AF_INET, socket.AF_INET6) and all(
            r.sockaddr != sockaddr for r in found
        ):
            found.append(Resolved(family, sockaddr, ipaddress.ip_address(sockaddr[0])))
    if not found:
        raise socket.gaierror(socket.EAI_NONAME, "no IPv4 or IPv6 address")
    return found


@dataclass(frozen=True)
class ConnectionPolicy:
    """Whether plain text is allowed, and which non-public networks are."""

    allow_plain: bool
    networks: tuple[IPNetwork, ...]

    @classmethod
    def current(cls) -> ConnectionPolicy:
        return cls(
            allow_plain=bool(settings.PRICEFEED_IMAP_ALLOW_PLAIN),
            networks=parse_networks(settings.PRICEFEED_IMAP_ALLOWED_NETWORKS),
        )

    def check_security(self, security: str) -> None:
        if security == "plain" and not self.allow_plain:
            raise PlainNotAllowed(
                Text(
                    gettext_noop(
                        "plain-text IMAP (no TLS) is not allowed (%(setting)s is off); "
                        "choose SSL/TLS or STARTTLS"
                    ),
                    setting=ALLOW_PLAIN,
                )
            )

    def check_addresses(self, host: str, addresses: Sequence[Resolved]) -> None:
        """Raises AddressNotAllowed when any of ``host``'s addresses is refused."""
        for address in addresses:
            kind = refusal(address.ip, self.networks)
            if kind is not None:
                if _is_literal(host):
                    message = gettext_noop(
                        "%(host)s is not a public address (%(kind)s); IMAP connections to "
                        "it need %(setting)s to hold it"
                    )
                else:
                    message = gettext_noop(
                        "%(host)s resolves to %(ip)s, not a public address (%(kind)s); IMAP "
                        "connections to it need %(setting)s to hold it"
                    )
                raise AddressNotAllowed(
                    Text(
                        message,
                        host=host,
                        ip=str(address.ip),
                        kind=Text(kind),
                        setting=ALLOWED_NETWORKS,
                    )
                )

    def addresses(self, host: str, port: int) -> list[Resolved]:
        """``host``'s addresses, all of them allowed (else AddressNotAllowed); connect
        to these and to nothing else. Raises socket.gaierror when it does not resolve."""
        found = resolve(host, port)
        self.check_addresses(host, found)
        return found


def _is_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def connect(addresses: Sequence[Resolved], timeout: float | None) -> socket.socket:
    """A TCP connection to the first of ``addresses`` that accepts one, each tried for
    up to ``timeout`` seconds; no name is looked up. Raises the last attempt's error."""
    error: OSError = OSError("no address to connect to")
    for address in addresses:
        sock = socket.socket(address.family, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(address.sockaddr)
        except OSError as exc:
            sock.close()
            error = exc
            continue
        return sock
    raise error
