"""mailboxes.admin: what an operator sees and can do in the Django admin."""

from __future__ import annotations

import html
from collections.abc import Iterator

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse
from django.utils import translation

from devkit.servers import free_port
from devkit.servers.pymap import PymapServer
from mailboxes import leases, services
from mailboxes.imap import describe_error
from mailboxes.models import InboundMessage, Mailbox
from mailboxes.tasks import mailbox_test_connection
from pricefeed import intake
from tests.factories import create_config, create_mailbox, price_mail

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_password_hashing")]

Status = InboundMessage.Status
MESSAGES_URL = "admin:mailboxes_inboundmessage_changelist"
MAILBOXES_URL = "admin:mailboxes_mailbox_changelist"


def listed(response) -> set[int]:
    assert response.status_code == 200
    return {obj.pk for obj in response.context["cl"].result_list}


def flashed(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


@pytest.fixture
def messages(mailbox, make_message) -> dict[str, InboundMessage]:
    other = create_mailbox(name="Другой")
    return {
        "done": make_message(
            status=Status.DONE, subject="Прайс-лист июнь", message_id="<june@supplier.ru>"
        ),
        "ignored": make_message(
            status=Status.IGNORED, subject="Счёт на оплату", message_id="<invoice@x.ru>"
        ),
        "other": make_message(
            status=Status.DONE, subject="Остатки", message_id="<stock@other.ru>", mailbox=other
        ),
    }


# -- InboundMessage changelist ----------------------------------------------------------------


def test_message_changelist_renders_every_message(admin_client, messages):
    response = admin_client.get(reverse(MESSAGES_URL))

    assert listed(response) == {m.pk for m in messages.values()}
    content = response.content.decode()
    assert "Прайс-лист июнь" in content
    assert "Счёт на оплату" in content


def test_message_changelist_filters_by_status(admin_client, messages):
    response = admin_client.get(reverse(MESSAGES_URL), {"status__exact": Status.IGNORED})

    assert listed(response) == {messages["ignored"].pk}


def test_message_changelist_filters_by_mailbox(admin_client, mailbox, messages):
    response = admin_client.get(reverse(MESSAGES_URL), {"mailbox__id__exact": mailbox.pk})

    assert listed(response) == {messages["done"].pk, messages["ignored"].pk}


def test_message_changelist_searches_by_subject(admin_client, messages):
    response = admin_client.get(reverse(MESSAGES_URL), {"q": "прайс"})

    assert listed(response) == {messages["done"].pk}


def test_message_changelist_searches_by_message_id(admin_client, messages):
    response = admin_client.get(reverse(MESSAGES_URL), {"q": "<stock@other.ru>"})

    assert listed(response) == {messages["other"].pk}


# -- InboundMessage change page and raw download ----------------------------------------------


def test_message_page_shows_each_configs_verdict(admin_client, mailbox, make_message):
    create_config(mailbox, name="Опт", sender_pattern="", filename_pattern="прайс_*.xlsx")
    create_config(mailbox, name="Другой поставщик", sender_pattern="*@other.ru")
    message = make_message(price_mail([("прайс_июнь.xlsx", b"data")]))
    intake.message_process(message_id=message.pk, worker="w1")

    response = admin_client.get(reverse("admin:mailboxes_inboundmessage_change", args=[message.pk]))

    assert response.status_code == 200
    content = response.content.decode()
    assert "<th>config</th><th>verdict</th><th>why</th>" in content
    assert "<tr><td>Опт</td><td>✔ matched</td><td>matched 1 file(s)</td></tr>" in content
    assert "<td>Другой поставщик</td><td>✘ no match</td>" in content
    assert "does not match &#x27;*@other.ru&#x27;" in content
    assert "прайс_июнь.xlsx" in content
    assert reverse("admin:mailboxes_inboundmessage_raw", args=[message.pk]) in content


def test_rejected_message_page_shows_the_mime_defects(admin_client, make_message):
    raw = b"From: a@supplier.ru\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed\r\n\r\nx\r\n"
    message = make_message(raw)
    intake.message_process(message_id=message.pk, worker="w1")

    response = admin_client.get(reverse("admin:mailboxes_inboundmessage_change", args=[message.pk]))

    assert response.status_code == 200
    content = response.content.decode()
    assert "malformed MIME" in content
    assert "<div>NoBoundaryInMultipartDefect</div>" in content


def test_unprocessed_message_page_says_not_processed_yet(admin_client, make_message):
    message = make_message()

    response = admin_client.get(reverse("admin:mailboxes_inboundmessage_change", args=[message.pk]))

    assert response.status_code == 200
    assert "not processed yet" in response.content.decode()


def test_raw_download_returns_the_exact_bytes_as_rfc822(admin_client, make_message):
    raw = price_mail([("прайс.xlsx", bytes(range(256)))]) + b"\r\n\x00trailing\xff"
    message = make_message(raw)

    response = admin_client.get(reverse("admin:mailboxes_inboundmessage_raw", args=[message.pk]))

    assert response.status_code == 200
    assert response.content == raw
    assert response["Content-Type"] == "message/rfc822"
    assert response["Content-Disposition"] == f'attachment; filename="message-{message.pk}.eml"'


def test_raw_download_of_a_message_refused_unread_is_not_found(admin_client, make_message):
    message = make_message(None, status=Status.REJECTED)

    response = admin_client.get(reverse("admin:mailboxes_inboundmessage_raw", args=[message.pk]))

    assert response.status_code == 404


def test_raw_download_requires_staff_login(client, make_message):
    message = make_message()

    response = client.get(reverse("admin:mailboxes_inboundmessage_raw", args=[message.pk]))

    assert response.status_code == 302
    assert "/login/" in response["Location"]


# -- InboundMessage actions -------------------------------------------------------------------


def test_reprocess_action_requeues_finished_messages(
    admin_client, make_message, enqueued, django_capture_on_commit_callbacks
):
    done = make_message(status=Status.DONE, attempts=1)
    failed = make_message(status=Status.FAILED, attempts=5, last_error="boom")
    processing = make_message(status=Status.PROCESSING, claimed_by="w1")

    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            reverse(MESSAGES_URL),
            {"action": "reprocess", "_selected_action": [done.pk, failed.pk, processing.pk]},
        )

    assert response.status_code == 302
    statuses = dict(InboundMessage.objects.values_list("pk", "status"))
    assert statuses == {
        done.pk: Status.RECEIVED,
        failed.pk: Status.RECEIVED,
        processing.pk: Status.PROCESSING,
    }
    assert sorted(enqueued) == sorted([done.pk, failed.pk])
    assert flashed(response) == [
        "2 messages queued for processing.",
        "1 skipped: in progress, waiting, or with no stored body.",
    ]


