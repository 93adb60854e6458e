"""mailboxes.forms: MailboxForm keeps the password write-only (and for its own server
only), checks the port, and where the mailbox may point."""

from __future__ import annotations

import ipaddress
import socket

import pytest
from django.utils import translation

from mailboxes import addresses
from mailboxes.forms import MailboxForm
from mailboxes.models import Mailbox

pytestmark = pytest.mark.django_db

PUBLIC = "93.184.216.34"
# What the names of these tests resolve to; anything else does not resolve.
DNS = {
    "imap.supplier.example": [PUBLIC],
    "imap.other.example": [PUBLIC],
    "mail.intranet.example": ["10.20.30.40"],
    "mixed.example": [PUBLIC, "192.168.1.10"],
}


@pytest.fixture(autouse=True)
def dns(monkeypatch) -> dict[str, list[str]]:
    """The form resolves the host: these tests answer from DNS, never the network."""

    def resolve(host: str, port: int) -> list[addresses.Resolved]:
        try:
            literal = [str(ipaddress.ip_address(host))]
        except ValueError:
            literal = []
        found = literal or DNS.get(host)
        if not found:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [
            addresses.Resolved(socket.AF_INET, (a, port), ipaddress.ip_address(a)) for a in found
        ]

    monkeypatch.setattr(addresses, "resolve", resolve)
    return DNS


@pytest.fixture
def production_policy(settings):
    """The defaults: no plain text, no non-public network."""
    settings.PRICEFEED_IMAP_ALLOW_PLAIN = False
    settings.PRICEFEED_IMAP_ALLOWED_NETWORKS = []
    return settings


def data(**overrides: object) -> dict:
    values = {
        "name": "Поставщик",
        "enabled": "on",
        "host": "imap.supplier.example",
        "port": "993",
        "security": Mailbox.Security.SSL,
        "username": "buyer",
        "password": "new-secret",
        "folder": "INBOX",
        "backfill": Mailbox.Backfill.ALL,
        "weight": "",
    }
    values.update(overrides)
    return values


def test_new_mailbox_with_password_is_valid_and_saved():
    form = MailboxForm(data=data())

    assert form.is_valid(), form.errors
    mailbox = form.save()
    assert Mailbox.objects.get(pk=mailbox.pk).password == "new-secret"


def test_new_mailbox_requires_a_password():
    form = MailboxForm(data=data(password=""))

    assert not form.is_valid()
    assert form.errors["password"] == ["A password is required for a new mailbox."]


def test_blank_password_on_edit_keeps_the_stored_one(mailbox):
    form = MailboxForm(data=data(password="", folder="Prices", enabled=""), instance=mailbox)

    assert form.is_valid(), form.errors
    form.save()
    stored = Mailbox.objects.get(pk=mailbox.pk)
    assert stored.password == "s3cret-imap-password"
    assert (stored.folder, stored.enabled) == ("Prices", False)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"host": "imap.other.example"}, "host"),
        ({"port": "994"}, "port"),
        ({"security": Mailbox.Security.STARTTLS, "port": "143"}, "port, security"),
        ({"username": "renamed"}, "username"),
    ],
)
def test_changing_the_server_without_the_password_is_refused(mailbox, change, named):
    form = MailboxForm(data=data(password="", **change), instance=mailbox)

    assert not form.is_valid()
    assert form.errors["password"] == [
        f"The server changed ({named}): enter the password again. The stored password is "
        "only ever sent to the server it was entered for."
    ]
    stored = Mailbox.objects.get(pk=mailbox.pk)
    assert stored.server_identity() == ("imap.supplier.example", 993, "ssl", "buyer")


def test_changing_the_server_with_the_password_entered_again_keeps_it(mailbox):
    """The same password typed again for the new server: stored, not dropped."""
    form = MailboxForm(
        data=data(host="imap.other.example", password="s3cret-imap-password"), instance=mailbox
    )

    assert form.is_valid(), form.errors
    form.save()
    stored = Mailbox.objects.get(pk=mailbox.pk)
    assert (stored.host, stored.password) == ("imap.other.example", "s3cret-imap-password")


def test_password_given_on_edit_replaces_the_stored_one(mailbox):
    form = MailboxForm(data=data(password="rotated"), instance=mailbox)

    assert form.is_valid(), form.errors
    form.save()
    assert Mailbox.objects.get(pk=mailbox.pk).password == "rotated"


def test_password_is_never_rendered_back_into_the_form(mailbox):
    html = MailboxForm(instance=mailbox).as_p()

    assert "s3cret-imap-password" not in html
    assert "fernet:" not in html


def test_ssl_on_port_143_is_flagged_on_the_port():
    form = MailboxForm(data=data(security=Mailbox.Security.SSL, port="143"))

    assert not form.is_valid()
    assert form.errors["port"] == ["Port 143 normally speaks STARTTLS or plain, not SSL/TLS."]


