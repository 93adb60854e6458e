"""Publishing to RabbitMQ (AMQP 0-9-1) with pika: one BlockingConnection per target per
batch, publisher confirms on, every message ``mandatory`` and persistent.

With confirms on, pika's ``basic_publish`` returns once the broker has taken the message
(for a persistent message to a durable queue: written to disk), raises ``NackError``
when the broker refuses it and ``UnroutableError`` when no queue is bound to take it
(``mandatory``): only a confirmed message counts as delivered.
"""

from __future__ import annotations

import logging
import ssl
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

import pika
import pika.exceptions

from core.texts import Text

from .endpoints import AmqpAddress
from .exceptions import DeliveryError
from .texts import AMQP_CHANNEL, AMQP_FAILED, AMQP_NACKED, AMQP_UNROUTABLE

logger = logging.getLogger(__name__)

DETAIL = 200


@dataclass(frozen=True)
class Target:
    """Where messages go: the broker, its credentials, the exchange."""

    address: AmqpAddress
    password: str
    exchange: str

    @property
    def connection_key(self) -> tuple:
        a = self.address
        return (a.tls, a.host, a.port, a.virtual_host, a.username, self.password)


@dataclass(frozen=True)
class Message:
    key: uuid.UUID  # what the result is reported under
    target: Target
    routing_key: str
    body: bytes
    message_id: str
    type: str
    timestamp: int


def parameters(target: Target, *, timeout: float) -> pika.ConnectionParameters:
    """The connection's parameters: TLS verified against the system's trust store for
    amqps (the host name checked), timeouts on every wait."""
    a = target.address
    ssl_options = (
        pika.SSLOptions(ssl.create_default_context(), server_hostname=a.host) if a.tls else None
    )
    return pika.ConnectionParameters(
        host=a.host,
        port=a.port,
        virtual_host=a.virtual_host,
        credentials=pika.PlainCredentials(a.username, target.password or "guest"),
        ssl_options=ssl_options,
        socket_timeout=timeout,
        stack_timeout=timeout,
        blocked_connection_timeout=timeout,
        connection_attempts=1,
    )


def _detail(exc: BaseException) -> str:
    text = str(exc).strip() or repr(exc)
    return f"{type(exc).__name__}: {text}"[:DETAIL]


def publish_all(
    messages: Iterable[Message], *, timeout: float
) -> dict[uuid.UUID, BaseException | None]:
    """Publishes every message; per key, None once the broker confirmed it, else the
    error. A failure of the connection or the channel fails the rest of that target's
    messages with it (retried by the outbox)."""
    by_connection: dict[tuple, list[Message]] = {}
    for message in messages:
        by_connection.setdefault(message.target.connection_key, []).append(message)
    results: dict[uuid.UUID, BaseException | None] = {}
    for batch in by_connection.values():
        done = 0
        try:
            connection = pika.BlockingConnection(parameters(batch[0].target, timeout=timeout))
        except Exception as exc:
            error = DeliveryError(Text(AMQP_FAILED, detail=_detail(exc)))
            for message in batch:
                results[message.key] = error
            continue
        try:
            channel = connection.channel()
            channel.confirm_delivery()
            for message in batch:
                try:
                    channel.basic_publish(
                        exchange=message.target.exchange,
                        routing_key=message.routing_key,
                        body=message.body,
                        properties=pika.BasicProperties(
                            content_type="application/json",
                            delivery_mode=pika.DeliveryMode.Persistent,
                            message_id=message.message_id,
                            type=message.type,
                            timestamp=message.timestamp,
                            app_id="pricefeed",
                        ),
                        mandatory=True,
                    )
                    results[message.key] = None
                except pika.exceptions.UnroutableError:
                    results[message.key] = DeliveryError(
                        Text(AMQP_UNROUTABLE, key=message.routing_key[:DETAIL])
                    )
                except pika.exceptions.NackError:
                    results[message.key] = DeliveryError(Text(AMQP_NACKED))
                done += 1
        except pika.exceptions.ChannelClosed as exc:
            error = DeliveryError(Text(AMQP_CHANNEL, detail=_detail(exc)))
            for message in batch[done:]:
                results[message.key] = error
        except Exception as exc:  # the connection failed midway
            error = DeliveryError(Text(AMQP_FAILED, detail=_detail(exc)))
            for message in batch[done:]:
                results[message.key] = error
        finally:
            try:
                if connection.is_open:
                    connection.close()
            except Exception:  # closing a broken connection: nothing more to do
                logger.debug("closing the AMQP connection failed", exc_info=True)
    return results
