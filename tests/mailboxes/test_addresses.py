"""mailboxes.addresses: which addresses IMAP may reach, and connecting to the very
addresses checked."""

from __future__ import annotations

import ipaddress
import socket

import pytest

from mailboxes import addresses
from mailboxes.addresses import (
    ConnectionPolicy,
    Resolved,
    embedded_ipv4,
    non_public_kind,
    parse_networks,
    refusal,
)
from mailboxes.exceptions import AddressNotAllowed, ImapSettingsError, PlainNotAllowed
from tests.recorder import RecordingServer

ip = ipaddress.ip_address


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.0.9", "loopback"),
        ("::1", "loopback"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.254", "private"),
        ("192.168.1.1", "private"),
        ("fd00::1", "private"),
        ("fec0::1", "private"),  # deprecated site-local
        ("169.254.169.254", "link-local"),  # cloud metadata services
        ("fe80::1", "link-local"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("ff02::1", "multicast"),
        ("100.64.0.1", "shared (carrier-grade NAT)"),
        ("100.127.255.254", "shared (carrier-grade NAT)"),
        ("240.0.0.1", "reserved"),
        ("255.255.255.255", "reserved"),
        ("::7f00:1", "reserved"),  # IPv4-compatible, deprecated
        ("192.0.2.1", "special-purpose"),  # documentation
        ("198.18.0.1", "special-purpose"),  # benchmarking
        ("0.1.2.3", "special-purpose"),
        ("2001:db8::1", "special-purpose"),
        ("2002:7f00:1::", "special-purpose"),  # 6to4
        ("2001::1", "special-purpose"),  # Teredo
    ],
)
def test_non_public_addresses_are_named_by_their_kind(address, kind):
    assert non_public_kind(ip(address)) == kind


@pytest.mark.parametrize(
    "address", ["8.8.8.8", "93.184.216.34", "172.32.0.1", "100.128.0.1", "2606:4700::1111"]
)
def test_public_unicast_addresses_have_no_kind(address):
    assert non_public_kind(ip(address)) is None


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.0.0.1", "private"),
        ("::ffff:169.254.169.254", "link-local"),
        ("64:ff9b::7f00:1", "loopback"),  # NAT64 of 127.0.0.1
        ("64:ff9b::a00:1", "private"),  # NAT64 of 10.0.0.1
        ("::ffff:8.8.8.8", None),
        ("64:ff9b::808:808", None),
    ],
)
def test_ipv6_addresses_standing_for_ipv4_are_judged_as_that_ipv4(address, kind):
    assert non_public_kind(ip(address)) == kind


def test_embedded_ipv4_of_mapped_and_nat64_addresses():
    assert embedded_ipv4(ip("::ffff:192.168.0.7")) == ip("192.168.0.7")
    assert embedded_ipv4(ip("64:ff9b::c0a8:7")) == ip("192.168.0.7")
    assert embedded_ipv4(ip("2606:4700::1111")) is None
    assert embedded_ipv4(ip("192.168.0.7")) is None


def test_an_allowed_network_lets_its_addresses_through_and_no_others():
    networks = parse_networks(["10.20.0.0/16", "::1"])

    assert refusal(ip("10.20.3.4"), networks) is None
    assert refusal(ip("::1"), networks) is None
    assert refusal(ip("10.21.0.1"), networks) == "private"
    assert refusal(ip("127.0.0.1"), networks) == "loopback"
    assert refusal(ip("8.8.8.8"), networks) is None  # public needs no entry


def test_an_allowed_ipv4_network_also_holds_the_mapped_and_nat64_forms():
    networks = parse_networks(["127.0.0.0/8"])

    assert refusal(ip("::ffff:127.0.0.1"), networks) is None
    assert refusal(ip("64:ff9b::7f00:1"), networks) is None
    assert refusal(ip("::1"), networks) == "loopback"  # IPv6 loopback is another network


def test_with_no_allowed_networks_every_non_public_address_is_refused():
    assert refusal(ip("127.0.0.1"), ()) == "loopback"
    assert refusal(ip("::ffff:10.0.0.1"), ()) == "private"


def test_networks_accept_bare_addresses_and_host_bits():
    assert parse_networks(["127.0.0.1", " 10.1.2.3/8 ", "::1"]) == (
        ipaddress.ip_network("127.0.0.1/32"),
        ipaddress.ip_network("10.0.0.0/8"),
        ipaddress.ip_network("::1/128"),
    )


def test_an_invalid_network_is_refused_naming_the_setting():
    with pytest.raises(ImapSettingsError) as info:
        parse_networks(["10.0.0.0/8", "intranet"])

    assert str(info.value).startswith("PRICEFEED_IMAP_ALLOWED_NETWORKS: 'intranet' is not a ")