def test_mark_failed_action_fails_the_selected_messages(admin_client, admin_user, make_message):
    received = make_message(status=Status.RECEIVED)
    done = make_message(status=Status.DONE)

    response = admin_client.post(
        reverse(MESSAGES_URL),
        {"action": "mark_failed", "_selected_action": [received.pk, done.pk]},
    )

    assert response.status_code == 302
    received.refresh_from_db()
    done.refresh_from_db()
    assert received.status == Status.FAILED
    assert received.last_error == f"marked failed by {admin_user.username}"
    assert done.status == Status.DONE
    assert flashed(response) == ["1 message marked failed."]


# -- Mailbox pages ----------------------------------------------------------------------------


SECRET = "s3cret-imap-password"


def test_mailbox_changelist_renders_without_the_password(admin_client):
    mailbox = create_mailbox(
        host="imap.supplier.example",
        port=993,
        security=Mailbox.Security.SSL,
        username="buyer",
        password=SECRET,
    )

    response = admin_client.get(reverse(MAILBOXES_URL))

    assert listed(response) == {mailbox.pk}
    content = response.content.decode()
    assert "buyer on imap.supplier.example:993, SSL/TLS" in content
    assert SECRET not in content
    assert "fernet:" not in content


def test_mailbox_list_and_page_show_the_last_connection_error_and_the_listener(
    admin_client, mailbox
):
    services.mailbox_report_error(
        mailbox_id=mailbox.pk, error="authentication failed for user 'buyer'"
    )
    leases.lease_acquire(mailbox_id=mailbox.pk, owner="host-a:4242", ttl=30)

    listing = admin_client.get(reverse(MAILBOXES_URL)).content.decode()
    page = admin_client.get(
        reverse("admin:mailboxes_mailbox_change", args=[mailbox.pk])
    ).content.decode()

    assert "authentication failed for user &#x27;buyer&#x27;" in listing
    assert "host-a:4242" in listing
    assert "authentication failed for user &#x27;buyer&#x27;" in page


