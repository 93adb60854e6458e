"""TLS against a real Dovecot: certificates and host names are verified by default, and
PRICEFEED_IMAP_CA_FILE makes a private CA trusted without giving up that verification."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

import pytest
from imapclient import IMAPClient

from devkit.servers import LOCALHOST, free_port
from devkit.servers.dovecot import DEFAULT_TLS_NAMES, DovecotServer
from mailboxes.imap import ConnectionSettings, ImapError, check_connection
from mailboxes.models import InboundMessage, Mailbox
from tests.requirements import require_dovecot

from .conftest import ImapServer
from .support import mailbox_line, price_email, wait_until

pytestmark = pytest.mark.integration

NOT_TRUSTED = "not trusted: unable to get local issuer certificate"


@pytest.fixture
def start_tls_dovecot():
    """Returns a function starting a Dovecot with STARTTLS and imaps whose certificate
    names ``tls_names``; every server started is removed after the test."""
    require_dovecot()
    started: list[ImapServer] = []

    def start(tls_names: Sequence[str] = DEFAULT_TLS_NAMES) -> ImapServer:
        server = DovecotServer(tls=True, tls_names=tls_names)
        wrapped = ImapServer("dovecot-tls", server)
        started.append(wrapped)
        server.start()
        return wrapped

    yield start
    for wrapped in started:
        wrapped.close()
        wrapped.server.cleanup()


@pytest.fixture
def tls_dovecot(start_tls_dovecot) -> ImapServer:
    """A Dovecot with TLS whose certificate is for ``localhost`` and 127.0.0.1."""
    return start_tls_dovecot()


@pytest.fixture
def no_ca_file(settings):
    """Trusts the system store only, whatever the environment says."""
    settings.PRICEFEED_IMAP_CA_FILE = ""
    return settings


def _port(server: ImapServer, security: str) -> int:
    """The imaps port for implicit TLS, the plain port (with or without STARTTLS) else."""
    return server.server.tls_port if security == "ssl" else server.port


def _connection(
    server: ImapServer, security: str, host: str = LOCALHOST, **fields
) -> ConnectionSettings:
    settings = ConnectionSettings(
        host=host,
        port=_port(server, security),
        security=security,
        username=server.user,
        password=server.password,
        connect_timeout=5,
        timeout=10,
    )
    return dataclasses.replace(settings, **fields)


def _failure(settings: ConnectionSettings) -> str:
    """The operator message check_connection raises for ``settings``."""
    with pytest.raises(ImapError) as info:
        check_connection(settings)
    message = str(info.value)
    assert "\n" not in message
    assert "Traceback" not in message
    assert settings.password not in message
    return message


# -- check_connection ------------------------------------------------------------------


@pytest.mark.parametrize("security", ["ssl", "starttls"])
def test_certificate_of_an_unknown_ca_is_not_trusted_by_default(tls_dovecot, no_ca_file, security):
    message = _failure(_connection(tls_dovecot, security))

    port = _port(tls_dovecot, security)
    assert message == f"TLS certificate of 127.0.0.1:{port} {NOT_TRUSTED}"


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
@pytest.mark.parametrize("security", ["ssl", "starttls"])
def test_ca_file_lets_ssl_and_starttls_connect_by_address_and_by_name(
    tls_dovecot, settings, security, host
):
    settings.PRICEFEED_IMAP_CA_FILE = str(tls_dovecot.server.ca_path)
    tls_dovecot.server.deliver(tls_dovecot.user, price_email(subject="one"))
    tls_dovecot.server.deliver(tls_dovecot.user, price_email(subject="two"))

    summary = check_connection(_connection(tls_dovecot, security, host))

    assert summary.startswith(f"connected to {host}:{_port(tls_dovecot, security)}, ")
    assert "folder 'INBOX' has 2 message(s)" in summary


@pytest.mark.parametrize(
    ("tls_names", "host", "mismatch"),
    [
        (("localhost",), "127.0.0.1", "IP address mismatch"),
        (("imap.example.test",), "localhost", "Hostname mismatch"),
    ],
)
@pytest.mark.parametrize("security", ["ssl", "starttls"])
def test_trusted_certificate_for_another_host_is_refused(
    start_tls_dovecot, settings, security, tls_names, host, mismatch
):
    server = start_tls_dovecot(tls_names)
    settings.PRICEFEED_IMAP_CA_FILE = str(server.server.ca_path)

    message = _failure(_connection(server, security, host))

    assert message == (
        f"TLS certificate of {host}:{_port(server, security)} is for another host "
        f"({mismatch}, certificate is not valid for '{host}'); "
        "connect by a name the certificate lists"
    )


def test_ca_file_is_trusted_in_addition_to_the_system_store(
    start_tls_dovecot, settings, monkeypatch
):
    private = start_tls_dovecot()
    # Stands in for a publicly certified server: OpenSSL's default store is SSL_CERT_FILE.
    public = start_tls_dovecot()
    monkeypatch.setenv("SSL_CERT_FILE", str(public.server.ca_path))
    settings.PRICEFEED_IMAP_CA_FILE = str(private.server.ca_path)

    assert check_connection(_connection(private, "ssl")).startswith("connected to ")
    assert check_connection(_connection(public, "ssl")).startswith("connected to ")


def test_unreadable_ca_file_is_reported_as_such(settings, tmp_path):
    missing = tmp_path / "missing.pem"
    settings.PRICEFEED_IMAP_CA_FILE = str(missing)
    # Nothing listens on the port: the CA file is loaded before connecting.
    unreachable = ConnectionSettings(
        host=LOCALHOST, port=free_port(), security="ssl", username="u", password="s3cret!"
    )

    message = _failure(unreachable)

    assert message.endswith(
        f"cannot load PRICEFEED_IMAP_CA_FILE '{missing}': No such file or directory"
    )


def test_starttls_to_a_server_without_starttls_says_so(dovecot, no_ca_file):
    with IMAPClient(dovecot.host, dovecot.port, ssl=False, timeout=5) as client:
        assert b"STARTTLS" not in client.capabilities()  # Dovecot with ssl = no

    message = _failure(
        ConnectionSettings(
            host=dovecot.host,
            port=dovecot.port,
            security="starttls",
            username=dovecot.user,
            password=dovecot.password,
        )
    )

    assert message == f"127.0.0.1:{dovecot.port} does not offer STARTTLS; choose SSL/TLS or plain"


def test_implicit_tls_to_the_plain_port_says_the_port_does_not_speak_tls(tls_dovecot, settings):
    settings.PRICEFEED_IMAP_CA_FILE = str(tls_dovecot.server.ca_path)

    # The client reads Dovecot's "* OK" greeting where it expects a TLS record.
    message = _failure(_connection(tls_dovecot, "ssl", port=tls_dovecot.port))

    assert message == (
        f"TLS handshake with 127.0.0.1:{tls_dovecot.port} failed: the server does not speak "
        "TLS on that port; check the security setting"
    )


@pytest.mark.parametrize("security", ["plain", "starttls"])
def test_no_tls_to_the_imaps_port_times_out_with_a_hint(tls_dovecot, settings, security):
    settings.PRICEFEED_IMAP_CA_FILE = str(tls_dovecot.server.ca_path)
    imaps = tls_dovecot.server.tls_port

    # The imaps port waits for a TLS handshake, the client for a greeting: nobody speaks.
    message = _failure(_connection(tls_dovecot, security, port=imaps, connect_timeout=1))

    assert message == (
        f"127.0.0.1:{imaps} did not answer in time; if that port expects TLS from the start, "
        "choose SSL/TLS"
    )


# -- listen_mail -----------------------------------------------------------------------


def _tls_mailboxes(server: ImapServer, make_mailbox, make_config) -> tuple[Mailbox, Mailbox]:
    """One mailbox with implicit TLS on the imaps port, one with STARTTLS on the plain port."""
    over_ssl = make_mailbox(
        server, "over ssl", port=server.server.tls_port, security=Mailbox.Security.SSL
    )
    over_starttls = make_mailbox(server, "over starttls", security=Mailbox.Security.STARTTLS)
    make_config(over_ssl)
    make_config(over_starttls, "acme starttls")
    return over_ssl, over_starttls


def _last_error(mailbox: Mailbox) -> str:
    return Mailbox.objects.values_list("last_error", flat=True).get(pk=mailbox.pk)


def _logins(server: ImapServer) -> list[str]:
    """Dovecot's login lines; TLS logins say ``TLS``, plain ones from 127.0.0.1 ``secured``."""
    return re.findall(r"Login: user=<.*", server.server.log_path.read_text(errors="replace"))


