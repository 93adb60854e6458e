"""Issue 32's path through real components: a supplier's list mailed into Dovecot,
``listen_mail`` and ``qcluster`` importing it, ``dispatch_outbox`` running the matching,
the offers and our prices, and the delivery of what changed to a webhook receiver (a
real HTTP server) and to RabbitMQ — every event id at least once and nothing else.

How long after the import finished each event reached the receivers is printed (the
suite holds no timing threshold: the machines are shared)."""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from decimal import Decimal

import pika

from delivery.kinds import EventKind
from delivery.models import AmqpTarget, Webhook
from delivery.signing import verify
from outbox.models import OutboxEvent
from pricefeed.models import PriceImport
from pricing.models import Offer, PriceRule, ProductPrice
from products.models import Product, SupplierLink
from tests.delivery.support import SECRET, Rabbit

from .support import price_email, wait_until

KINDS = list(EventKind)
ENV = {"PRICEFEED_DELIVERY_ALLOW_PLAIN": "true", "PRICEFEED_DELIVERY_TIMEOUT": "5"}


def price_list(price: str) -> bytes:
    return (
        "Прайс-лист ООО «Ромашка»;;\r\n"
        "Артикул;Наименование;Цена\r\n"
        f"R-1;Болт М8х40 оцинк.;{price}\r\n"
        "R-2;Гайка М8;3,00\r\n"
    ).encode("cp1251")


class Consumer:
    """The queue consumed in a thread of its own as messages come, with when each came."""

    def __init__(self, rabbit: Rabbit) -> None:
        self.rabbit = rabbit
        self.got: list[tuple[float, object, bytes]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        connection = pika.BlockingConnection(
            pika.ConnectionParameters(
                "127.0.0.1", 5672, credentials=pika.PlainCredentials("guest", "guest")
            )
        )
        channel = connection.channel()
        for method, properties, body in channel.consume(self.rabbit.queue, inactivity_timeout=0.1):
            if self.stop.is_set():
                break
            if method is None:
                continue
            self.got.append((time.time(), properties, body))
            channel.basic_ack(method.delivery_tag)
        channel.cancel()
        connection.close()


def test_a_mailed_list_changes_the_best_offer_and_price_and_both_endpoints_hear_it(
    dovecot, make_mailbox, make_config, manage, receiver, rabbit, capsys
):
    bolt = Product.objects.create(own_code="П-1", name="Болт М8х40", category="Крепёж")
    nut = Product.objects.create(own_code="П-2", name="Гайка М8", category="Крепёж")
    mailbox = make_mailbox(dovecot)
    config = make_config(
        mailbox, name="Ромашка", sender_pattern="*@romashka.test", filename_pattern="*.csv"
    )
    for sku, product in (("R-1", bolt), ("R-2", nut)):
        SupplierLink.objects.create(
            config=config, supplier_sku=sku, product=product, kind="manual",
            state="confirmed", confidence=Decimal(1),
        )  # fmt: skip
    PriceRule.objects.create(name="Всё", markup_percent=20, rounding="1", hold_percent=None)
    Webhook.objects.create(name="Магазин", url=receiver.url, secret=SECRET, kinds=KINDS)
    AmqpTarget.objects.create(
        name="1С", url=rabbit.url, password=rabbit.password, exchange=rabbit.exchange,
        kinds=KINDS,
    )  # fmt: skip
    consumer = Consumer(rabbit)
    manage("listen_mail", env=ENV)
    manage("qcluster", env=ENV)
    manage("dispatch_outbox", env=ENV)

    def mail(price: str, n: int) -> PriceImport:
        dovecot.append(
            price_email(
                sender="Отдел продаж <sales@romashka.test>",
                subject=f"Прайс {n}",
                attachments=[(f"прайс{n}.csv", price_list(price))],
            )
        )
        wait_until(
            lambda: (
                PriceImport.objects.filter(config=config, accepted_at__isnull=False).count() == n
            ),
            120,
            f"list {n} accepted",
        )
        return PriceImport.objects.filter(config=config).order_by("-pk").first()

    first = mail("100,00", 1)
    wait_until(
        lambda: ProductPrice.objects.filter(product=bolt, price=Decimal("120.00")).exists(),
        120,
        "the bolt priced from the first list",
    )
    second = mail("150,00", 2)
    wait_until(
        lambda: ProductPrice.objects.filter(product=bolt, price=Decimal("180.00")).exists(),
        120,
        "the bolt priced again from the second list",
    )
    best = Offer.objects.get(product=bolt, best=True)
    assert (best.price, best.sku) == (Decimal("150.0000"), "R-1")

    published = {str(e.id): e for e in OutboxEvent.objects.filter(kind__in=[str(k) for k in KINDS])}
    wait_until(
        lambda: {json.loads(r.body)["id"] for r in receiver.received} >= set(published),
        60,
        "every event at the webhook",
    )
    wait_until(
        lambda: {p.message_id for _, p, _ in consumer.got} >= set(published),
        60,
        "every event in RabbitMQ",
    )
    time.sleep(1)  # anything more would come now
    consumer.stop.set()
    consumer.thread.join(10)

    # Every event of the three kinds, each with its id, signed; nothing else.
    by_hook: dict[str, int] = defaultdict(int)
    for request in receiver.received:
        h = request.headers
        assert verify(SECRET, h["X-Pricefeed-Timestamp"], request.body, h["X-Pricefeed-Signature"])
        body = json.loads(request.body)
        assert body["id"] == h["Idempotency-Key"]
        by_hook[body["id"]] += 1
    assert set(by_hook) == set(published)
    assert {p.message_id for _, p, _ in consumer.got} == set(published)
    kinds: dict[str, int] = defaultdict(int)
    items: dict[str, list[str]] = defaultdict(list)
    for event in published.values():
        kinds[event.kind] += 1
        items[event.kind] += [item["own_code"] for item in event.payload.get("items", ())]
    # Two imports finished; the bolt's and the nut's offers and prices changed with the
    # first list, the bolt's again with the second. (A list's refresh runs as parts side
    # by side, each announcing its own products: how many events carry them depends on
    # the parts the products' ids fall in.)
    assert set(kinds) == {"import.finished", "offer.changed", "price.changed"}
    assert kinds["import.finished"] == 2
    assert sorted(items["offer.changed"]) == ["П-1", "П-1", "П-2"]
    assert sorted(items["price.changed"]) == ["П-1", "П-1", "П-2"]
    second_changes = [
        e for e in published.values()
        if e.kind == "price.changed" and any(i["own_code"] == "П-1" and i["before"] == "120.00"
                                              for i in e.payload["items"])
    ]  # fmt: skip
    assert len(second_changes) == 1
    change = second_changes[0].payload["items"][0]
    assert (change["price"], change["available"]) == ("180.00", True)

    # How long after the second import finished its events came (printed).
    finished = second.finished_at.timestamp()
    ids = {
        str(e.id)
        for e in published.values()
        if e.created_at.timestamp() >= finished - 0.001 or e.aggregate_id == str(second.pk)
    }
    hook_at = {json.loads(r.body)["id"]: r.at for r in receiver.received}
    amqp_at = {p.message_id: at for at, p, _ in consumer.got}
    with capsys.disabled():
        print(
            f"\nlist 2 finished → its events received: webhook "
            f"{max(hook_at[i] for i in ids) - finished:.2f} s, RabbitMQ "
            f"{max(amqp_at[i] for i in ids) - finished:.2f} s ({len(ids)} events)"
        )
    assert first.pk != second.pk