def test_a_mailbox_with_no_enabled_config_says_it_is_not_listened_to(admin_client, mailbox):
    with translation.override("ru"):
        listing = admin_client.get(reverse(MAILBOXES_URL), HTTP_ACCEPT_LANGUAGE="ru")
    assert "не слушается: нет включённой настройки" in listing.content.decode()

    create_config(mailbox)
    listing = admin_client.get(reverse(MAILBOXES_URL), HTTP_ACCEPT_LANGUAGE="ru")
    assert "не слушается" not in listing.content.decode()


def test_mailbox_change_page_renders_without_the_password(admin_client):
    mailbox = create_mailbox(host="imap.supplier.example", password=SECRET)
    create_config(mailbox, name="Опт", filename_pattern="прайс*")

    response = admin_client.get(reverse("admin:mailboxes_mailbox_change", args=[mailbox.pk]))

    assert response.status_code == 200
    content = response.content.decode()
    assert "imap.supplier.example" in content
    assert "Опт" in content
    assert SECRET not in content
    assert "fernet:" not in content


def test_mailbox_add_page_renders(admin_client):
    assert admin_client.get(reverse("admin:mailboxes_mailbox_add")).status_code == 200


@pytest.fixture
def tests_run_inline(monkeypatch):
    """A queued connection test runs at once, in this process, as a worker would."""
    monkeypatch.setattr(services, "enqueue_connection_test", mailbox_test_connection)


def run_test_connection(
    admin_client, mailbox: Mailbox, capture_on_commit
) -> tuple[list[str], Mailbox]:
    with capture_on_commit(execute=True):
        response = admin_client.post(
            reverse(MAILBOXES_URL), {"action": "test_connection", "_selected_action": [mailbox.pk]}
        )
    assert response.status_code == 302
    return flashed(response), Mailbox.objects.get(pk=mailbox.pk)


def plain_mailbox(host: str, port: int, password: str, **fields: object) -> Mailbox:
    return create_mailbox(
        name=fields.pop("name", "pymap"),
        host=host,
        port=port,
        security=fields.pop("security", Mailbox.Security.PLAIN),
        username=fields.pop("username", "pricefeed"),
        password=password,
        **fields,
    )


QUEUED = (
    "1 connection test queued: a worker runs it, and the mailbox's page shows the "
    "result under “Last connection test”."
)


def test_test_connection_queues_the_test_and_says_where_its_result_appears(
    admin_client, mailbox, monkeypatch, django_capture_on_commit_callbacks
):
    queued: list[int] = []
    monkeypatch.setattr(services, "enqueue_connection_test", queued.append)

    messages, mailbox = run_test_connection(
        admin_client, mailbox, django_capture_on_commit_callbacks
    )

    assert messages == [QUEUED]
    assert queued == [mailbox.pk]
    assert mailbox.test_requested_at is not None
    page = admin_client.get(reverse("admin:mailboxes_mailbox_change", args=[mailbox.pk]))
    assert "Last connection test" in page.content.decode()
    assert "queued: waiting for a worker" in page.content.decode()


def test_test_connection_of_a_pending_test_is_skipped(
    admin_client, mailbox, monkeypatch, django_capture_on_commit_callbacks
):
    queued: list[int] = []
    monkeypatch.setattr(services, "enqueue_connection_test", queued.append)
    run_test_connection(admin_client, mailbox, django_capture_on_commit_callbacks)
    admin_client.get(reverse(MAILBOXES_URL))  # shows (and so consumes) the first messages

    messages, _ = run_test_connection(admin_client, mailbox, django_capture_on_commit_callbacks)

    assert messages == ["1 skipped: a test asked for less than 300 s ago has not finished yet."]
    assert queued == [mailbox.pk]


@pytest.fixture(scope="module")
def pymap_server() -> Iterator[PymapServer]:
    with PymapServer() as server:
        yield server


@pytest.mark.usefixtures("tests_run_inline")
def test_test_connection_with_the_right_password_reports_the_folder_on_the_page(
    admin_client, pymap_server, django_capture_on_commit_callbacks
):
    mailbox = plain_mailbox(pymap_server.host, pymap_server.port, pymap_server.password)

    messages, mailbox = run_test_connection(
        admin_client, mailbox, django_capture_on_commit_callbacks
    )

    assert messages == [QUEUED]
    assert mailbox.test_succeeded is True
    assert mailbox.test_finished_at is not None
    assert mailbox.test_result.startswith(
        f"connected to {pymap_server.host}:{pymap_server.port}, folder 'INBOX' has "
    )
    assert mailbox.test_result.endswith("; IDLE supported")
    page = admin_client.get(reverse("admin:mailboxes_mailbox_change", args=[mailbox.pk]))
    assert f"✔ {mailbox.test_result}".replace("'", "&#x27;") in page.content.decode()


