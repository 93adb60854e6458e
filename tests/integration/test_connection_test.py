"""Test connection and the IMAP address policy through real components: the admin's
forms and action, a recording TCP server of the test's own, Dovecot, a real django-q2
cluster and a real listen_mail."""

from __future__ import annotations

import html
import re

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from devkit.servers import free_port
from mailboxes import services
from mailboxes.models import Mailbox
from mailboxes.tasks import mailbox_test_connection
from tests.factories import create_mailbox
from tests.recorder import RecordingServer

from .support import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("fast_password_hashing")]

STORED = "stored-s3cret-for-the-original-server"
MAILBOXES = reverse("admin:mailboxes_mailbox_changelist")
ADD = reverse("admin:mailboxes_mailbox_add")
LOOPBACK_REFUSED = (
    "127.0.0.1 is not a public address (loopback); IMAP connections to it need "
    "PRICEFEED_IMAP_ALLOWED_NETWORKS to hold it"
)


def could_not_connect(host: str, port: int, security: str = "plain text") -> str:
    return (
        f"could not connect to {host}:{port} with {security} (no connection, no answer, or no "
        "verified IMAP server there; check host, port, security and the server's certificate)"
    )


@pytest.fixture
def editor(client: Client) -> Client:
    """Logged in as a staff user who may change mailboxes and test them, nothing more."""
    user = User.objects.create_user("editor", is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="mailboxes",
            codename__in=["view_mailbox", "change_mailbox", "add_mailbox", "test_mailbox"],
        )
    )
    client.force_login(user)
    return client


@pytest.fixture
def tests_run_inline(monkeypatch):
    """A queued connection test runs at once, in this process, as a worker would."""
    monkeypatch.setattr(services, "enqueue_connection_test", mailbox_test_connection)


def form_data(client: Client, url: str, **changes: object) -> dict[str, object]:
    """What the admin's add or change page at ``url`` would POST unchanged (the inline
    formsets' management forms included), with ``changes``. The password field is
    always sent empty unless given: the page never shows it."""
    response = client.get(url)
    assert response.status_code == 200
    form = response.context["adminform"].form
    data: dict[str, object] = {}
    for name in form.fields:
        value = form[name].value()
        if value is True:
            data[name] = "on"
        elif value not in (None, False):
            data[name] = value
    data["password"] = ""
    for inline in response.context["inline_admin_formsets"]:
        for field in inline.formset.management_form:
            data[field.html_name] = field.value()
    return data | changes


def run_test_connection(client: Client, capture_on_commit, *mailboxes: Mailbox) -> list[Mailbox]:
    with capture_on_commit(execute=True):
        response = client.post(
            MAILBOXES,
            {"action": "test_connection", "_selected_action": [m.pk for m in mailboxes]},
        )
    assert response.status_code == 302
    return [Mailbox.objects.get(pk=m.pk) for m in mailboxes]


def page_errors(response) -> str:
    assert response.status_code == 200, "the form was accepted"
    return html.unescape(response.content.decode())


# -- (a) a stored password never goes to another server ----------------------------------


@pytest.mark.django_db
@pytest.mark.usefixtures("tests_run_inline")
def test_a_stored_password_never_reaches_the_server_a_mailbox_is_switched_to(
    editor, django_capture_on_commit_callbacks
):
    with RecordingServer() as original, RecordingServer() as other:
        mailbox, scripted = (
            create_mailbox(
                name=name,
                host="127.0.0.1",
                port=original.port,
                security=Mailbox.Security.PLAIN,
                username="buyer",
                password=STORED,
            )
            for name in ("edited in admin", "switched by a script")
        )
        change = reverse("admin:mailboxes_mailbox_change", args=[mailbox.pk])

        # The change form: port switched, password left empty (kept, as on any edit).
        response = editor.post(change, form_data(editor, change, port=other.port))
        assert "The server changed (port): enter the password again." in page_errors(response)
        (tested,) = run_test_connection(editor, django_capture_on_commit_callbacks, mailbox)
        assert tested.port == original.port  # unchanged: tested where it belongs
        assert tested.test_result == "authentication failed for user 'buyer'"

        # The password typed again in the same save: that one goes to the new server.
        response = editor.post(
            change, form_data(editor, change, port=other.port, password="typed-for-other")
        )
        assert response.status_code == 302, page_errors(response)
        (tested,) = run_test_connection(editor, django_capture_on_commit_callbacks, mailbox)
        assert tested.test_result == "authentication failed for user 'buyer'"

        # Any other path that saves a switch (a script, the shell) drops the password.
        scripted.port = other.port
        scripted.save()
        (tested,) = run_test_connection(editor, django_capture_on_commit_callbacks, scripted)
        assert tested.test_succeeded is False
        assert tested.test_result.startswith("no password stored for this server")

    # The recorders refuse every LOGIN after reading it: the original one read the
    # stored password, the other would have, had it been sent there.
    assert STORED.encode() in original.received()
    assert b"typed-for-other" in other.received()
    assert STORED.encode() not in other.received()
    assert other.connections == 1  # the test with the typed password, nothing else


# -- (b) no port scanner, no banner reader -----------------------------------------------


