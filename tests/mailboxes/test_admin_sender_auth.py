"""The admin and trusted senders: the message page shows the sender's verdict, and a
config's sender_auth is set and listed where its other matching fields are."""

from __future__ import annotations

import pytest
from django.urls import reverse

from pricefeed import intake
from pricefeed.models import PriceListConfig
from tests.factories import create_config, price_mail

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_password_hashing")]

MX = "mx.buyer.example"


def message_page(admin_client, message) -> str:
    response = admin_client.get(reverse("admin:mailboxes_inboundmessage_change", args=[message.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_message_page_shows_why_a_requiring_config_did_not_match(
    admin_client, mailbox, make_message, settings
):
    settings.PRICEFEED_AUTHSERV_IDS = [MX]
    create_config(mailbox, name="Опт", sender_pattern="*@supplier.ru", sender_auth="require")
    raw = (
        f"Authentication-Results: {MX}; dkim=pass header.d=bulk.example; spf=pass"
        " smtp.mailfrom=bounce@bulk.example; dmarc=fail header.from=supplier.ru\r\n"
    ).encode() + price_mail()
    message = make_message(raw)
    intake.message_process(message_id=message.pk, worker="w1")

    content = message_page(admin_client, message)

    why = (
        "dmarc=fail header.from=supplier.ru, dkim=pass header.d=bulk.example"
        f" (Authentication-Results from {MX})"
    )
    assert f"<td>✘ no match</td><td>sender not authenticated: {why}</td>" in content
    assert f"<p>Sender ✘ not authenticated: {why}</p>" in content
    assert (
        f"<div>authserv-id {MX}: dmarc fail header.from=supplier.ru;"
        " dkim pass header.d=bulk.example; spf pass smtp.mailfrom=bulk.example</div>"
    ) in content


def test_message_page_shows_an_authenticated_sender(admin_client, mailbox, make_message, settings):
    settings.PRICEFEED_AUTHSERV_IDS = [MX]
    create_config(mailbox, name="Опт", sender_pattern="*@supplier.ru", sender_auth="require")
    raw = (
        f"Authentication-Results: {MX}; dmarc=pass header.from=supplier.ru\r\n".encode()
        + price_mail()
    )
    message = make_message(raw)
    intake.message_process(message_id=message.pk, worker="w1")

    content = message_page(admin_client, message)

    assert (
        f"<p>Sender ✔ authenticated: dmarc=pass for supplier.ru"
        f" (Authentication-Results from {MX})</p>"
    ) in content


def test_message_page_says_the_sender_was_not_checked_without_trusted_ids(
    admin_client, mailbox, make_message, settings
):
    settings.PRICEFEED_AUTHSERV_IDS = []
    create_config(mailbox, name="Опт")
    message = make_message()
    intake.message_process(message_id=message.pk, worker="w1")

    content = message_page(admin_client, message)

    assert (
        "<p>Sender not checked: no authserv-id is trusted (PRICEFEED_AUTHSERV_IDS is empty)</p>"
    ) in content


def test_config_list_shows_and_filters_by_sender_auth(admin_client, mailbox):
    create_config(mailbox, name="strict", sender_auth="require")
    create_config(mailbox, name="lenient", sender_auth="ignore")
    url = reverse("admin:pricefeed_pricelistconfig_changelist")

    response = admin_client.get(url, {"sender_auth__exact": "require"})

    assert response.status_code == 200
    assert [c.name for c in response.context["cl"].result_list] == ["strict"]
    assert "Require DMARC pass or an aligned DKIM pass" in response.content.decode()


def test_mailbox_page_offers_sender_auth_in_each_config_inline(admin_client, mailbox):
    config = create_config(mailbox, name="Опт")

    response = admin_client.get(reverse("admin:mailboxes_mailbox_change", args=[mailbox.pk]))

    assert response.status_code == 200
    assert 'name="configs-0-sender_auth"' in response.content.decode()
    assert config.sender_auth == PriceListConfig.SenderAuth.RECORD