@pytest.mark.usefixtures("tests_run_inline")
def test_test_connection_with_a_wrong_password_says_authentication_failed(
    admin_client, pymap_server, django_capture_on_commit_callbacks
):
    mailbox = plain_mailbox(pymap_server.host, pymap_server.port, "wrong-password")

    _, mailbox = run_test_connection(admin_client, mailbox, django_capture_on_commit_callbacks)

    assert mailbox.test_succeeded is False
    assert mailbox.test_result == "authentication failed for user 'pricefeed'"


@pytest.mark.usefixtures("tests_run_inline")
def test_test_connection_failures_before_login_read_alike(
    admin_client, pymap_server, django_capture_on_commit_callbacks
):
    """A closed port and a TLS handshake with a plain-text server: one message."""
    closed = plain_mailbox("127.0.0.1", free_port(), "whatever", security=Mailbox.Security.SSL)
    tls_to_plain = plain_mailbox(
        pymap_server.host,
        pymap_server.port,
        pymap_server.password,
        security=Mailbox.Security.SSL,
        name="tls to plain",
    )

    results = []
    for mailbox in (closed, tls_to_plain):
        _, mailbox = run_test_connection(admin_client, mailbox, django_capture_on_commit_callbacks)
        assert mailbox.test_succeeded is False
        results.append(mailbox.test_result.replace(str(mailbox.port), "PORT"))

    assert (
        results
        == [
            "could not connect to 127.0.0.1:PORT with SSL/TLS (no connection, no answer, or no "
            "verified IMAP server there; check host, port, security and the server's certificate)"
        ]
        * 2
    )


# -- in Russian ----------------------------------------------------------------------------


@pytest.mark.usefixtures("tests_run_inline")
def test_a_connection_test_result_is_shown_in_the_readers_language(
    admin_client, pymap_server, django_capture_on_commit_callbacks
):
    """Written by a worker in English (the column, the logs), read in Russian."""
    mailbox = plain_mailbox(pymap_server.host, pymap_server.port, "wrong-password")
    _, mailbox = run_test_connection(admin_client, mailbox, django_capture_on_commit_callbacks)
    url = reverse("admin:mailboxes_mailbox_change", args=[mailbox.pk])

    with translation.override("ru"):
        page = admin_client.get(url, headers={"accept-language": "ru"})

    assert mailbox.test_result == "authentication failed for user 'pricefeed'"
    content = html.unescape(page.content.decode())
    assert "✘ не удалось войти под пользователем 'pricefeed'" in content
    assert "Последняя проверка подключения" in content
    assert "Имя пользователя" in content


def test_the_mailbox_list_speaks_russian(admin_client, mailbox):
    with translation.override("ru"):
        page = admin_client.get(reverse(MAILBOXES_URL), headers={"accept-language": "ru"})

    content = page.content.decode()
    assert "Почтовые ящики" in content
    assert "Последнее подключение" in content
    assert "Проверить подключение (вход и выбор папки)" in content


def test_the_message_list_shows_statuses_in_russian(admin_client, messages):
    with translation.override("ru"):
        page = admin_client.get(
            reverse(MESSAGES_URL), {"status__exact": "IGNORED"}, headers={"accept-language": "ru"}
        )

    content = page.content.decode()
    assert "Входящие сообщения" in content
    assert "Пропущено (ни одна настройка не подошла)" in content


def test_a_listeners_error_is_shown_in_the_readers_language(admin_client, mailbox):
    error = describe_error(ConnectionRefusedError(), services.connection_settings(mailbox))
    services.mailbox_report_error(mailbox_id=mailbox.pk, error=error)
    change_url = reverse("admin:mailboxes_mailbox_change", args=[mailbox.pk])

    with translation.override("ru"):
        listed_page = admin_client.get(reverse(MAILBOXES_URL), headers={"accept-language": "ru"})
        page = admin_client.get(change_url, headers={"accept-language": "ru"})

    assert Mailbox.objects.get(pk=mailbox.pk).last_error == (
        "connection to imap.supplier.example:993 refused (nothing listening?)"
    )
    said = "imap.supplier.example:993: в подключении отказано (там ничего не слушает?)"
    assert said in html.unescape(listed_page.content.decode())
    assert said in html.unescape(page.content.decode())
