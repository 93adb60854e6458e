"""Every environment variable pricefeed reads, in one typed registry.

``config/settings.py`` reads them; ``docs/configuration.md`` and ``.env.example`` are
generated from this list (``python -m config.registry --write``), and
``tests/config/test_registry.py`` fails when a variable the code reads is missing here,
when its type differs from the one settings.py reads it as, or when a generated file is
not what this list makes.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Setting:
    """One environment variable: its ``name``, the ``type`` settings.py reads it as,
    its ``default`` as the configuration table shows it, one line of ``doc``, the
    modules that read it (``reads``), the ``section`` it is listed under and the value
    ``.env.example`` gives it (``example``; None: the line is commented out there, the
    default being computed or the variable required)."""

    name: str
    type: type
    default: str
    doc: str
    reads: tuple[str, ...]
    section: str
    example: str | None


SETTINGS: tuple[Setting, ...] = (
    # -- Django ------------------------------------------------------------------------------
    Setting(
        "DATABASE_URL",
        str,
        default="none: required",
        doc=(
            "PostgreSQL (`postgres://user:pw@host:5432/db`), the one database engine; any "
            "other is refused at start"
        ),
        reads=("config.settings",),
        section="Django",
        example="",
    ),
    Setting(
        "SECRET_KEY",
        str,
        default="generated once into `var/secret_key`",
        doc="Django secret; set it (the same) on every instance",
        reads=("core.crypto", "fleet.management.commands.qcluster"),
        section="Django",
        example="",
    ),
    Setting(
        "SECRET_KEY_FALLBACKS",
        list,
        default="empty",
        doc=(
            "earlier `SECRET_KEY`s, comma-separated, still accepted while rotated out "
            "(sessions, and secrets stored under a key derived from one)"
        ),
        reads=("core.crypto",),
        section="Django",
        example="",
    ),
    Setting(
        "PRICEFEED_LOGIN_FAILURES",
        int,
        default="`5`",
        doc=(
            "failed admin logins of one username from one address that lock the pair out "
            "(django-axes): that attempt and every one until the lock ends is answered 429 "
            "(see [Operations](operations.md#login-throttling), how to unlock)"
        ),
        reads=("config.settings",),
        section="Django",
        example="5",
    ),
    Setting(
        "PRICEFEED_TRUSTED_PROXIES",
        list,
        default="empty",
        doc=(
            "addresses or networks of the reverse proxies in front of the web process "
            "(`127.0.0.1,::1` for a proxy on the same host): from them, the client address "
            "the login throttling counts is read from X-Forwarded-For (the proxy must set it "
            "itself); empty: every request is counted by the connection's address"
        ),
        reads=("config.settings", "core.clientip"),
        section="Django",
        example="",
    ),
    Setting(
        "PRICEFEED_LOGIN_LOCKOUT",
        int,
        default="`900`",
        doc="seconds a locked-out username and address stay locked",
        reads=("config.settings",),
        section="Django",
        example="900",
    ),
    Setting(
        "DEBUG",
        bool,
        default="`false`",
        doc="Django debug mode",
        reads=("core.crypto", "core.metrics"),
        section="Django",
        example="false",
    ),
    Setting(
        "ALLOWED_HOSTS",
        list,
        default="`localhost,127.0.0.1,[::1]`",
        doc="hosts the admin answers to",
        reads=("config.settings",),
        section="Django",
        example="localhost,127.0.0.1,[::1]",
    ),
    Setting(
        "CSRF_TRUSTED_ORIGINS",
        list,
        default="empty",
        doc="origins allowed to POST (behind a proxy): `https://pricefeed.example.com`",
        reads=("config.settings",),
        section="Django",
        example="",
    ),
    # -- HTTPS -------------------------------------------------------------------------------
    Setting(
        "SECURE_SSL_REDIRECT",
        bool,
        default="`true` (`false` with `DEBUG` on)",
        doc="plain HTTP redirected to HTTPS",
        reads=("config.settings",),
        section="HTTPS",
        example=None,  # 'true' in the example, commented out
    ),
    Setting(
        "SESSION_COOKIE_SECURE",
        bool,
        default="`true` (`false` with `DEBUG` on)",
        doc="cookies sent over HTTPS only",
        reads=("config.settings",),
        section="HTTPS",
        example=None,  # 'true' in the example, commented out
    ),
    Setting(
        "CSRF_COOKIE_SECURE",
        bool,
        default="`true` (`false` with `DEBUG` on)",
        doc="cookies sent over HTTPS only",
        reads=("config.settings",),
        section="HTTPS",
        example=None,  # 'true' in the example, commented out
    ),
    Setting(
        "SECURE_HSTS_SECONDS",
        int,
        default="`3600` (`0` with `DEBUG` on)",
        doc=(
            "HSTS: browsers use only HTTPS for the host this long; raise it (`31536000`) "
            "once HTTPS works"
        ),
        reads=("config.settings",),
        section="HTTPS",
        example=None,  # '3600' in the example, commented out
    ),
    Setting(
        "SECURE_HSTS_INCLUDE_SUBDOMAINS",
        bool,
        default="`false`",
        doc=(
            "HSTS for every subdomain / preload-list eligibility: decisions about your "
            "whole domain, so off unless set (`check --deploy`'s W005 and W021 are "
            "silenced)"
        ),
        reads=("config.settings",),
        section="HTTPS",
        example="false",
    ),
    Setting(
        "SECURE_HSTS_PRELOAD",
        bool,
        default="`false`",
        doc=(
            "HSTS for every subdomain / preload-list eligibility: decisions about your "
            "whole domain, so off unless set (`check --deploy`'s W005 and W021 are "
            "silenced)"
        ),
        reads=("config.settings",),
        section="HTTPS",
        example="false",
    ),
    Setting(
        "SECURE_PROXY_SSL_HEADER",
        list,
        default="empty",
        doc=(
            "behind a TLS-terminating proxy: `HTTP_X_FORWARDED_PROTO,https` (the proxy must"
            " set the header itself)"
        ),
        reads=("config.settings",),
        section="HTTPS",
        example="",
    ),
    Setting(
        "TIME_ZONE",
        str,
        default="`UTC`",
        doc=(
            "the zone the admin shows times in, an IANA name such as `Europe/Moscow`: the "
            "lists say how long ago (or how soon) with the time and this zone on hover "
            "(`2026-12-01 22:05:03 MSK (Europe/Moscow)`); stored times are UTC, and leases,"
            " claims and backoff go by the database's clock whatever it says"
        ),
        reads=("pricefeed.models",),
        section="HTTPS",
        example="UTC",
    ),
    Setting(
        "LANGUAGE_CODE",
        str,
        default="`ru`",
        doc=(
            "the admin's language (`ru` or `en`) for a browser that asks for neither (its "
            "`Accept-Language`), and the language a new subscription's notification mails "
            "are written in (each subscription has its own); each user switches with the "
            "menu in the admin's header (kept in a cookie). Dates, times (24-hour in "
            "Russian) and decimal separators follow the language; thousands are not grouped"
            " (`USE_THOUSAND_SEPARATOR` off: the lists show ids and UIDs as plain numbers)"
        ),
        reads=("notifications.models",),
        section="HTTPS",
        example="ru",
    ),
    Setting(
        "LOG_LEVEL",
        str,
        default="`INFO`",
        doc="root log level",
        reads=("config.settings",),
        section="HTTPS",
        example="INFO",
    ),
    Setting(
        "LOG_FORMAT",
        str,
        default="`text`",
        doc=(
            "`text`: one line per record, `<time> <level> <logger> [<thread>] <message> "
            "key=value ...`, control characters escaped; `json`: one JSON object per record"
            " with the context keys as fields (see [architecture](architecture.md#logging))"
        ),
        reads=("config.settings",),
        section="HTTPS",
        example="text",
    ),
    Setting(
        "PRICEFEED_VAR_DIR",
        str,
        default="`var/` beside `manage.py`",
        doc=(
            "local state: generated secret key, static files, the demo's embedded "
            "PostgreSQL; set it for an installed package (`/var/lib/pricefeed`)"
        ),
        reads=("config.settings",),
        section="HTTPS",
        example="",
    ),
    Setting(
        "STATIC_ROOT",
        str,
        default="`PRICEFEED_VAR_DIR/static`",
        doc="where `collectstatic` puts the admin's static files (served by WhiteNoise)",
        reads=("config.settings",),
        section="HTTPS",
        example="",
    ),
    Setting(
        "PRICEFEED_DB_CONN_MAX_AGE",
        int,
        default="`600`",
        doc="persistent DB connections (django-q2's ORM broker needs them)",
        reads=("config.settings",),
        section="HTTPS",
        example="600",
    ),
    Setting(
        "PRICEFEED_DB_CONNECT_TIMEOUT",
        int,
        default="`10`",
        doc="PostgreSQL connect timeout, seconds (TCP keepalives also on)",
        reads=("config.settings",),
        section="HTTPS",
        example="10",
    ),
    # -- Outgoing mail (alerts and notifications) --------------------------------------------
    Setting(
        "EMAIL_URL",
        str,
        default="`consolemail://`",
        doc="outgoing mail (`smtp+tls://user:pw@host:587`); certificates verified",
        reads=("config.settings",),
        section="Outgoing mail (alerts and notifications)",
        example="consolemail://",
    ),
    Setting(
        "PRICEFEED_EMAIL_TIMEOUT",
        int,
        default="`30`",
        doc="SMTP socket timeout, seconds",
        reads=("config.settings",),
        section="Outgoing mail (alerts and notifications)",
        example="30",
    ),
    Setting(
        "DEFAULT_FROM_EMAIL",
        str,
        default="`pricefeed@localhost`",
        doc="sender of notifications (its domain also ends their Message-IDs)",
        reads=("notifications.services",),
        section="Outgoing mail (alerts and notifications)",
        example="pricefeed@localhost",
    ),
    Setting(
        "SERVER_EMAIL",
        str,
        default="`DEFAULT_FROM_EMAIL`",
        doc="sender of alerts to `ADMINS`",
        reads=("config.settings",),
        section="Outgoing mail (alerts and notifications)",
        example=None,  # 'alerts@example.com' in the example, commented out
    ),
    Setting(
        "ADMINS",
        list,
        default="empty",
        doc="who receives alerts: `Name <addr>, other@addr`",
        reads=("config.settings",),
        section="Outgoing mail (alerts and notifications)",
        example="",
    ),
    # -- Secrets at rest ---------------------------------------------------------------------
    Setting(
        "PRICEFEED_ENCRYPTION_KEYS",
        list,
        default="derived from `SECRET_KEY` (only with `DEBUG` on)",
        doc=(
            "Fernet keys for mailbox passwords; first encrypts, all decrypt (so do keys "
            "derived from `SECRET_KEY` and its fallbacks); required with `DEBUG` off "
            "(system check `core.E001`)"
        ),
        reads=("core.crypto",),
        section="Secrets at rest",
        example="",
    ),
    # -- Instance ----------------------------------------------------------------------------
    Setting(
        "PRICEFEED_INSTANCE_ID",
        str,
        default="`hostname:pid`",
        doc="name of a `listen_mail` instance in leases and heartbeats",
        reads=(
            "fleet.management.commands.qcluster",
            "mailboxes.management.commands.listen_mail",
            "outbox.management.commands.dispatch_outbox",
        ),
        section="Instance",
        example="",
    ),
    # -- Trusted senders ---------------------------------------------------------------------
    Setting(
        "PRICEFEED_AUTHSERV_IDS",
        list,
        default="empty",
        doc=(
            "authserv-ids of your receiving mail servers (comma-separated, "
            "case-insensitive): only the topmost `Authentication-Results` field with one of"
            " them is believed about the sender (see Operations, trusted senders); empty: "
            "none is, and no config can `require` an authenticated sender"
        ),
        reads=("pricefeed.forms", "pricefeed.intake"),
        section="Trusted senders",
        example="",
    ),
    # -- Input limits ------------------------------------------------------------------------
    Setting(
        "PRICEFEED_MAX_MESSAGE_BYTES",
        int,
        default="`26214400`",
        doc="larger messages are REJECTED from their headers, body never fetched",
        reads=("mailboxes.listener", "mailboxes.recording"),
        section="Input limits",
        example="26214400",
    ),
    Setting(
        "PRICEFEED_MAX_FILES_PER_MESSAGE",
        int,
        default="`100`",
        doc=(
            "files one message may bring, attachments and archive members together; a "
            "message with more is REJECTED before any import exists"
        ),
        reads=("pricefeed.intake",),
        section="Input limits",
        example="100",
    ),
    Setting(
        "PRICEFEED_MIME_MAX_PARTS",
        int,
        default="`500`",
        doc=(
            "MIME parts of one message (itself included) and their nesting; checked on the "
            "raw bytes before anything is decoded, over → REJECTED"
        ),
        reads=("mailboxes.mimebudget",),
        section="Input limits",
        example="500",
    ),
    Setting(
        "PRICEFEED_MIME_MAX_DEPTH",
        int,
        default="`20`",
        doc=(
            "MIME parts of one message (itself included) and their nesting; checked on the "
            "raw bytes before anything is decoded, over → REJECTED"
        ),
        reads=("mailboxes.mimebudget",),
        section="Input limits",
        example="20",
    ),
    Setting(
        "PRICEFEED_MIME_MAX_HEADER_BYTES",
        int,
        default="`262144`",
        doc="one MIME part's header block: bytes and fields",
        reads=("mailboxes.mimebudget",),
        section="Input limits",
        example="262144",
    ),
    Setting(
        "PRICEFEED_MIME_MAX_HEADER_FIELDS",
        int,
        default="`500`",
        doc="one MIME part's header block: bytes and fields",
        reads=("mailboxes.mimebudget",),
        section="Input limits",
        example="500",
    ),
    Setting(
        "PRICEFEED_MIME_MAX_ENCODED_WORDS",
        int,
        default="`100`",
        doc=(
            "RFC 2047 encoded words and parameters in one header field (the stdlib's "
            "decoding is quadratic in both)"
        ),
        reads=("mailboxes.mimebudget",),
        section="Input limits",
        example="100",
    ),
    Setting(
        "PRICEFEED_MIME_MAX_PARAMS",
        int,
        default="`100`",
        doc=(
            "RFC 2047 encoded words and parameters in one header field (the stdlib's "
            "decoding is quadratic in both)"
        ),
        reads=("mailboxes.mimebudget",),
        section="Input limits",
        example="100",
    ),
    Setting(
        "PRICEFEED_MIME_MAX_COMMENTS",
        int,
        default="`100`",
        doc=(
            "comments and quoted strings in one Content-* header field (the stdlib parses "
            "them in quadratic time); over → REJECTED"
        ),
        reads=("mailboxes.mimebudget",),
        section="Input limits",
        example="100",
    ),
    Setting(
        "PRICEFEED_MIME_MAX_CONTENT_FIELD_BYTES",
        int,
        default="`4096`",
        doc="one Content-Type or Content-Disposition field, unfolded; over → REJECTED",
        reads=("mailboxes.mimebudget",),
        section="Input limits",
        example="4096",
    ),
    Setting(
        "PRICEFEED_MIME_MAX_CONTENT_BYTES",
        int,
        default="`262144`",
        doc=(
            "all the Content-Type and Content-Disposition fields of one message together; "
            "over → REJECTED"
        ),
        reads=("mailboxes.mimebudget",),
        section="Input limits",
        example="262144",
    ),
    Setting(
        "PRICEFEED_MIME_MAX_CPU_SECONDS",
        float,
        default="`10`",
        doc=(
            "CPU time a worker may spend reading one message's structure and listing its "
            "files (a message at the input limits needs under 2 s); over → REJECTED"
        ),
        reads=("mailboxes.mimebudget",),
        section="Input limits",
        example="10",
    ),
    Setting(
        "PRICEFEED_PARSE_MAX_FILE_BYTES",
        int,
        default="`52428800`",
        doc="one attachment, or one file unpacked from an archive",
        reads=("config.settings",),
        section="Input limits",
        example="52428800",
    ),
    Setting(
        "PRICEFEED_PARSE_MAX_TOTAL_INFLATED",
        int,
        default="`209715200`",
        doc="all bytes unpacked from one attachment, counted as they inflate",
        reads=("config.settings",),
        section="Input limits",
        example="209715200",
    ),
    Setting(
        "PRICEFEED_PARSE_MAX_ENTRIES",
        int,
        default="`1000`",
        doc="archive entries, nesting depth, unpacked/compressed ratio per member",
        reads=("config.settings",),
        section="Input limits",
        example="1000",
    ),
    Setting(
        "PRICEFEED_PARSE_MAX_DEPTH",
        int,
        default="`3`",
        doc="archive entries, nesting depth, unpacked/compressed ratio per member",
        reads=("config.settings",),
        section="Input limits",
        example="3",
    ),
    Setting(
        "PRICEFEED_PARSE_MAX_RATIO",
        int,
        default="`200`",
        doc="archive entries, nesting depth, unpacked/compressed ratio per member",
        reads=("config.settings",),
        section="Input limits",
        example="200",
    ),
    Setting(
        "PRICEFEED_PARSE_MAX_ROWS",
        int,
        default="`2000000`",
        doc="data rows per file, cell area of a sheet, row errors kept per import",
        reads=("config.settings",),
        section="Input limits",
        example="2000000",
    ),
    Setting(
        "PRICEFEED_PARSE_MAX_CELLS",
        int,
        default="`32000000`",
        doc="data rows per file, cell area of a sheet, row errors kept per import",
        reads=("config.settings",),
        section="Input limits",
        example="32000000",
    ),
    Setting(
        "PRICEFEED_MESSAGE_PARSE_SECONDS",
        int,
        default="`600`",
        doc=(
            "seconds the files of one message may take to read in all: each import is "
            "charged the time its siblings took (a message of 100 files cannot take 100 x "
            "PRICEFEED_PARSE_MAX_SECONDS); past it a file ends FAILED unread"
        ),
        reads=("pricefeed.imports.lifecycle",),
        section="Input limits",
        example="600",
    ),
    Setting(
        "PRICEFEED_MESSAGE_PARSE_CELLS",
        int,
        default="`128000000`",
        doc=(
            "cells the workbooks of one message may span in all, as their guards measure "
            "them before the reader opens them: each file is charged its span, and one "
            "that does not fit in what its message has left ends FAILED unread (a message "
            "of 100 files, each within its own limits, cannot cost 100 times one). Sized "
            "from measurement: "
            "python-calamine holds about 31 bytes and spends about 0.12 us of CPU per cell "
            "(31 M cells: 3.6 s, 961 MB), so 128 M cells is about 15 s of reading and 4 GB "
            "held in turn (never at once); four files at PRICEFEED_PARSE_MAX_CELLS, or 140 "
            "price lists of 100k x 8 (0.9 M cells each). Keep it at least "
            "PRICEFEED_PARSE_MAX_CELLS, or a lone file within that limit is refused"
        ),
        reads=("pricefeed.imports.lifecycle",),
        section="Input limits",
        example="128000000",
    ),
    Setting(
        "PRICEFEED_PARSE_MAX_CELLS_PER_BYTE",
        int,
        default="`64`",
        doc=(
            "cells a workbook may span per byte of its file (at least 262,144 cells): a "
            "1.5 KB file cannot make the reader hold 31 million; a price list spans under "
            "one cell per byte"
        ),
        reads=("config.settings",),
        section="Input limits",
        example="64",
    ),
    Setting(
        "PRICEFEED_PARSE_MAX_TEXT_BYTES",
        int,
        default="`536870912`",
        doc=(
            "bytes a workbook's cell texts expand to in the reader (a shared string counts "
            "once per cell that refers to it); a workbook over it is refused before it is "
            "read (512 MiB: a 100k-row list is ~50 MB, the worker's cap is 3 GiB)"
        ),
        reads=("config.settings",),
        section="Input limits",
        example="536870912",
    ),
    Setting(
        "PRICEFEED_PARSE_MAX_ERRORS",
        int,
        default="`10000`",
        doc="data rows per file, cell area of a sheet, row errors kept per import",
        reads=("config.settings",),
        section="Input limits",
        example="10000",
    ),
    Setting(
        "PRICEFEED_PARSE_MAX_COLUMNS",
        int,
        default="`1024`",
        doc=(
            "cells read per row; the header is searched and rows converted within them, "
            "cells past them are cut (the import carries a warning)"
        ),
        reads=("config.settings",),
        section="Input limits",
        example="1024",
    ),
    Setting(
        "PRICEFEED_PARSE_MAX_LINE_BYTES",
        int,
        default="`1048576`",
        doc=(
            "one line of a CSV (one record where quoted fields span lines): a longer one is"
            " a row error, or refuses the file when no header row is found"
        ),
        reads=("config.settings",),
        section="Input limits",
        example="1048576",
    ),
    Setting(
        "PRICEFEED_PARSE_MAX_SECONDS",
        int,
        default="`180`",
        doc=(
            "parsing time per file; past it the import ends FAILED (keep it, plus "
            "`PRICEFEED_MIME_MAX_CPU_SECONDS`, below `PRICEFEED_Q_TIMEOUT`: a file of up to"
            " 1 MiB is imported by the task that read its message)"
        ),
        reads=("config.settings",),
        section="Input limits",
        example="180",
    ),
    Setting(
        "PRICEFEED_IMPORT_PROGRESS_INTERVAL",
        float,
        default="`2`",
        doc=(
            "a running import writes the rows it has read so far (*rows read*, on its page "
            "and in the list) at most this often, in seconds, on a short-lived database "
            "connection of its own, so that it shows while the import's transaction is "
            "still open; `0`: only at the end"
        ),
        reads=("pricefeed.imports.progress",),
        section="Input limits",
        example="2",
    ),
    Setting(
        "PRICEFEED_EXPORT_XLSX_MAX_ROWS",
        int,
        default="`200000`",
        doc=(
            "the most rows an xlsx export from the admin (an import's rows or diff, a "
            "catalogue) holds: openpyxl writes about 14,000 rows/s here, so a million rows "
            "would outlast the web worker's 30 s timeout; past it the admin says to use "
            "CSV, which streams at any size"
        ),
        reads=("pricefeed.exports",),
        section="Input limits",
        example="200000",
    ),
    # -- IMAP --------------------------------------------------------------------------------
    Setting(
        "PRICEFEED_IMAP_CONNECT_TIMEOUT",
        float,
        default="`15`",
        doc="seconds",
        reads=("mailboxes.services",),
        section="IMAP",
        example="15",
    ),
    Setting(
        "PRICEFEED_IMAP_TIMEOUT",
        float,
        default="`60`",
        doc="socket timeout of every IMAP read/write",
        reads=("mailboxes.services",),
        section="IMAP",
        example="60",
    ),
    Setting(
        "PRICEFEED_IMAP_CA_FILE",
        str,
        default="empty",
        doc=(
            "PEM file of private CA(s) trusted for IMAP TLS in addition to the system "
            "store; certificate and host name are always verified"
        ),
        reads=("mailboxes.imap",),
        section="IMAP",
        example="",
    ),
    Setting(
        "PRICEFEED_IMAP_ALLOW_PLAIN",
        bool,
        default="`false`",
        doc=(
            "allow mailboxes with security *None (plain text)* (password and mail "
            "unencrypted); otherwise refused when saved and on every connection"
        ),
        reads=("mailboxes.addresses",),
        section="IMAP",
        example="false",
    ),
    Setting(
        "PRICEFEED_IMAP_ALLOWED_NETWORKS",
        list,
        default="empty",
        doc=(
            "networks (CIDR: `10.20.0.0/16,127.0.0.1`) IMAP may reach besides public "
            "addresses. A mailbox host that is, or resolves to, a loopback, private, "
            "link-local, shared (CGNAT), multicast, reserved or other non-public address "
            "(IPv4-mapped and NAT64 IPv6 judged as their IPv4) is refused when saved and on"
            " every connection unless one of these holds it; the connection goes to the "
            "address checked (no second lookup), TLS still verifies the host name"
        ),
        reads=("mailboxes.addresses", "mailboxes.apps"),
        section="IMAP",
        example="",
    ),
    Setting(
        "PRICEFEED_IMAP_IDLE_REFRESH",
        float,
        default="`300`",
        doc="IDLE re-issued and folder re-selected this often (RFC 2177 limit: 29 min)",
        reads=("mailboxes.listener",),
        section="IMAP",
        example="300",
    ),
    Setting(
        "PRICEFEED_IMAP_CHECK_INTERVAL",
        float,
        default="`20`",
        doc=(
            "while idling, each mailbox leaves IDLE this often and searches for new mail "
            "itself (NOOP, `UID SEARCH`), so mail waits at most about this long whatever "
            "the server's IDLE does (some poll once a minute: see Operations, IMAP "
            "servers); servers without IDLE are polled this often; `0` = IDLE alone "
            "(polling every 30 s without it). 100 mailboxes: 5 checks a second, 4 short "
            "commands each"
        ),
        reads=("mailboxes.listener",),
        section="IMAP",
        example="20",
    ),
    Setting(
        "PRICEFEED_IMAP_FETCH_BATCH",
        int,
        default="`100`",
        doc="messages per FETCH",
        reads=("mailboxes.listener",),
        section="IMAP",
        example="100",
    ),
    Setting(
        "PRICEFEED_IMAP_FETCH_BATCH_BYTES",
        int,
        default="`33554432`",
        doc="byte budget of one FETCH batch",
        reads=("mailboxes.listener",),
        section="IMAP",
        example="33554432",
    ),
    Setting(
        "PRICEFEED_IMAP_BACKOFF_BASE",
        float,
        default="`1`",
        doc=(
            "reconnect backoff, exponential with jitter; it starts over only once a "
            "connection has stayed up for a minute (a server that fails right after the "
            "login is retried ever more slowly)"
        ),
        reads=("core.retry",),
        section="IMAP",
        example="1",
    ),
    Setting(
        "PRICEFEED_IMAP_BACKOFF_MAX",
        float,
        default="`300`",
        doc=(
            "reconnect backoff, exponential with jitter; it starts over only once a "
            "connection has stayed up for a minute (a server that fails right after the "
            "login is retried ever more slowly)"
        ),
        reads=("core.retry",),
        section="IMAP",
        example="300",
    ),
    # -- listen_mail supervisor --------------------------------------------------------------
    Setting(
        "PRICEFEED_LEASE_TTL",
        float,
        default="`10`",
        doc=(
            "a lease not renewed for this long can be taken over; a dead instance's "
            "mailboxes are listened again after about TTL + poll interval"
        ),
        reads=("mailboxes.management.commands.listen_mail", "mailboxes.supervisor"),
        section="listen_mail supervisor",
        example="10",
    ),
    Setting(
        "PRICEFEED_LIVENESS_WINDOW",
        float,
        default="`10`",
        doc=(
            "how long after its last heartbeat a process (`listen_mail`, `qcluster`, "
            "`dispatch_outbox`) still counts as live: in the admin, in `pricefeed_status` "
            "and in rebalancing's count of instances; at least three heartbeats. The "
            "lease's own TTL is `PRICEFEED_LEASE_TTL`"
        ),
        reads=("fleet.selectors", "mailboxes.selectors", "mailboxes.supervisor"),
        section="listen_mail supervisor",
        example="10",
    ),
    Setting(
        "PRICEFEED_HEARTBEAT_INTERVAL",
        float,
        default="`2`",
        doc=(
            "heartbeat and lease renewal period (at most TTL / 3); a listener stops by "
            "itself when its lease has not been renewed for TTL − max(2 × this, TTL / 4)"
        ),
        reads=(
            "fleet.heartbeat",
            "fleet.management.commands.qcluster",
            "mailboxes.management.commands.listen_mail",
            "mailboxes.supervisor",
        ),
        section="listen_mail supervisor",
        example="2",
    ),
    Setting(
        "PRICEFEED_CONFIG_POLL_INTERVAL",
        float,
        default="`2`",
        doc=(
            "reconcile period: failover, rebalancing, admin changes (NOTIFY makes the last "
            "two immediate on PostgreSQL)"
        ),
        reads=("mailboxes.supervisor",),
        section="listen_mail supervisor",
        example="2",
    ),
    Setting(
        "PRICEFEED_REBALANCE_TOLERANCE",
        float,
        default="`0.5`",
        doc="an instance sheds leases only when it holds more than its fair share plus this weight",
        reads=("mailboxes.supervisor",),
        section="listen_mail supervisor",
        example="0.5",
    ),
    Setting(
        "PRICEFEED_MAX_IN_FLIGHT",
        int,
        default="`5000`",
        doc=(
            "admission control: recorded messages not yet finished (RECEIVED, PROCESSING) "
            "per instance / per mailbox; at the bound fetching pauses, leases and "
            "connections are kept. The per-mailbox bound is how far one mailbox's backlog "
            "can queue ahead of the others' (2,000 small messages: about half a minute at "
            "two workers)"
        ),
        reads=("mailboxes.supervisor",),
        section="listen_mail supervisor",
        example="5000",
    ),
    Setting(
        "PRICEFEED_MAX_IN_FLIGHT_PER_MAILBOX",
        int,
        default="`2000`",
        doc=(
            "admission control: recorded messages not yet finished (RECEIVED, PROCESSING) "
            "per instance / per mailbox; at the bound fetching pauses, leases and "
            "connections are kept. The per-mailbox bound is how far one mailbox's backlog "
            "can queue ahead of the others' (2,000 small messages: about half a minute at "
            "two workers)"
        ),
        reads=("mailboxes.supervisor",),
        section="listen_mail supervisor",
        example="2000",
    ),
    Setting(
        "PRICEFEED_MAX_IN_FLIGHT_BYTES",
        int,
        default="`1073741824`",
        doc=(
            "admission control: the size (RFC822.SIZE) of an instance's in-flight messages,"
            " what waits in the database; a listener takes in as many of the messages it "
            "found as fit (one larger than the bound passes alone, when nothing else is in "
            "flight)"
        ),
        reads=("mailboxes.supervisor",),
        section="listen_mail supervisor",
        example="1073741824",
    ),
    Setting(
        "PRICEFEED_LISTENER_DB_CONNECTIONS",
        int,
        default="`4`",
        doc="listener threads using the database at once (idle listeners hold no connection)",
        reads=("mailboxes.supervisor",),
        section="listen_mail supervisor",
        example="4",
    ),
    Setting(
        "PRICEFEED_LISTENER_STATUS_FILE",
        str,
        default="empty",
        doc=(
            "`listen_mail` writes the mailboxes it listens to here (JSON), for probes; also"
            " `--status-file`"
        ),
        reads=("mailboxes.management.commands.listen_mail",),
        section="listen_mail supervisor",
        example="",
    ),
    Setting(
        "PRICEFEED_SWEEP_INTERVAL",
        float,
        default="`15`",
        doc="how often stuck/due messages are swept back into the queue",
        reads=("mailboxes.supervisor", "outbox.dispatcher"),
        section="listen_mail supervisor",
        example="15",
    ),
    Setting(
        "PRICEFEED_SHUTDOWN_GRACE",
        float,
        default="`10`",
        doc="SIGTERM: time for in-flight work before exiting",
        reads=("mailboxes.supervisor",),
        section="listen_mail supervisor",
        example="10",
    ),
    # -- Message processing (django-q2 task) -------------------------------------------------
    Setting(
        "PRICEFEED_PROCESSING_MAX_ATTEMPTS",
        int,
        default="`5`",
        doc="processing attempts before FAILED + alert",
        reads=("core.retry",),
        section="Message processing (django-q2 task)",
        example="5",
    ),
    Setting(
        "PRICEFEED_PROCESSING_RETRY_BASE",
        float,
        default="`30`",
        doc="processing retry backoff, seconds",
        reads=("core.retry",),
        section="Message processing (django-q2 task)",
        example="30",
    ),
    Setting(
        "PRICEFEED_PROCESSING_RETRY_MAX",
        float,
        default="`3600`",
        doc="processing retry backoff, seconds",
        reads=("core.retry",),
        section="Message processing (django-q2 task)",
        example="3600",
    ),
    Setting(
        "PRICEFEED_PROCESSING_CLAIM_TIMEOUT",
        float,
        default="`600`",
        doc="a PROCESSING claim older than this is retried",
        reads=(
            "mailboxes.processing",
            "mailboxes.selectors",
            "pricefeed.imports.lifecycle",
            "pricefeed.selectors",
        ),
        section="Message processing (django-q2 task)",
        example="600",
    ),
    Setting(
        "PRICEFEED_REQUEUE_AFTER",
        float,
        default="`120`",
        doc="a RECEIVED message not picked up by then is enqueued again",
        reads=(
            "mailboxes.processing",
            "mailboxes.selectors",
            "pricefeed.imports.lifecycle",
            "pricefeed.selectors",
        ),
        section="Message processing (django-q2 task)",
        example="120",
    ),
    Setting(
        "PRICEFEED_CRASH_MAX_ATTEMPTS",
        int,
        default="`2`",
        doc=(
            "a message whose worker process died under it (native crash, out of memory, "
            "killed) is retried after a short backoff, and FAILED when its worker has died "
            "this many times (an import fails at its first: it reads the same bytes again)"
        ),
        reads=("core.retry",),
        section="Message processing (django-q2 task)",
        example="2",
    ),
    # -- Outbox dispatcher (manage.py dispatch_outbox) ---------------------------------------
    Setting(
        "PRICEFEED_OUTBOX_BATCH",
        int,
        default="`500`",
        doc="events per claimed batch; idle wait (NOTIFY wakes sooner)",
        reads=("outbox.dispatcher",),
        section="Outbox dispatcher (manage.py dispatch_outbox)",
        example="500",
    ),
    Setting(
        "PRICEFEED_OUTBOX_POLL_INTERVAL",
        float,
        default="`2`",
        doc="events per claimed batch; idle wait (NOTIFY wakes sooner)",
        reads=("outbox.dispatcher",),
        section="Outbox dispatcher (manage.py dispatch_outbox)",
        example="2",
    ),
    Setting(
        "PRICEFEED_OUTBOX_CLAIM_TIMEOUT",
        float,
        default="`300`",
        doc="a PROCESSING event older than this goes back to NEW",
        reads=("outbox.selectors", "outbox.services"),
        section="Outbox dispatcher (manage.py dispatch_outbox)",
        example="300",
    ),
    Setting(
        "PRICEFEED_OUTBOX_MAX_ATTEMPTS",
        int,
        default="`8`",
        doc="delivery attempts before FAILED + alert, backoff seconds",
        reads=("core.retry",),
        section="Outbox dispatcher (manage.py dispatch_outbox)",
        example="8",
    ),
    Setting(
        "PRICEFEED_OUTBOX_RETRY_BASE",
        float,
        default="`10`",
        doc="delivery attempts before FAILED + alert, backoff seconds",
        reads=("core.retry",),
        section="Outbox dispatcher (manage.py dispatch_outbox)",
        example="10",
    ),
    Setting(
        "PRICEFEED_OUTBOX_RETRY_MAX",
        float,
        default="`3600`",
        doc="delivery attempts before FAILED + alert, backoff seconds",
        reads=("core.retry",),
        section="Outbox dispatcher (manage.py dispatch_outbox)",
        example="3600",
    ),
    Setting(
        "PRICEFEED_NOTIFICATION_SMTP_CONNECTIONS",
        int,
        default="`4`",
        doc="SMTP connections a batch of notifications is spread over (at least ten mails each)",
        reads=("notifications.services",),
        section="Outbox dispatcher (manage.py dispatch_outbox)",
        example="4",
    ),
    Setting(
        "PRICEFEED_DELIVERY_ALLOW_PLAIN",
        bool,
        default="`false`",
        doc=(
            "allow plain `http://` webhooks and `amqp://` RabbitMQ targets (the tests' "
            "loopback servers, the demo); never in production"
        ),
        reads=("delivery.endpoints",),
        section="Outbox dispatcher (manage.py dispatch_outbox)",
        example="false",
    ),
    Setting(
        "PRICEFEED_DELIVERY_TIMEOUT",
        float,
        default="`10`",
        doc="seconds a webhook's or RabbitMQ's connection and each of its answers may take",
        reads=("delivery.webhooks", "delivery.amqp"),
        section="Outbox dispatcher (manage.py dispatch_outbox)",
        example="10",
    ),
    Setting(
        "PRICEFEED_PUBLIC_URL",
        str,
        default="empty",
        doc=(
            "where people reach the admin, scheme and host "
            "(`https://pricefeed.example.com`; a path only if the proxy strips it, not "
            "`FORCE_SCRIPT_NAME`'s): every notification mail links to its import's page "
            "under it. Empty: mails name the import by its number and carry no link. Not an"
            " absolute `http(s)` URL: every command refuses to start (system check "
            "`notifications.E001`)"
        ),
        reads=("notifications.checks", "notifications.content"),
        section="Outbox dispatcher (manage.py dispatch_outbox)",
        example="",
    ),
    # -- Matching supplier lines to our products ----------------------------------------------
    Setting(
        "PRICEFEED_MATCH_AUTO",
        float,
        default="`0.8`",
        doc=(
            "name similarity (0..1) from which a supplier line is linked to one of our "
            "products automatically (when no decisive attribute differs and no other "
            "product is as close)"
        ),
        reads=("products.linking",),
        section="Matching supplier lines to our products",
        example="0.8",
    ),
    Setting(
        "PRICEFEED_MATCH_REVIEW",
        float,
        default="`0.5`",
        doc=(
            "name similarity (0..1) from which a link is proposed for review; below it "
            "the line stays unlinked (its candidates kept)"
        ),
        reads=("products.linking",),
        section="Matching supplier lines to our products",
        example="0.5",
    ),
    Setting(
        "PRICEFEED_MATCH_PARTS",
        int,
        default="`2`",
        doc=(
            "a config's lines are matched as this many transactions side by side, each on "
            "its own connection (1: one transaction): part 0 in the worker, the others in "
            "processes forked from it, so that their Python runs on as many cores"
        ),
        reads=("products.linking",),
        section="Matching supplier lines to our products",
        example="2",
    ),
    # -- Feeds (docs/feeds.md) --------------------------------------------------------------
    Setting(
        "PRICEFEED_FEEDS_XLSX_MAX_ROWS",
        int,
        default="`1048575`",
        doc=(
            "the most products in an xlsx feed or customer list (Excel's sheet holds "
            "1,048,576 rows, the header one of them); the rest are left out"
        ),
        reads=("feeds.views", "feeds.customer_lists"),
        section="Feeds and customer price lists (docs/feeds.md)",
        example="1048575",
    ),
    # -- Rates (docs/pricing.md) -------------------------------------------------------------
    Setting(
        "PRICEFEED_RATES_URL",
        str,
        default="`https://www.cbr.ru/scripts/XML_daily.asp`",
        doc=(
            "the Bank of Russia's daily rates (its `XML_daily` document; `date_req` is "
            "added); TLS verified; empty: not fetched (rates entered by hand only)"
        ),
        reads=("pricing.services", "pricing.management.commands.rates_fetch"),
        section="Rates (docs/pricing.md)",
        example="https://www.cbr.ru/scripts/XML_daily.asp",
    ),
    Setting(
        "PRICEFEED_RATES_ALLOW_PLAIN",
        bool,
        default="`false`",
        doc="allow a plain `http://` rates URL (the tests' loopback server); never in production",
        reads=("pricing.services",),
        section="Rates (docs/pricing.md)",
        example="false",
    ),
    Setting(
        "PRICEFEED_RATES_TIMEOUT",
        float,
        default="`10`",
        doc="the rates server's connect and read timeout, seconds (twice it for the whole answer)",
        reads=("pricing.services",),
        section="Rates (docs/pricing.md)",
        example="10",
    ),
    Setting(
        "PRICEFEED_RATES_RETRY_BASE",
        float,
        default="`60`",
        doc="first delay before a failed rates fetch is tried again, seconds (then doubled)",
        reads=("pricing.services",),
        section="Rates (docs/pricing.md)",
        example="60",
    ),
    Setting(
        "PRICEFEED_RATES_RETRY_MAX",
        float,
        default="`3600`",
        doc="longest delay between tries of a failed rates fetch, seconds",
        reads=("pricing.services",),
        section="Rates (docs/pricing.md)",
        example="3600",
    ),
    Setting(
        "PRICEFEED_RATES_WINDOW_DAYS",
        int,
        default="`7`",
        doc=(
            "how old a rate may be for a list's date (the newest within this many days "
            "counts; older: no rate)"
        ),
        reads=("pricing.selectors",),
        section="Rates (docs/pricing.md)",
        example="7",
    ),
    Setting(
        "PRICEFEED_OFFERS_PARTS",
        int,
        default="`2`",
        doc=(
            "a supplier's offers and prices are recomputed as this many transactions side "
            "by side, each on its own connection (1: one transaction); about the database "
            "server's cores to spare"
        ),
        reads=("pricing.offers",),
        section="Offers and prices (docs/pricing.md)",
        example="2",
    ),
    # -- django-q2 ---------------------------------------------------------------------------
    Setting(
        "PRICEFEED_Q_WORKERS",
        int,
        default="`2`",
        doc="django-q2 worker processes: the concurrency cap",
        reads=("config.settings",),
        section="django-q2",
        example="2",
    ),
    Setting(
        "PRICEFEED_WORKER_MEMORY_LIMIT",
        int,
        default="`3221225472` (3 GiB)",
        doc=(
            "address space (RLIMIT_AS) of each django-q2 worker, bytes; `0` = no cap. Idle "
            "a worker maps ~100 MiB; a 1M-row CSV import peaks at ~510 MiB, a 1M-row (46 "
            "MiB) xlsx at ~2.3 GiB. Past the cap an import ends FAILED (MemoryError) or its"
            " worker dies (reaped as a crash) instead of the OOM killer taking the host"
        ),
        reads=("core.workers",),
        section="django-q2",
        example="3221225472",
    ),
    Setting(
        "PRICEFEED_PREVIEW_MEMORY_LIMIT",
        int,
        default="`805306368` (768 MiB)",
        doc=(
            "address space (RLIMIT_AS) of the child process the config preview reads an "
            "upload in, bytes; past it the preview says the file needs more memory (a "
            "gunicorn worker and its child stay under 1 GB)"
        ),
        reads=("pricefeed.imports.preview",),
        section="django-q2",
        example="805306368",
    ),
    Setting(
        "PRICEFEED_PREVIEW_CPU_SECONDS",
        int,
        default="`20`",
        doc=(
            "CPU seconds the config preview's child process may spend reading an upload "
            "(below gunicorn's 30 s timeout); past it the preview says it stopped"
        ),
        reads=("pricefeed.imports.preview",),
        section="django-q2",
        example="20",
    ),
    Setting(
        "PRICEFEED_Q_TIMEOUT",
        int,
        default="`300`",
        doc="task timeout; must stay below retry",
        reads=("config.settings",),
        section="django-q2",
        example="300",
    ),
    Setting(
        "PRICEFEED_Q_RETRY",
        int,
        default="`360`",
        doc="task timeout; must stay below retry",
        reads=("config.settings",),
        section="django-q2",
        example="360",
    ),
    Setting(
        "PRICEFEED_Q_MAX_ATTEMPTS",
        int,
        default="`3`",
        doc=(
            "django-q2 tuning; `_POLL`: the longest a task waits for a worker when no "
            "wake-up reaches it (the only wait with `PRICEFEED_Q_WAKE=false`)"
        ),
        reads=("config.settings",),
        section="django-q2",
        example="3",
    ),
    Setting(
        "PRICEFEED_Q_QUEUE_LIMIT",
        int,
        default="`50`",
        doc=(
            "django-q2 tuning; `_POLL`: the longest a task waits for a worker when no "
            "wake-up reaches it (the only wait with `PRICEFEED_Q_WAKE=false`)"
        ),
        reads=("config.settings",),
        section="django-q2",
        example="50",
    ),
    Setting(
        "PRICEFEED_Q_SAVE_LIMIT",
        int,
        default="`1000`",
        doc=(
            "django-q2 tuning; `_POLL`: the longest a task waits for a worker when no "
            "wake-up reaches it (the only wait with `PRICEFEED_Q_WAKE=false`)"
        ),
        reads=("core.taskresults",),
        section="django-q2",
        example="1000",
    ),
    Setting(
        "PRICEFEED_Q_WAKE",
        bool,
        default="`true`",
        doc=(
            "the database queue on PostgreSQL: workers woken by `NOTIFY` the moment a task "
            "is enqueued (`core/taskqueue.py`); `false`: they only poll, every "
            "`PRICEFEED_Q_POLL` s (behind a connection pooler in transaction mode, which "
            "does not pass `LISTEN`/`NOTIFY`)"
        ),
        reads=("config.settings",),
        section="django-q2",
        example="true",
    ),
    Setting(
        "PRICEFEED_Q_POLL",
        float,
        default="`0.2`",
        doc=(
            "django-q2 tuning; `_POLL`: the longest a task waits for a worker when no "
            "wake-up reaches it (the only wait with `PRICEFEED_Q_WAKE=false`)"
        ),
        reads=("config.settings",),
        section="django-q2",
        example="0.2",
    ),
    Setting(
        "PRICEFEED_Q_LOG_LEVEL",
        str,
        default="`WARNING`",
        doc=(
            "django-q2 tuning; `_POLL`: the longest a task waits for a worker when no "
            "wake-up reaches it (the only wait with `PRICEFEED_Q_WAKE=false`)"
        ),
        reads=("config.settings",),
        section="django-q2",
        example="WARNING",
    ),
    Setting(
        "PRICEFEED_REDIS_URL",
        str,
        default="empty",
        doc=(
            "use Redis as django-q2 broker instead of the database: "
            "`redis://:password@host:6379/0`; needs the `redis` extra (`pip install "
            "'.[redis]'`), which every command checks for at start. Set it the same on "
            "**every** process (web, `listen_mail`, `qcluster`, `dispatch_outbox`): a "
            "process whose broker differs from the live ones refuses to start (see "
            "Operations, one broker everywhere)"
        ),
        reads=("config.settings",),
        section="django-q2",
        example="",
    ),
    Setting(
        "PRICEFEED_REDIS_ALLOW_INSECURE",
        bool,
        default="`false`",
        doc=(
            "with `DEBUG` off every command refuses a `PRICEFEED_REDIS_URL` without a "
            "password, or without TLS (`rediss://`) unless it is a Unix socket or a loopback"
            " address (system check `core.E004`); `true` accepts it (a network of your own)"
        ),
        reads=("core.brokers",),
        section="django-q2",
        example="false",
    ),
    # -- API (/api/, docs/api.md) ------------------------------------------------------------
    Setting(
        "PRICEFEED_API_RATE",
        str,
        default="empty",
        doc=(
            "requests per API token (a person in a session: per user) allowed per `second`,"
            " `minute`, `hour` or `day`, e.g. `600/minute`; past it the API answers 429. "
            "Empty: no limit (each page is an index range of at most 1000 rows; counts are "
            "per web worker without a shared cache). See [docs/api.md](api.md#rate)"
        ),
        reads=("config.settings",),
        section="API (/api/, docs/api.md)",
        example="",
    ),
    # -- Metrics (/metrics, docs/operations.md "Metrics") ------------------------------------
    Setting(
        "PRICEFEED_METRICS_TOKEN",
        str,
        default="empty",
        doc=(
            "bearer token Prometheus must send to `/metrics` (`Authorization: Bearer "
            "<token>`, compared in constant time; 401 without, 403 wrong); empty: "
            "`/metrics` answers anyone with `DEBUG` on, and 403 with `DEBUG` off (see "
            "[Operations](operations.md#metrics))"
        ),
        reads=("core.metrics",),
        section='Metrics (/metrics, docs/operations.md "Metrics")',
        example="",
    ),
    Setting(
        "PRICEFEED_LISTENER_METRICS_PORT",
        str,
        default="`0`",
        doc=(
            "`listen_mail` serves `/metrics` (the same answer, behind the same token) on "
            "this port, for a host without the web process; `0` or empty = off; also "
            "`--metrics-port` (see [Operations](operations.md#the-metrics-port))"
        ),
        reads=("config.settings",),
        section='Metrics (/metrics, docs/operations.md "Metrics")',
        example="0",
    ),
    Setting(
        "PRICEFEED_OUTBOX_METRICS_PORT",
        str,
        default="`0`",
        doc=(
            "the same for `dispatch_outbox` (another port than the listener's when both run"
            " on one host)"
        ),
        reads=("config.settings",),
        section='Metrics (/metrics, docs/operations.md "Metrics")',
        example="0",
    ),
    Setting(
        "PRICEFEED_METRICS_ADDRESS",
        str,
        default="`127.0.0.1`",
        doc=(
            "the address those ports are bound to: the one Prometheus reaches the host by; "
            "any but a loopback address needs the two TLS settings below (the token would "
            "cross the network in clear), else the command refuses to start"
        ),
        reads=("core.metrics_server",),
        section='Metrics (/metrics, docs/operations.md "Metrics")',
        example="127.0.0.1",
    ),
    Setting(
        "PRICEFEED_METRICS_TLS_CERT",
        str,
        default="empty",
        doc=(
            "PEM certificate chain the metrics ports serve HTTPS with (and "
            "`PRICEFEED_METRICS_TLS_KEY`, its private key); empty: plain HTTP, on loopback "
            "only"
        ),
        reads=("core.metrics_server",),
        section='Metrics (/metrics, docs/operations.md "Metrics")',
        example="",
    ),
    Setting(
        "PRICEFEED_METRICS_TLS_KEY",
        str,
        default="empty",
        doc="the private key of `PRICEFEED_METRICS_TLS_CERT` (PEM; empty: in the cert file)",
        reads=("core.metrics_server",),
        section='Metrics (/metrics, docs/operations.md "Metrics")',
        example="",
    ),
    Setting(
        "PROMETHEUS_MULTIPROC_DIR",
        str,
        default="empty (`/run/pricefeed/metrics` in `deploy/pricefeed.env`)",
        doc=(
            "read by prometheus_client: a directory, one per host shared by every pricefeed"
            " process there and emptied before they start (the units' "
            "`pricefeed-metrics.service` does both), where each process writes its event "
            "metrics so that `/metrics` adds them up; empty: `/metrics` shows only the "
            "answering process's events. A process that finds no such directory (a one-off"
            " command while the services are stopped) counts its events alone, as if empty"
        ),
        reads=("config.settings",),
        section='Metrics (/metrics, docs/operations.md "Metrics")',
        example=None,  # '/run/pricefeed/metrics' in the example, commented out
    ),
)

# What .env.example says after the settings: the variables only the tests read.
TESTS_ONLY = """\
# --- Tests only (not read by config/settings.py) ----------------------------------------
# Fault points (core/faults.py), each a comma-separated list of point names:
# PRICEFEED_CRASH_AT=<point>    SIGKILLs the process when it reaches the point.
# PRICEFEED_PAUSE_AT=<point>    SIGSTOPs it there instead (a frozen "zombie").
# PRICEFEED_CRASH_ONCE=<path>, PRICEFEED_PAUSE_ONCE=<path>  only the first process to get
#                               there stops (the file records it).
# PRICEFEED_SLOW_AT=<point>     the thread sleeps there for PRICEFEED_SLOW_SECONDS (30).
# PRICEFEED_REQUIRE_DOVECOT=1, PRICEFEED_REQUIRE_CHROMIUM=1, PRICEFEED_REQUIRE_REDIS=1 and
# PRICEFEED_REQUIRE_GETTEXT=1 make a missing Dovecot, Chromium, redis-server or GNU
# gettext fail the tests that need it instead of skipping them (.ci/run sets them all).
"""
TESTS_ONLY_NAMES = (
    "PRICEFEED_CRASH_AT",
    "PRICEFEED_PAUSE_AT",
    "PRICEFEED_CRASH_ONCE",
    "PRICEFEED_PAUSE_ONCE",
    "PRICEFEED_SLOW_AT",
    "PRICEFEED_SLOW_SECONDS",
    "PRICEFEED_REQUIRE_DOVECOT",
    "PRICEFEED_REQUIRE_CHROMIUM",
    "PRICEFEED_REQUIRE_REDIS",
    "PRICEFEED_REQUIRE_GETTEXT",
)

CONFIGURATION_MD = ROOT / "docs" / "configuration.md"
ENV_EXAMPLE = ROOT / ".env.example"


def sections() -> dict[str, list[Setting]]:
    grouped: dict[str, list[Setting]] = {}
    for setting in SETTINGS:
        grouped.setdefault(setting.section, []).append(setting)
    return grouped


def _cell(text: str) -> str:
    """``text`` in a table cell: a bar would end the cell."""
    return text.replace("|", "\\|")


def configuration_md() -> str:
    """docs/configuration.md: one table per section."""
    out = [
        "# Configuration",
        "",
        "<!-- Generated from config/registry.py by `python -m config.registry --write`;",
        "     edit the registry, not this file. -->",
        "",
        "Everything is read from the environment (or a `.env` file beside `manage.py`) in",
        "`config/settings.py`. `.env.example` lists every variable with its default, and at",
        "its end the few that only the tests read. *Read by* names the modules that use the",
        "value (`config.settings`: Django itself, or settings.py alone).",
    ]
    for section, settings in sections().items():
        out += ["", f"## {section}", ""]
        out += ["| variable | type | default | meaning | read by |", "|---|---|---|---|---|"]
        for s in settings:
            reads = ", ".join(f"`{module}`" for module in s.reads)
            out.append(
                f"| `{s.name}` | {s.type.__name__} | {_cell(s.default)} | {_cell(s.doc)} "
                f"| {reads} |"
            )
    return "\n".join(out) + "\n"


def _plain(markdown: str) -> str:
    return markdown.replace("`", "").replace("**", "")


def env_example() -> str:
    """.env.example: every variable with its default, under its section, its doc above."""
    out = [
        "# pricefeed configuration: copy to .env (read at start-up) or set in the environment.",
        "# Generated from config/registry.py by `python -m config.registry --write`; edit the",
        "# registry, not this file. Every value shown is the default; a line commented out",
        "# has a default computed at start-up or none (docs/configuration.md says which).",
    ]
    for section, settings in sections().items():
        out += ["", f"# --- {section} ".ljust(88, "-")]
        for s in settings:
            doc = textwrap.wrap(_plain(s.doc), 86)
            out += [f"# {line}" for line in doc]
            out.append(f"{s.name}={s.example}" if s.example is not None else f"# {s.name}=")
    return "\n".join(out) + "\n\n" + TESTS_ONLY


GENERATED = {CONFIGURATION_MD: configuration_md, ENV_EXAMPLE: env_example}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m config.registry",
        description="Writes (or checks) docs/configuration.md and .env.example.",
    )
    parser.add_argument("--write", action="store_true", help="write the files")
    args = parser.parse_args(argv)
    stale = [path for path, make in GENERATED.items() if path.read_text() != make()]
    if args.write:
        for path, make in GENERATED.items():
            path.write_text(make())
        return 0
    for path in stale:
        print(f"{path.relative_to(ROOT)} is not what config/registry.py makes", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
