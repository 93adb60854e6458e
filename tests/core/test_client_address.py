"""Which address a request came from (core.hosts.client_address): X-Forwarded-For is
believed only from a trusted proxy, read from the right, never past an untrusted entry."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.hosts import client_address, parse_networks

PROXY = parse_networks(["127.0.0.1", "::1", "10.0.0.0/8"])


@pytest.mark.parametrize(
    ("remote", "forwarded", "expected"),
    [
        # No proxy in front: the connection's address, whatever the header says.
        ("203.0.113.5", "198.51.100.7", "203.0.113.5"),
        # The proxy set the header: the client it saw.
        ("127.0.0.1", "198.51.100.7", "198.51.100.7"),
        # A client's own entry on the left is not believed past the proxy's.
        ("127.0.0.1", "1.2.3.4, 198.51.100.7", "198.51.100.7"),
        # Two trusted proxies: the first address that is not one.
        ("127.0.0.1", "198.51.100.7, 10.1.2.3", "198.51.100.7"),
        # Every entry a proxy: the leftmost of them.
        ("127.0.0.1", "10.9.9.9, 10.1.2.3", "10.9.9.9"),
        # Garbage ends the walk at the last believed address.
        ("127.0.0.1", "198.51.100.7, not-an-address", "127.0.0.1"),
        ("::1", "2001:db8::5", "2001:db8::5"),
        # The proxy without the header: the proxy's address.
        ("127.0.0.1", None, "127.0.0.1"),
        ("127.0.0.1", "", "127.0.0.1"),
    ],
)
def test_the_address_believed(remote, forwarded, expected):
    assert client_address(remote, forwarded, PROXY) == expected


def test_without_trusted_proxies_the_header_is_never_read():
    assert client_address("127.0.0.1", "198.51.100.7", ()) == "127.0.0.1"


def test_a_setting_that_is_not_an_address_is_refused_by_name():
    with pytest.raises(ValueError, match=r"'proxy\.example'"):
        parse_networks(["127.0.0.1", "proxy.example"])


@given(
    remote=st.ip_addresses(v=4).map(str),
    entries=st.lists(st.one_of(st.ip_addresses().map(str), st.text(max_size=8)), max_size=40),
)
def test_an_untrusted_connection_is_always_its_own_address(remote, entries):
    if any(remote.startswith(p) for p in ("127.", "10.")):
        remote = "203.0.113.1"
    assert client_address(remote, ",".join(entries), PROXY) == remote


@given(entries=st.lists(st.one_of(st.ip_addresses().map(str), st.text(max_size=8)), max_size=40))
def test_from_a_proxy_the_answer_is_the_proxy_or_an_entry_of_the_header(entries):
    header = ",".join(entries)
    answer = client_address("127.0.0.1", header, PROXY)
    assert answer == "127.0.0.1" or answer in [e.strip() for e in header.split(",")]
