"""Admin login throttling (django-axes, config/settings.py): PRICEFEED_LOGIN_FAILURES
wrong passwords lock the username at that address out, every attempt until the lock ends
is refused (429), right password or not, and a right login after the lock works; other
users and other addresses are not locked. Through the real login view and middleware."""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

LOGIN = "/admin/login/"
PASSWORD = "a-right-password-1928"

pytestmark = pytest.mark.usefixtures("fast_password_hashing")


@pytest.fixture
def operator(db) -> User:
    return User.objects.create_user("operator", password=PASSWORD, is_staff=True)


def log_in(password: str, *, username: str = "operator", address: str = "10.1.1.1"):
    """A login through the admin's form, as a browser at ``address`` posts it."""
    return Client(REMOTE_ADDR=address).post(
        LOGIN, {"username": username, "password": password, "next": "/admin/"}
    )


def cool_off_passes() -> None:
    """The lock's time goes by: the failures are moved back past PRICEFEED_LOGIN_LOCKOUT
    (what the cool-off compares with), instead of the test waiting for it."""
    past = timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
    AccessAttempt.objects.update(attempt_time=past)


def test_the_limit_locks_the_user_out_until_the_cool_off_ends(operator, caplog):
    limit = settings.AXES_FAILURE_LIMIT
    answers = [log_in("wrong").status_code for _ in range(limit - 1)]
    locking = log_in("wrong")
    after = log_in("wrong")  # the attempt past the limit
    right_while_locked = log_in(PASSWORD)

    assert answers == [200] * (limit - 1)  # the form again, "enter a correct username…"
    assert (locking.status_code, after.status_code) == (429, 429)
    assert right_while_locked.status_code == 429
    assert "_auth_user_id" not in right_while_locked.client.session
    logged = [r.getMessage() for r in caplog.records if r.name.startswith("axes")]
    assert any("Locking out" in line for line in logged)
    assert not any(PASSWORD in line or "wrong" in line for line in logged)
    cool_off_passes()
    right = log_in(PASSWORD)
    assert right.status_code == 302 and right["Location"] == "/admin/"


def test_the_lock_is_of_that_username_at_that_address(operator):
    User.objects.create_user("colleague", password=PASSWORD, is_staff=True)
    for _ in range(settings.AXES_FAILURE_LIMIT):
        log_in("wrong")

    assert log_in(PASSWORD).status_code == 429
    assert log_in(PASSWORD, username="colleague").status_code == 302
    assert log_in(PASSWORD, address="10.2.2.2").status_code == 302


def test_a_right_login_clears_the_count(operator):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        log_in("wrong")
    assert log_in(PASSWORD).status_code == 302

    answers = [log_in("wrong").status_code for _ in range(settings.AXES_FAILURE_LIMIT - 1)]

    assert answers == [200] * (settings.AXES_FAILURE_LIMIT - 1)


def test_an_operator_unlocks_a_username_by_command(operator):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        log_in("wrong")
    assert log_in(PASSWORD).status_code == 429

    call_command("axes_reset_username", "operator", verbosity=0)

    assert log_in(PASSWORD).status_code == 302


def test_behind_a_trusted_proxy_each_client_address_is_locked_alone(operator, settings):
    """nginx on the same host (PRICEFEED_TRUSTED_PROXIES=127.0.0.1): the failures are
    counted by the address in X-Forwarded-For, so one attacker does not lock the user
    out for everyone behind the proxy; a spoofed header from elsewhere changes nothing."""
    settings.PRICEFEED_TRUSTED_PROXIES = ["127.0.0.1"]

    def through_proxy(password: str, client: str):
        return Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR=client).post(
            LOGIN, {"username": "operator", "password": password, "next": "/admin/"}
        )

    answers = [through_proxy("wrong", "198.51.100.7").status_code for _ in range(5)]
    elsewhere = through_proxy(PASSWORD, "203.0.113.9")

    assert answers[-1] == 429
    assert elsewhere.status_code == 302
    # A direct client naming the locked address in the header is counted as itself.
    direct = Client(REMOTE_ADDR="192.0.2.44", HTTP_X_FORWARDED_FOR="198.51.100.7").post(
        LOGIN, {"username": "operator", "password": PASSWORD, "next": "/admin/"}
    )
    assert direct.status_code == 302
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"198.51.100.7"}
