"""The broker fingerprint: which broker, never the password."""

from __future__ import annotations

import pytest

from core.brokers import fingerprint


@pytest.mark.parametrize(
    ("conf", "expected"),
    [
        ({"orm": "default"}, "orm:default"),
        ({}, "orm:default"),
        ({"redis": "redis://:s3cret@Redis.Example:6380/2"}, "redis:redis.example:6380/2"),
        ({"redis": "redis://user:s3cret@10.0.0.5"}, "redis:10.0.0.5:6379/0"),
        ({"redis": "rediss://:s3cret@redis.example:6390/"}, "redis:redis.example:6390/0"),
        ({"redis": "redis://redis.example?db=3"}, "redis:redis.example:6379/3"),
        ({"redis": "unix:///run/redis.sock?db=1"}, "redis:unix:/run/redis.sock/1"),
        ({"redis": {"host": "r", "port": 6381, "db": 4, "password": "s3cret"}}, "redis:r:6381/4"),
    ],
)
def test_fingerprint_names_the_broker(conf, expected):
    assert fingerprint(conf) == expected


def test_fingerprint_never_holds_the_password():
    assert "s3cret" not in fingerprint({"redis": "redis://admin:s3cret@h:6379/0"})


def test_the_same_redis_with_another_password_is_the_same_broker():
    one = fingerprint({"redis": "redis://:first@h:6379/1"})

    assert one == fingerprint({"redis": "redis://:second@h:6379/1"})
    assert one != fingerprint({"redis": "redis://:first@h:6379/2"})
    assert one != fingerprint({"orm": "default"})


def test_fingerprint_reads_the_settings(settings):
    settings.Q_CLUSTER = {"name": "pricefeed", "redis": "redis://:pw@127.0.0.1:6390/0"}

    assert fingerprint() == "redis:127.0.0.1:6390/0"