@pytest.mark.django_db
@pytest.mark.usefixtures("tests_run_inline")
def test_with_no_allowed_networks_loopback_and_private_hosts_are_refused_at_save_and_connect(
    editor, settings, django_capture_on_commit_callbacks
):
    settings.PRICEFEED_IMAP_ALLOWED_NETWORKS = []
    with RecordingServer(b"* OK [CAPABILITY IMAP4rev1] secret-banner ready") as listening:
        closed_port = free_port()
        for host, refused in [
            ("127.0.0.1", LOOPBACK_REFUSED),
            ("10.1.2.3", "10.1.2.3 is not a public address (private)"),
        ]:
            response = editor.post(
                ADD,
                form_data(
                    editor,
                    ADD,
                    name="new",
                    host=host,
                    port=listening.port,
                    security=Mailbox.Security.STARTTLS,
                    username="buyer",
                    password="whatever",
                ),
            )
            assert refused in page_errors(response)
        assert not Mailbox.objects.exists()

        # Saved while the allow-list held them: refused when connecting.
        mailboxes = [
            create_mailbox(name="open", host="127.0.0.1", port=listening.port),
            create_mailbox(name="closed", host="127.0.0.1", port=closed_port),
            create_mailbox(name="private", host="10.1.2.3", port=993),
        ]
        tested = run_test_connection(editor, django_capture_on_commit_callbacks, *mailboxes)

    assert [(m.test_succeeded, m.test_result) for m in tested] == [
        (False, LOOPBACK_REFUSED),
        (False, LOOPBACK_REFUSED),
        (
            False,
            "10.1.2.3 is not a public address (private); IMAP connections to it need "
            "PRICEFEED_IMAP_ALLOWED_NETWORKS to hold it",
        ),
    ]
    assert listening.connections == 0


@pytest.mark.django_db
@pytest.mark.usefixtures("tests_run_inline")
def test_test_results_tell_nothing_of_what_answered_before_the_login(
    editor, settings, django_capture_on_commit_callbacks
):
    """Closed, silent, another protocol, an IMAP server saying BYE: one message, the
    peers' words nowhere."""
    settings.PRICEFEED_IMAP_CONNECT_TIMEOUT = 1
    settings.PRICEFEED_IMAP_TIMEOUT = 1
    with (
        RecordingServer(b"SSH-2.0-OpenSSH_9.2p1 secret-banner", imap=False) as other_protocol,
        RecordingServer(None, imap=False) as silent,
        RecordingServer(b"* BYE secret-banner: go away", imap=False) as bye,
    ):
        ports = {
            "closed": free_port(),
            "other protocol": other_protocol.port,
            "silent": silent.port,
            "bye": bye.port,
        }
        mailboxes = [
            create_mailbox(name=name, host="127.0.0.1", port=port, security=Mailbox.Security.PLAIN)
            for name, port in ports.items()
        ]
        tested = run_test_connection(editor, django_capture_on_commit_callbacks, *mailboxes)

    for mailbox in tested:
        assert (mailbox.name, mailbox.test_succeeded, mailbox.test_result) == (
            mailbox.name,
            False,
            could_not_connect("127.0.0.1", mailbox.port),
        )
        assert "banner" not in mailbox.test_result


# -- (c) end to end, through a real worker --------------------------------------------------


def test_test_connection_runs_in_a_worker_and_shows_its_result(
    dovecot, make_mailbox, manage, admin_client
):
    dovecot.server.deliver(dovecot.user, b"From: a@acme.test\r\nSubject: one\r\n\r\nhi\r\n")
    good = make_mailbox(dovecot, "good")
    refused = make_mailbox(dovecot, "refused", port=free_port())
    cluster = manage("qcluster")

    response = admin_client.post(
        MAILBOXES, {"action": "test_connection", "_selected_action": [good.pk, refused.pk]}
    )
    assert response.status_code == 302
    finished = wait_until(
        lambda: (
            list(Mailbox.objects.filter(test_finished_at__isnull=False).order_by("name"))
            if not Mailbox.objects.filter(test_finished_at=None).exists()
            else None
        ),
        60,
        "both connection tests finished",
        on_timeout=cluster.log,
    )

    good, refused = finished
    assert good.test_succeeded is True
    assert re.fullmatch(
        rf"connected to 127\.0\.0\.1:{dovecot.port}, folder 'INBOX' has 1 message\(s\), "
        r"UIDVALIDITY \d+; IDLE supported",
        good.test_result,
    ), good.test_result
    assert refused.test_succeeded is False
    assert refused.test_result == could_not_connect("127.0.0.1", refused.port)
    page = admin_client.get(reverse("admin:mailboxes_mailbox_change", args=[good.pk]))
    assert f"✔ {good.test_result}" in html.unescape(page.content.decode())


# -- the listener goes through the same policy -------------------------------------------


def test_listener_refuses_plain_text_and_loopback_and_says_why(
    dovecot, make_mailbox, make_config, manage
):
    plain = make_mailbox(dovecot, "plain")
    loopback = make_mailbox(dovecot, "loopback", security=Mailbox.Security.STARTTLS)
    for mailbox in (plain, loopback):
        make_config(mailbox, f"acme {mailbox.name}")
    listener = manage(
        "listen_mail",
        env={"PRICEFEED_IMAP_ALLOW_PLAIN": "false", "PRICEFEED_IMAP_ALLOWED_NETWORKS": ""},
    )

    def errors() -> dict[str, str] | None:
        found = dict(Mailbox.objects.values_list("name", "last_error"))
        return found if all(found.values()) else None

    found = wait_until(errors, 30, "both mailboxes' errors recorded", on_timeout=listener.log)

    assert found == {
        "plain": (
            "plain-text IMAP (no TLS) is not allowed (PRICEFEED_IMAP_ALLOW_PLAIN is off); "
            "choose SSL/TLS or STARTTLS"
        ),
        "loopback": LOOPBACK_REFUSED,
    }
    # Dovecot names the user of every login attempt, failed or not: none was made.
    assert f"user=<{dovecot.user}>" not in dovecot.server.log_path.read_text(errors="replace")
    assert "Traceback" not in listener.log()