def test_plain_text_is_refused_unless_allowed():
    with pytest.raises(PlainNotAllowed) as info:
        ConnectionPolicy(allow_plain=False, networks=()).check_security("plain")

    assert "PRICEFEED_IMAP_ALLOW_PLAIN" in str(info.value)
    ConnectionPolicy(allow_plain=True, networks=()).check_security("plain")
    for security in ("ssl", "starttls"):
        ConnectionPolicy(allow_plain=False, networks=()).check_security(security)


def test_policy_comes_from_the_settings_at_call_time(settings):
    settings.PRICEFEED_IMAP_ALLOW_PLAIN = False
    settings.PRICEFEED_IMAP_ALLOWED_NETWORKS = ["192.168.0.0/16"]

    assert ConnectionPolicy.current() == ConnectionPolicy(
        allow_plain=False, networks=(ipaddress.ip_network("192.168.0.0/16"),)
    )


def resolved(*ips: str, port: int = 993) -> list[Resolved]:
    return [
        Resolved(
            socket.AF_INET6 if ":" in a else socket.AF_INET,
            (a, port, 0, 0) if ":" in a else (a, port),
            ip(a),
        )
        for a in ips
    ]


def test_a_literal_address_is_refused_with_its_kind_and_the_setting():
    policy = ConnectionPolicy(allow_plain=False, networks=())

    with pytest.raises(AddressNotAllowed) as info:
        policy.addresses("127.0.0.1", 993)

    assert str(info.value) == (
        "127.0.0.1 is not a public address (loopback); IMAP connections to it need "
        "PRICEFEED_IMAP_ALLOWED_NETWORKS to hold it"
    )


def test_a_name_is_refused_when_any_of_its_addresses_is(monkeypatch):
    monkeypatch.setattr(
        addresses, "resolve", lambda host, port: resolved("93.184.216.34", "10.0.0.5")
    )
    policy = ConnectionPolicy(allow_plain=False, networks=())

    with pytest.raises(AddressNotAllowed) as info:
        policy.addresses("imap.supplier.example", 993)

    assert str(info.value) == (
        "imap.supplier.example resolves to 10.0.0.5, not a public address (private); IMAP "
        "connections to it need PRICEFEED_IMAP_ALLOWED_NETWORKS to hold it"
    )


def test_a_name_with_public_addresses_only_is_allowed(monkeypatch):
    found = resolved("93.184.216.34", "2606:2800:220:1::248")
    monkeypatch.setattr(addresses, "resolve", lambda host, port: found)

    assert ConnectionPolicy(allow_plain=False, networks=()).addresses("imap.x.example", 993) == (
        found
    )


def test_resolving_an_unencodable_name_is_a_lookup_failure():
    with pytest.raises(socket.gaierror):
        addresses.resolve("a" * 64 + ".example", 993)  # a label over 63 characters


def test_connect_goes_to_the_checked_address_without_another_lookup(monkeypatch):
    """DNS rebinding: a name that answered a public (here: allowed) address when checked
    and a forbidden one afterwards is connected to at the address that was checked."""
    lookups: list[str] = []
    real = socket.getaddrinfo

    def rebinding(host, *args, **kwargs):
        lookups.append(host)
        answer = "127.0.0.1" if len(lookups) == 1 else "10.255.255.1"
        return real(answer, *args, **kwargs)

    with RecordingServer(imap=False) as server:
        monkeypatch.setattr(socket, "getaddrinfo", rebinding)
        policy = ConnectionPolicy(allow_plain=True, networks=parse_networks(["127.0.0.0/8"]))
        checked = policy.addresses("imap.rebinding.example", server.port)
        sock = addresses.connect(checked, timeout=5)
        monkeypatch.undo()
        with sock:
            assert sock.getpeername() == ("127.0.0.1", server.port)
    assert lookups == ["imap.rebinding.example"]
    assert server.connections == 1


def test_connect_tries_the_next_address_when_one_refuses():
    with RecordingServer(imap=False) as server:
        closed = socket.create_server(("127.0.0.1", 0))
        closed_port = closed.getsockname()[1]
        closed.close()
        candidates = [
            resolved("127.0.0.1", port=closed_port)[0],
            resolved("127.0.0.1", port=server.port)[0],
        ]

        with addresses.connect(candidates, timeout=5) as sock:
            assert sock.getpeername() == ("127.0.0.1", server.port)


def test_connect_raises_the_last_error_when_no_address_accepts():
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()

    with pytest.raises(ConnectionRefusedError):
        addresses.connect(resolved("127.0.0.1", port=port), timeout=5)
