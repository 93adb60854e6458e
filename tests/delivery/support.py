"""What the delivery tests share with the integration tests: a RabbitMQ exchange and
queue of a test's own, consumed with pika."""

from __future__ import annotations

import uuid

import pika

SECRET = "a-webhook-secret-of-some-length"


class Rabbit:
    """An exchange and a queue bound to it (names of this test's own), consumed with pika."""

    url = "amqp://guest@127.0.0.1:5672/"
    password = "guest"

    def __init__(self) -> None:
        suffix = uuid.uuid4().hex[:10]
        self.exchange = f"pricefeed-test-{suffix}"
        self.queue = f"pricefeed-test-{suffix}"
        self.connection = pika.BlockingConnection(
            pika.ConnectionParameters(
                "127.0.0.1", 5672, credentials=pika.PlainCredentials("guest", "guest")
            )
        )
        self.channel = self.connection.channel()
        self.channel.exchange_declare(self.exchange, exchange_type="topic", auto_delete=False)
        self.channel.queue_declare(self.queue, durable=True)
        self.channel.queue_bind(self.queue, self.exchange, routing_key="#")

    def messages(self, count: int, timeout: float = 20) -> list[tuple]:
        """The next ``count`` messages (properties, body), acknowledged; fewer if they
        do not come within ``timeout`` seconds."""
        got = []
        for method, properties, body in self.channel.consume(
            self.queue, inactivity_timeout=timeout
        ):
            if method is None:
                break
            self.channel.basic_ack(method.delivery_tag)
            got.append((properties, body))
            if len(got) == count:
                break
        self.channel.cancel()
        return got

    def close(self) -> None:
        self.channel.queue_delete(self.queue)
        self.channel.exchange_delete(self.exchange)
        self.connection.close()
