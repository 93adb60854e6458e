"""Where events may go: the checks of a webhook's URL and of a RabbitMQ target's, made
when an operator saves one and again before every connection.

TLS is the rule: ``https://`` and ``amqps://``, the server's certificate verified against
the system's trust store. Plain ``http://`` and ``amqp://`` only with
``PRICEFEED_DELIVERY_ALLOW_PLAIN`` (the tests' loopback servers, the demo). A URL carries
no query and no fragment for RabbitMQ (pika would read TLS options from a query, one of
which turns verification off), and a webhook's no user name or password (they would be
shown and logged with the URL; the signature is the webhook's credential).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

HTTP_PORTS = {"http": 80, "https": 443}
AMQP_PORTS = {"amqp": 5672, "amqps": 5671}


def _plain_allowed() -> bool:
    return bool(settings.PRICEFEED_DELIVERY_ALLOW_PLAIN)


@dataclass(frozen=True)
class WebhookAddress:
    scheme: str
    host: str
    port: int
    target: str  # path and query, as sent in the request line

    @property
    def origin(self) -> tuple[str, str, int]:
        """What one connection serves: scheme, host and port."""
        return self.scheme, self.host, self.port


def webhook_address(url: str) -> WebhookAddress:
    """The parts of a webhook's URL, or ValidationError (in the reader's language)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise ValidationError(_("Not a valid URL."), code="invalid") from exc
    if parts.scheme not in HTTP_PORTS or not parts.hostname:
        raise ValidationError(
            _("A webhook's URL starts with https:// and names a host."), code="scheme"
        )
    if parts.scheme == "http" and not _plain_allowed():
        raise ValidationError(
            _(
                "Plain http:// is not allowed: use https:// (PRICEFEED_DELIVERY_ALLOW_PLAIN "
                "allows it, for tests only)."
            ),
            code="plain",
        )
    if parts.username or parts.password:
        raise ValidationError(
            _("A webhook's URL holds no user name or password: the secret signs each request."),
            code="userinfo",
        )
    if parts.fragment:
        raise ValidationError(_("A webhook's URL has no #fragment."), code="fragment")
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    return WebhookAddress(
        scheme=parts.scheme,
        host=parts.hostname,
        port=port or HTTP_PORTS[parts.scheme],
        target=target,
    )


@dataclass(frozen=True)
class AmqpAddress:
    tls: bool
    host: str
    port: int
    virtual_host: str
    username: str


def amqp_address(url: str) -> AmqpAddress:
    """The parts of a RabbitMQ URL (``amqps://user@host:5671/vhost``), or
    ValidationError. A password in it is ignored here: ``split_password`` takes it out
    before the URL is stored."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise ValidationError(_("Not a valid URL."), code="invalid") from exc
    if parts.scheme not in AMQP_PORTS or not parts.hostname:
        raise ValidationError(
            _("A RabbitMQ URL starts with amqps:// and names a host."), code="scheme"
        )
    if parts.scheme == "amqp" and not _plain_allowed():
        raise ValidationError(
            _(
                "Plain amqp:// is not allowed: use amqps:// (PRICEFEED_DELIVERY_ALLOW_PLAIN "
                "allows it, for tests only)."
            ),
            code="plain",
        )
    if parts.query or parts.fragment:
        raise ValidationError(
            _("A RabbitMQ URL has no ?options or #fragment here."), code="options"
        )
    path = parts.path[1:] if parts.path.startswith("/") else parts.path
    return AmqpAddress(
        tls=parts.scheme == "amqps",
        host=parts.hostname,
        port=port or AMQP_PORTS[parts.scheme],
        virtual_host=unquote(path) if path else "/",
        username=unquote(parts.username or "guest"),
    )


def split_password(url: str) -> tuple[str, str | None]:
    """``url`` without its password, and the password (None when it has none)."""
    parts = urlsplit(url.strip())
    if parts.password is None:
        return url.strip(), None
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = quote(unquote(parts.username or ""), safe="") + "@" + host
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment)), unquote(
        parts.password
    )