def test_listener_with_the_ca_file_records_mail_over_ssl_and_starttls(
    tls_dovecot, make_mailbox, make_config, manage
):
    mailboxes = _tls_mailboxes(tls_dovecot, make_mailbox, make_config)
    listener = manage(
        "listen_mail", env={"PRICEFEED_IMAP_CA_FILE": str(tls_dovecot.server.ca_path)}
    )
    # Appended over the plain port without STARTTLS (allowed: disable_plaintext_auth = no).
    tls_dovecot.append(price_email(subject="over tls"))

    for mailbox in mailboxes:
        wait_until(
            lambda mailbox=mailbox: InboundMessage.objects.filter(mailbox=mailbox).exists(),
            30,
            f"message recorded for {mailbox.name}",
            on_timeout=listener.log,
        )
    for mailbox in mailboxes:
        mailbox.refresh_from_db()
        assert mailbox.last_error == ""
        assert mailbox.last_connected_at is not None
        assert mailbox.messages.get().subject == "over tls"
    logins = _logins(tls_dovecot)
    # The appender is the one login without TLS; both listeners logged in over TLS.
    assert sum(", secured," in line for line in logins) == 1, logins
    assert sum(", TLS," in line for line in logins) >= 2, logins
    assert "Traceback" not in listener.log()


def test_listener_without_the_ca_file_reports_not_trusted_without_a_traceback(
    tls_dovecot, make_mailbox, make_config, manage
):
    mailboxes = _tls_mailboxes(tls_dovecot, make_mailbox, make_config)
    listener = manage("listen_mail", env={"PRICEFEED_IMAP_CA_FILE": ""})
    tls_dovecot.append(price_email(subject="never read"))

    for mailbox in mailboxes:
        wait_until(
            lambda mailbox=mailbox: NOT_TRUSTED in _last_error(mailbox),
            30,
            f"not trusted recorded for {mailbox.name}",
            on_timeout=listener.log,
        )
    listener.wait_for_log(mailbox_line("over starttls", "; retry 2 in"), 20)
    log = listener.log()
    for mailbox in mailboxes:
        port = _port(tls_dovecot, mailbox.security)
        first = (
            f"ERROR mailboxes.listener [mailbox-{mailbox.pk}] "
            f"TLS certificate of 127.0.0.1:{port} {NOT_TRUSTED}; retry 1 in "
        )
        (line,) = [line for line in log.splitlines() if first in line]
        assert f" mailbox_id={mailbox.pk} mailbox_name={mailbox.name} " in line
    assert "Traceback" not in log
    assert not InboundMessage.objects.exists()
    assert listener.alive
