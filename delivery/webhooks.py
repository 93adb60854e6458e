"""Webhook requests over HTTP(S): one keep-alive connection per origin (scheme, host,
port) per batch, TLS verified against the system's trust store, redirects not followed
(a 3xx is an answer like any other that is not 2xx: retried)."""

from __future__ import annotations

import http.client
import logging
import ssl
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from core.texts import Text

from .endpoints import WebhookAddress
from .exceptions import DeliveryError
from .texts import HTTP_FAILED, HTTP_STATUS

logger = logging.getLogger(__name__)

# An answer's body is read (to keep the connection usable) up to this; a longer one
# closes the connection instead. Its first DETAIL characters are kept as the reason.
READ_LIMIT = 64 * 1024
DETAIL = 200
# A reused connection the server closed in between (its keep-alive timeout): the
# request is made once more on a new one.
_GONE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


@dataclass(frozen=True)
class Request:
    key: uuid.UUID  # what the result is reported under
    address: WebhookAddress
    body: bytes
    headers: dict[str, str]


def _connection(address: WebhookAddress, timeout: float) -> http.client.HTTPConnection:
    if address.scheme == "https":
        return http.client.HTTPSConnection(
            address.host, address.port, timeout=timeout, context=ssl.create_default_context()
        )
    return http.client.HTTPConnection(address.host, address.port, timeout=timeout)


def _unreachable(exc: BaseException) -> DeliveryError:
    detail = str(exc).strip() or type(exc).__name__
    return DeliveryError(Text(HTTP_FAILED, detail=f"{type(exc).__name__}: {detail}"[:DETAIL]))


def _exchange(conn: http.client.HTTPConnection, request: Request) -> BaseException | None:
    """One POST and its answer: None for a 2xx, else the error. Raises what the
    connection raised."""
    conn.request("POST", request.address.target, body=request.body, headers=request.headers)
    response = conn.getresponse()
    data = response.read(READ_LIMIT)
    if not response.isclosed():
        conn.close()  # an answer too long to drain: the next request gets a new connection
    if 200 <= response.status < 300:
        return None
    detail = data[:DETAIL].decode("utf-8", "replace").strip() or response.reason or "-"
    return DeliveryError(Text(HTTP_STATUS, status=response.status, detail=detail))


def post_all(
    requests: Iterable[Request], *, timeout: float
) -> dict[uuid.UUID, BaseException | None]:
    """POSTs every request; per key, None when the webhook answered 2xx, else the error.

    The requests to one origin go in order over one connection. A request on a reused
    connection that the server had closed is made once more on a new one; a new
    connection that fails (refused, timed out, TLS) fails the origin's remaining
    requests with the same error, so that a dead host costs one timeout per batch, not
    one per event."""
    by_origin: dict[tuple[str, str, int], list[Request]] = {}
    for request in requests:
        by_origin.setdefault(request.address.origin, []).append(request)
    results: dict[uuid.UUID, BaseException | None] = {}
    for origin, batch in by_origin.items():
        conn = _connection(batch[0].address, timeout)
        used = False
        done = 0
        try:
            for request in batch:
                try:
                    results[request.key] = _exchange(conn, request)
                except _GONE as exc:
                    conn.close()
                    if not used:
                        raise
                    logger.info("webhook connection closed by %s: %s; reconnecting", origin, exc)
                    results[request.key] = _exchange(conn, request)
                done += 1
                used = conn.sock is not None
        except (OSError, http.client.HTTPException) as exc:
            error = _unreachable(exc)
            for request in batch[done:]:
                results[request.key] = error
        finally:
            conn.close()
    return results
