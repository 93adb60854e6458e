"""delivery.signing: what a receiver checks."""

from __future__ import annotations

import hashlib
import hmac

from delivery.signing import signature, verify

BODY = b'{"id":"e1","kind":"price.changed","payload":{}}'
SECRET = "s3cret-s3cret-s3cret"
NOW = 1_800_000_000


def test_the_signature_is_hmac_sha256_of_timestamp_dot_body():
    expected = hmac.new(SECRET.encode(), f"{NOW}.".encode() + BODY, hashlib.sha256).hexdigest()
    assert signature(SECRET, NOW, BODY) == f"v1={expected}"


def test_a_signed_body_verifies_within_the_window():
    sig = signature(SECRET, NOW, BODY)
    assert verify(SECRET, str(NOW), BODY, sig, now=NOW)
    assert verify(SECRET, NOW, BODY, sig, now=NOW + 300)
    assert verify(SECRET, NOW, BODY, sig, now=NOW - 300)


def test_a_timestamp_outside_the_window_is_refused_either_way():
    sig = signature(SECRET, NOW, BODY)
    assert not verify(SECRET, NOW, BODY, sig, now=NOW + 301)
    assert not verify(SECRET, NOW, BODY, sig, now=NOW - 301)
    assert verify(SECRET, NOW, BODY, sig, window=600, now=NOW + 500)


def test_another_body_secret_or_timestamp_is_refused():
    sig = signature(SECRET, NOW, BODY)
    assert not verify(SECRET, NOW, BODY + b" ", sig, now=NOW)
    assert not verify("another-secret-entirely", NOW, BODY, sig, now=NOW)
    # The timestamp is signed: moving it into the window breaks the signature.
    assert not verify(SECRET, NOW + 1, BODY, sig, now=NOW)


def test_malformed_headers_are_refused_not_raised():
    sig = signature(SECRET, NOW, BODY)
    assert not verify(SECRET, "yesterday", BODY, sig, now=NOW)
    assert not verify(SECRET, NOW, BODY, "", now=NOW)
    assert not verify(SECRET, NOW, BODY, sig.replace("v1=", "v0="), now=NOW)


def test_one_matching_value_among_several_will_do():
    sig = signature(SECRET, NOW, BODY)
    assert verify(SECRET, NOW, BODY, f"v1=00ff, {sig}", now=NOW)
