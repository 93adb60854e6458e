"""The broker fingerprint: which broker, never the password."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.brokers import check_redis_security, fingerprint

ROOT = Path(__file__).resolve().parents[2]


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


@pytest.mark.parametrize(
    "url",
    [
        "redis://10.0.0.5:6379/0",  # neither
        "redis://:s3cret@10.0.0.5:6379/0",  # a password in clear over the network
        "redis://:s3cret@redis.example:6379/0",  # a name may resolve anywhere
        "rediss://redis.example:6380/0",  # TLS, but anyone may connect
        "redis://127.0.0.1:6379/0",  # loopback, no password
        "unix:///run/redis.sock?db=1",  # a socket, no password
    ],
)
def test_an_open_redis_broker_stops_every_command_in_production(settings, url):
    settings.DEBUG = False
    settings.PRICEFEED_REDIS_ALLOW_INSECURE = False
    settings.Q_CLUSTER = {"name": "pricefeed", "redis": url}

    (error,) = check_redis_security()

    assert error.id == "core.E004" and "PRICEFEED_REDIS_URL" in error.msg
    assert "PRICEFEED_REDIS_ALLOW_INSECURE" in error.hint
    assert "s3cret" not in error.msg + error.hint


@pytest.mark.parametrize(
    "url",
    [
        "rediss://:s3cret@redis.example:6380/0",
        "rediss://user:s3cret@10.0.0.5/0",
        "redis://:s3cret@127.0.0.1:6379/0",
        "redis://:s3cret@[::1]:6379/0",
        "redis://localhost/0?password=s3cret",
        "unix://:s3cret@/run/redis.sock?db=1",
    ],
)
def test_a_redis_broker_with_a_password_and_tls_off_this_host_passes(settings, url):
    settings.DEBUG = False
    settings.PRICEFEED_REDIS_ALLOW_INSECURE = False
    settings.Q_CLUSTER = {"name": "pricefeed", "redis": url}

    assert check_redis_security() == []


def test_an_open_redis_is_accepted_when_allowed_or_in_debug(settings):
    settings.Q_CLUSTER = {"name": "pricefeed", "redis": "redis://10.0.0.5:6379/0"}
    settings.DEBUG = False
    settings.PRICEFEED_REDIS_ALLOW_INSECURE = True
    assert check_redis_security() == []
    settings.PRICEFEED_REDIS_ALLOW_INSECURE = False
    settings.DEBUG = True
    assert check_redis_security() == []
    settings.DEBUG = False
    settings.Q_CLUSTER = {"name": "pricefeed", "orm": "default"}
    assert check_redis_security() == []


def test_manage_py_refuses_to_start_with_an_open_redis_in_production(tmp_path):
    """Through a real process: the check stops the command with its message."""
    env = {
        **os.environ,
        "DEBUG": "false",
        "PRICEFEED_REDIS_URL": "redis://:s3cret@10.0.0.5:6379/0",
        "PRICEFEED_REDIS_ALLOW_INSECURE": "false",
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }
    done = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode != 0
    assert "core.E004" in done.stderr and "no TLS" in done.stderr
    assert "s3cret" not in done.stderr + done.stdout