@pytest.mark.parametrize("security", [Mailbox.Security.STARTTLS, Mailbox.Security.PLAIN])
def test_starttls_or_plain_on_port_993_is_flagged_on_the_port(security):
    form = MailboxForm(data=data(security=security, port="993"))

    assert not form.is_valid()
    assert form.errors["port"] == ["Port 993 normally speaks implicit SSL/TLS."]


@pytest.mark.parametrize("security", [Mailbox.Security.STARTTLS, Mailbox.Security.PLAIN])
def test_starttls_or_plain_on_port_143_is_accepted(security):
    form = MailboxForm(data=data(security=security, port="143"))

    assert form.is_valid(), form.errors


# -- where a mailbox may point ----------------------------------------------------------


def test_plain_text_is_refused_unless_allowed(production_policy):
    form = MailboxForm(data=data(security=Mailbox.Security.PLAIN, port="143"))

    assert not form.is_valid()
    assert form.errors["security"] == [
        "plain-text IMAP (no TLS) is not allowed (PRICEFEED_IMAP_ALLOW_PLAIN is off); "
        "choose SSL/TLS or STARTTLS"
    ]


def test_plain_text_is_accepted_when_allowed(production_policy):
    production_policy.PRICEFEED_IMAP_ALLOW_PLAIN = True

    form = MailboxForm(data=data(security=Mailbox.Security.PLAIN, port="143"))

    assert form.is_valid(), form.errors


@pytest.mark.parametrize(
    ("host", "message"),
    [
        ("127.0.0.1", "127.0.0.1 is not a public address (loopback)"),
        ("::1", "::1 is not a public address (loopback)"),
        ("169.254.169.254", "169.254.169.254 is not a public address (link-local)"),
        (
            "mail.intranet.example",
            "mail.intranet.example resolves to 10.20.30.40, not a public address (private)",
        ),
        ("mixed.example", "mixed.example resolves to 192.168.1.10, not a public address (private)"),
    ],
)
def test_a_non_public_host_is_refused_with_the_setting_that_would_allow_it(
    production_policy, host, message
):
    form = MailboxForm(data=data(host=host))

    assert not form.is_valid()
    assert form.errors["host"] == [
        f"{message}; IMAP connections to it need PRICEFEED_IMAP_ALLOWED_NETWORKS to hold it"
    ]
    assert not Mailbox.objects.exists()


def test_a_non_public_host_in_an_allowed_network_is_accepted(production_policy):
    production_policy.PRICEFEED_IMAP_ALLOWED_NETWORKS = ["10.20.0.0/16"]

    form = MailboxForm(data=data(host="mail.intranet.example"))

    assert form.is_valid(), form.errors


def test_a_host_that_does_not_resolve_is_accepted(production_policy):
    """Every connection checks again (and says "host not found"); a passing DNS failure
    must not block saving a mailbox."""
    form = MailboxForm(data=data(host="imap.not-yet-in-dns.example"))

    assert form.is_valid(), form.errors


def test_a_host_name_that_cannot_be_encoded_is_refused(production_policy):
    form = MailboxForm(data=data(host="a" * 64 + ".example"))

    assert not form.is_valid()
    assert form.errors["host"] == ["Not a valid host name."]


def test_a_disabled_mailbox_with_a_refused_host_can_still_be_saved_unchanged(
    production_policy, mailbox
):
    """An operator must be able to edit (e.g. disable) a mailbox saved when the policy
    was looser; its connections stay refused."""
    Mailbox.objects.filter(pk=mailbox.pk).update(host="127.0.0.1")
    mailbox.refresh_from_db()

    enabled = MailboxForm(data=data(host="127.0.0.1", password=""), instance=mailbox)
    disabled = MailboxForm(data=data(host="127.0.0.1", password="", enabled=""), instance=mailbox)

    assert "host" in enabled.errors
    assert disabled.is_valid(), disabled.errors


# -- in Russian ----------------------------------------------------------------------------


def test_the_forms_refusals_are_in_the_active_language(production_policy, mailbox):
    with translation.override("ru"):
        plain = MailboxForm(data=data(security=Mailbox.Security.PLAIN, port="143"))
        private = MailboxForm(data=data(host="mail.intranet.example"))
        changed = MailboxForm(data=data(password="", host="imap.other.example"), instance=mailbox)

        assert not plain.is_valid()
        assert plain.errors["security"] == [
            "IMAP открытым текстом (без TLS) запрещён (настройка PRICEFEED_IMAP_ALLOW_PLAIN "
            "выключена); выберите SSL/TLS или STARTTLS"
        ]
        assert not private.is_valid()
        assert private.errors["host"] == [
            "mail.intranet.example указывает на 10.20.30.40 — это не публичный адрес (частный); "
            "чтобы подключаться к нему по IMAP, добавьте его в PRICEFEED_IMAP_ALLOWED_NETWORKS"
        ]
        assert not changed.is_valid()
        assert changed.errors["password"][0].startswith("Сервер изменился (хост): ")
