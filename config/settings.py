"""Django settings for pricefeed: the composition root, which may name every app.

Every knob is read from the environment (or a ``.env`` file beside ``manage.py``)
here and nowhere else. ``config/registry.py`` names each one with its type, default and
readers; ``docs/configuration.md`` and ``.env.example`` are generated from it, and a
test fails when a variable read here is missing there.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import socket
from datetime import timedelta
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_lazy

from core.hosts import parse_networks

# openpyxl parses with lxml when lxml is installed (the dev extra has it, for the feeds'
# schema tests), and lxml's parser does not refuse entities as defusedxml does: openpyxl
# keeps to the standard library's parser guarded by defusedxml (pricefeed.parsing's
# check_xml_defences). Read when openpyxl is first imported, which is after this.
os.environ.setdefault("OPENPYXL_LXML", "False")

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

VAR_DIR = Path(env.str("PRICEFEED_VAR_DIR", default="") or BASE_DIR / "var")


def _secret_key() -> str:
    """Returns SECRET_KEY from the environment, or one generated once and kept in VAR_DIR.

    A generated key keeps the embedded single-instance setup working out of the box
    without a secret in the repository; several instances must share one SECRET_KEY
    (and PRICEFEED_ENCRYPTION_KEYS), so production sets it explicitly.
    """
    value = env.str("SECRET_KEY", default="")
    if value:
        return value
    path = VAR_DIR / "secret_key"
    if not path.exists():
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_urlsafe(50))
    return path.read_text().strip()


SECRET_KEY = _secret_key()
# Earlier SECRET_KEYs, still accepted while they are rotated out: sessions, password
# reset links and the stored secrets encrypted under a key derived from one (core.crypto).
SECRET_KEY_FALLBACKS = [k for k in env.list("SECRET_KEY_FALLBACKS", default=[]) if k]
DEBUG = env.bool("DEBUG", default=False)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

# --- HTTPS --------------------------------------------------------------------------
# With DEBUG off the admin is HTTPS only: plain HTTP is redirected, cookies are Secure,
# browsers are told (HSTS) to use HTTPS for an hour, raised by the operator once HTTPS
# is known to work. Each default can be overridden by the variable of the same name.
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=not DEBUG)
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=not DEBUG)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0 if DEBUG else 3600)
# includeSubDomains and preload bind every subdomain of the host (preload: for years,
# through the browsers' built-in list), a decision about the operator's whole domain
# that pricefeed cannot make: off unless set, and their check --deploy warnings
# (security.W005, W021) silenced below.
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
# Behind a TLS-terminating proxy: "HTTP_X_FORWARDED_PROTO,https" (the header the proxy
# sets, as Django names it, and the value meaning HTTPS). Only where the proxy always
# sets that header itself: passed on from a client, it would let the client claim HTTPS.
_proxy_ssl_header = env.list("SECURE_PROXY_SSL_HEADER", default=[])
if _proxy_ssl_header:
    if len(_proxy_ssl_header) != 2 or not all(_proxy_ssl_header):
        raise ValueError(
            "SECURE_PROXY_SSL_HEADER must be <header>,<value>, e.g. "
            f"HTTP_X_FORWARDED_PROTO,https, not {','.join(_proxy_ssl_header)!r}"
        )
    SECURE_PROXY_SSL_HEADER = (_proxy_ssl_header[0], _proxy_ssl_header[1])
SILENCED_SYSTEM_CHECKS = [
    "security.W005",
    "security.W021",
]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    # ArrayField lookups, trigram similarity (pg_trgm) and GIN indexes of our products.
    "django.contrib.postgres",
    # Every long-running process's heartbeat and broker; before django_q, as its
    # qcluster command wraps django-q2's (the first app with a command name wins).
    "fleet",
    "django_q",
    # pricefeed's apps, lowest layer first (each may import only those above it here):
    # an app's admin may extend the admin of an app it builds on.
    "mailboxes",
    "outbox",
    "pricefeed",
    # Our own catalogue and the supplier lines linked to it.
    "products",
    # Rates, suppliers' terms and conversion to roubles (later offers and price rules).
    "pricing",
    "notifications",
    # Outbox events delivered to signed webhooks and RabbitMQ.
    "delivery",
    # Our published prices as feeds (/feeds/<token>/) and customer price lists by mail.
    "feeds",
    # Who may do what in the admin: the role groups, django-q2's admin restricted.
    "access",
    # The probes /healthz and /readyz, and manage.py pricefeed_status.
    "monitoring",
    # The admin's front page: what is failing, waiting and listening, at a glance.
    "console",
    # The read-only API under /api/ (REST framework), its OpenAPI schema and reference
    # page (api.reference: the schema shown in the admin's look and language).
    "rest_framework",
    "drf_spectacular",
    "api",
    # Admin login throttling (django-axes): failed logins counted in PostgreSQL, shared
    # by every web process; see "Login throttling" below.
    "axes",
]
# The development kit (manage.py demo, throwaway servers) where a source checkout has it;
# the installed package does not.
if importlib.util.find_spec("devkit") is not None:
    INSTALLED_APPS.append("devkit")

MIDDLEWARE = [
    # /healthz and /readyz, answered before the HTTPS redirect and host validation below
    # (orchestrators probe over plain HTTP with the pod's address as Host).
    "monitoring.middleware.ProbeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # The admin's static files, from STATIC_ROOT, by the WSGI server itself.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The language of each request: the one chosen with the switcher in the admin's
    # header (set_language, kept in a cookie), else the browser's Accept-Language, else
    # LANGUAGE_CODE. After the session, before CommonMiddleware (Django's order).
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Answers a locked-out login with 429 (django-axes: last, as it asks).
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # templates/, through the link config/templates, which is also where the wheel
        # puts them (pip install . copies no file from outside the packages).
        "DIRS": [Path(__file__).parent / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
            # Our models' names in the forms the admin's sentences need (core/grammar.py).
            "libraries": {"grammar": "core.grammar_tags"},
        },
    },
]

WSGI_APPLICATION = "config.wsgi.application"

# --- Database ---------------------------------------------------------------------
# PostgreSQL, the one engine: leases, claims (FOR UPDATE SKIP LOCKED), LISTEN/NOTIFY,
# COPY and the catalogue's NULLS NOT DISTINCT index are written for it alone. (The demo
# and the tests start an embedded one when none is given: devkit/servers/postgres.py.)
# Connections are persistent: django-q2's ORM broker would otherwise open a new
# connection for every enqueue and dequeue (~26 ms each).
_POSTGRES_SCHEMES = ("postgres", "postgresql", "pgsql", "psql")


def _database(url: str) -> dict:
    """DATABASE_URL's settings; anything but a PostgreSQL URL is refused here, at start."""
    example = "postgres://user:password@host:5432/database"
    if not url:
        raise ImproperlyConfigured(
            f"DATABASE_URL is not set: pricefeed runs on PostgreSQL ({example}). "
            "./scripts/demo and ./scripts/test start an embedded PostgreSQL themselves."
        )
    # Only the scheme is repeated: the rest may hold a password.
    scheme = url.partition(":")[0][:20]
    if scheme not in _POSTGRES_SCHEMES:
        raise ImproperlyConfigured(
            f"DATABASE_URL names a {scheme!r} database: pricefeed runs on PostgreSQL only "
            f"({example})."
        )
    config = env.db_url_config(url)
    # A database behind a dead network must fail a connect, and a connection whose peer
    # vanished must be noticed, in seconds: listeners stop before their leases expire
    # anyway, but the supervisor should get on with its retries.
    config.setdefault("OPTIONS", {}).update(
        {
            "connect_timeout": env.int("PRICEFEED_DB_CONNECT_TIMEOUT", default=10),
            "keepalives": 1,
            "keepalives_idle": 30,
            "keepalives_interval": 10,
            "keepalives_count": 3,
        }
    )
    config["CONN_MAX_AGE"] = env.int("PRICEFEED_DB_CONN_MAX_AGE", default=600)
    config["CONN_HEALTH_CHECKS"] = True
    return config


DATABASES = {"default": _database(env.str("DATABASE_URL", default=""))}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Login throttling (django-axes; docs/operations.md "Login throttling") ----------
# Every password check goes through AxesStandaloneBackend first: it refuses a locked-out
# username at this address before the password is compared.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# PRICEFEED_LOGIN_FAILURES failed logins of one username from one address lock that pair
# out for PRICEFEED_LOGIN_LOCKOUT seconds: the failing attempt that reaches the limit and
# every attempt until the lock ends, right password or not, is answered 429. A right
# login before the limit clears the count. The address is the connection's, or, from a
# proxy named in PRICEFEED_TRUSTED_PROXIES, the client's as X-Forwarded-For gives it
# (core.clientip); behind a proxy not named there every client has the proxy's address
# and the lock is per username.
AXES_FAILURE_LIMIT = env.int("PRICEFEED_LOGIN_FAILURES", default=5)
AXES_COOLOFF_TIME = timedelta(seconds=env.int("PRICEFEED_LOGIN_LOCKOUT", default=900))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
PRICEFEED_TRUSTED_PROXIES = env.list("PRICEFEED_TRUSTED_PROXIES", default=[])
try:
    parse_networks(PRICEFEED_TRUSTED_PROXIES)
except ValueError as error:
    raise ImproperlyConfigured(f"PRICEFEED_TRUSTED_PROXIES: {error}") from None
AXES_CLIENT_IP_CALLABLE = "core.clientip.request_client_address"
# Failures are what the lock needs; a row per successful login would only grow.
AXES_DISABLE_ACCESS_LOG = True
# No pages of its own in the admin (they are English and outside the admin's lists'
# checks): locks are lifted with its axes_reset commands (docs/operations.md).
AXES_ENABLE_ADMIN = False

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# The language of the admin (for a browser that asks for none of LANGUAGES, and until a
# user picks one) and of mails; Russian unless set.
LANGUAGE_CODE = env.str("LANGUAGE_CODE", default="ru")
# The languages the admin and the notification mails are offered in.
LANGUAGES = [("ru", "Русский"), ("en", "English")]
# The project's catalogue (locale/, the strings of config, core, access, fleet,
# monitoring, devkit and templates/), through the link config/locale, which is also where
# the wheel puts it; every app's own locale/ is found by Django beside the app. The .mo
# files are compiled by the build (build_locale.py), not committed.
LOCALE_PATHS = [Path(__file__).parent / "locale"]
TIME_ZONE = env.str("TIME_ZONE", default="UTC")
# Where our formats correct Django's for a language (config/formats/ru: "2 декабря").
FORMAT_MODULE_PATH = ["config.formats"]
USE_I18N = True
USE_TZ = True
# Numbers and dates are shown in the formats of the request's language (Russian: a
# decimal comma, "1 декабря 2026 г. 22:05", 24-hour times). Thousands are not grouped:
# the admin shows identifiers (IMAP UIDs, ids, ports, row numbers) as plain numbers too,
# and "4 294 967 295" as a UID would be misread; prices keep their decimal comma.
USE_THOUSAND_SEPARATOR = False

STATIC_URL = "static/"
# Filled by `manage.py collectstatic` and served by WhiteNoise under hashed names (the
# manifest maps them), compressed, cacheable for ever.
STATIC_ROOT = Path(env.str("STATIC_ROOT", default="") or VAR_DIR / "static")
# The admin lists' stylesheet (core.adminutils), beside the apps' own static files;
# core ships it in the wheel (package-data) next to config.
STATICFILES_DIRS = [BASE_DIR / "core" / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

# --- Outgoing mail -----------------------------------------------------------------
# Django's SMTP backend verifies certificates for STARTTLS/SSL; a timeout is always set.
EMAIL_CONFIG = env.email_url_config(env.str("EMAIL_URL", default="") or "consolemail://")
vars().update(EMAIL_CONFIG)
EMAIL_TIMEOUT = env.int("PRICEFEED_EMAIL_TIMEOUT", default=30)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="pricefeed@localhost")
SERVER_EMAIL = env.str("SERVER_EMAIL", default=DEFAULT_FROM_EMAIL)
# Alerts (terminal failures) go to ADMINS: "Name <addr>, other@addr".
ADMINS = [
    (addr.split("<")[0].strip() or addr, addr.split("<")[-1].rstrip(">").strip())
    for addr in env.list("ADMINS", default=[])
    if addr.strip()
]
# Error reports (the mails to ADMINS) mask the password of every scheme://user:pw@host
# in settings and local variables, not only settings named like secrets (PRICEFEED_REDIS_URL
# ends up in Q_CLUSTER["redis"]).
DEFAULT_EXCEPTION_REPORTER_FILTER = "core.reporting.UrlPasswordReporterFilter"

# --- pricefeed ---------------------------------------------------------------------
PRICEFEED_INSTANCE_ID = (
    env.str("PRICEFEED_INSTANCE_ID", default="") or f"{socket.gethostname()}:{os.getpid()}"
)
# Fernet keys for secrets at rest (mailbox passwords); the first one encrypts, all of
# them decrypt, so a new key is rotated in by putting it first. Empty: derived from
# SECRET_KEY.
PRICEFEED_ENCRYPTION_KEYS = [k for k in env.list("PRICEFEED_ENCRYPTION_KEYS", default=[]) if k]

# Trusted senders: the authserv-ids of the receiving mail servers whose
# Authentication-Results headers are believed (RFC 8601); any other such header is the
# sender's own writing and ignored. Empty: no verdict is ever read.
PRICEFEED_AUTHSERV_IDS = [i for i in env.list("PRICEFEED_AUTHSERV_IDS", default=[]) if i]

# Input limits.
PRICEFEED_MAX_MESSAGE_BYTES = env.int("PRICEFEED_MAX_MESSAGE_BYTES", default=25 * 1024 * 1024)
# Files (attachments and archive members together) one message may bring.
PRICEFEED_MAX_FILES_PER_MESSAGE = env.int("PRICEFEED_MAX_FILES_PER_MESSAGE", default=100)
# MIME budgets, checked before anything in a message is decoded (mailboxes/mimebudget.py).
PRICEFEED_MIME_MAX_PARTS = env.int("PRICEFEED_MIME_MAX_PARTS", default=500)
PRICEFEED_MIME_MAX_DEPTH = env.int("PRICEFEED_MIME_MAX_DEPTH", default=20)
PRICEFEED_MIME_MAX_HEADER_BYTES = env.int("PRICEFEED_MIME_MAX_HEADER_BYTES", default=256 * 1024)
PRICEFEED_MIME_MAX_HEADER_FIELDS = env.int("PRICEFEED_MIME_MAX_HEADER_FIELDS", default=500)
PRICEFEED_MIME_MAX_ENCODED_WORDS = env.int("PRICEFEED_MIME_MAX_ENCODED_WORDS", default=100)
PRICEFEED_MIME_MAX_PARAMS = env.int("PRICEFEED_MIME_MAX_PARAMS", default=100)
PRICEFEED_MIME_MAX_COMMENTS = env.int("PRICEFEED_MIME_MAX_COMMENTS", default=100)
PRICEFEED_MIME_MAX_CONTENT_FIELD_BYTES = env.int(
    "PRICEFEED_MIME_MAX_CONTENT_FIELD_BYTES", default=4096
)
PRICEFEED_MIME_MAX_CONTENT_BYTES = env.int("PRICEFEED_MIME_MAX_CONTENT_BYTES", default=256 * 1024)
# A message at the input limits needs under 2 s of CPU here (measured: 25 MiB of one
# attachment 0.4 s, 100 CSV attachments 0.2 s, a zip of 99 CSVs of 2 MiB 1.6 s, a tar.gz
# inflating to 48 MiB 0.7 s); five times that leaves room for a slower machine.
PRICEFEED_MIME_MAX_CPU_SECONDS = env.float("PRICEFEED_MIME_MAX_CPU_SECONDS", default=10.0)
# Attachments and archives (counted as bytes inflate, never from headers).
PRICEFEED_PARSE_MAX_FILE_BYTES = env.int("PRICEFEED_PARSE_MAX_FILE_BYTES", default=50 * 2**20)
PRICEFEED_PARSE_MAX_TOTAL_INFLATED = env.int(
    "PRICEFEED_PARSE_MAX_TOTAL_INFLATED", default=200 * 2**20
)
PRICEFEED_PARSE_MAX_ENTRIES = env.int("PRICEFEED_PARSE_MAX_ENTRIES", default=1000)
PRICEFEED_PARSE_MAX_DEPTH = env.int("PRICEFEED_PARSE_MAX_DEPTH", default=3)
PRICEFEED_PARSE_MAX_RATIO = env.int("PRICEFEED_PARSE_MAX_RATIO", default=200)
PRICEFEED_PARSE_MAX_ROWS = env.int("PRICEFEED_PARSE_MAX_ROWS", default=2_000_000)
PRICEFEED_PARSE_MAX_CELLS = env.int("PRICEFEED_PARSE_MAX_CELLS", default=32_000_000)
# Reading time all the files of one message may take together (pricefeed.imports.lifecycle
# .message_limits): each file keeps PRICEFEED_PARSE_MAX_SECONDS at most.
PRICEFEED_MESSAGE_PARSE_SECONDS = env.int("PRICEFEED_MESSAGE_PARSE_SECONDS", default=600)
# Cells the workbooks of one message may span in all (pricefeed.imports.lifecycle
# .charge_cells): four files at PRICEFEED_PARSE_MAX_CELLS, 140 of a 100k x 8 price list.
PRICEFEED_MESSAGE_PARSE_CELLS = env.int("PRICEFEED_MESSAGE_PARSE_CELLS", default=128_000_000)
PRICEFEED_PARSE_MAX_CELLS_PER_BYTE = env.int("PRICEFEED_PARSE_MAX_CELLS_PER_BYTE", default=64)
PRICEFEED_PARSE_MAX_TEXT_BYTES = env.int("PRICEFEED_PARSE_MAX_TEXT_BYTES", default=512 * 2**20)
PRICEFEED_PARSE_MAX_ERRORS = env.int("PRICEFEED_PARSE_MAX_ERRORS", default=10_000)
# Hostile files: cells read per row, bytes per text line, seconds per file (below
# PRICEFEED_Q_TIMEOUT, so that an import ends FAILED with the reason, not killed; with
# PRICEFEED_MIME_MAX_CPU_SECONDS: a file of up to 1 MiB is imported by the task that
# read its message, pricefeed.imports.lifecycle.imports_start).
PRICEFEED_PARSE_MAX_COLUMNS = env.int("PRICEFEED_PARSE_MAX_COLUMNS", default=1024)
PRICEFEED_PARSE_MAX_LINE_BYTES = env.int("PRICEFEED_PARSE_MAX_LINE_BYTES", default=2**20)
PRICEFEED_PARSE_MAX_SECONDS = env.int("PRICEFEED_PARSE_MAX_SECONDS", default=180)
# A running import writes the rows it has read at most this often (seconds), from a
# database connection of its own (pricefeed.imports.progress); 0: only at the end.
PRICEFEED_IMPORT_PROGRESS_INTERVAL = env.float("PRICEFEED_IMPORT_PROGRESS_INTERVAL", default=2.0)
# The most rows the admin exports as xlsx (openpyxl writes ~14,000 rows/s here: a
# million would outlast the web worker's timeout); CSV has no limit.
PRICEFEED_EXPORT_XLSX_MAX_ROWS = env.int("PRICEFEED_EXPORT_XLSX_MAX_ROWS", default=200_000)

# IMAP.
PRICEFEED_IMAP_CONNECT_TIMEOUT = env.float("PRICEFEED_IMAP_CONNECT_TIMEOUT", default=15.0)
PRICEFEED_IMAP_TIMEOUT = env.float("PRICEFEED_IMAP_TIMEOUT", default=60.0)
# PEM file of extra CA(s) trusted for IMAP TLS, besides the system store; "" = none.
PRICEFEED_IMAP_CA_FILE = env.str("PRICEFEED_IMAP_CA_FILE", default="")
PRICEFEED_IMAP_IDLE_REFRESH = env.float("PRICEFEED_IMAP_IDLE_REFRESH", default=300.0)
# While idling, each mailbox leaves IDLE this often to search for new mail itself: the
# bound on latency where the server's IDLE polls (Cyrus without idled, Courier without
# FAM: 60 s) or says nothing. 0 = IDLE alone. 20 s costs 100 mailboxes 5 checks a second.
PRICEFEED_IMAP_CHECK_INTERVAL = env.float("PRICEFEED_IMAP_CHECK_INTERVAL", default=20.0)
PRICEFEED_IMAP_FETCH_BATCH = env.int("PRICEFEED_IMAP_FETCH_BATCH", default=100)
PRICEFEED_IMAP_FETCH_BATCH_BYTES = env.int(
    "PRICEFEED_IMAP_FETCH_BATCH_BYTES", default=32 * 1024 * 1024
)
# Where mailboxes may point. Plain-text IMAP (no TLS) only when allowed; loopback,
# private, link-local and other non-public addresses only when one of these networks
# (CIDR, e.g. "10.20.0.0/16,127.0.0.1/32") holds them. Checked when a mailbox is saved
# and on every connection (after DNS resolution, against the address connected to).
PRICEFEED_IMAP_ALLOW_PLAIN = env.bool("PRICEFEED_IMAP_ALLOW_PLAIN", default=False)
PRICEFEED_IMAP_ALLOWED_NETWORKS = [
    n for n in env.list("PRICEFEED_IMAP_ALLOWED_NETWORKS", default=[]) if n
]
PRICEFEED_IMAP_BACKOFF_BASE = env.float("PRICEFEED_IMAP_BACKOFF_BASE", default=1.0)
PRICEFEED_IMAP_BACKOFF_MAX = env.float("PRICEFEED_IMAP_BACKOFF_MAX", default=300.0)

# Listener supervisor. A mailbox whose owner died is listened again within about
# TTL + poll interval; a listener stops when its lease has not been renewed for
# TTL - max(2 x heartbeat, TTL / 4), before anyone else can take it.
PRICEFEED_LEASE_TTL = env.float("PRICEFEED_LEASE_TTL", default=10.0)
# How long after its last heartbeat a process still counts as live (the admin, the status
# command, rebalancing's count of instances); a lease's TTL is the lease's alone.
PRICEFEED_LIVENESS_WINDOW = env.float("PRICEFEED_LIVENESS_WINDOW", default=10.0)
PRICEFEED_HEARTBEAT_INTERVAL = env.float("PRICEFEED_HEARTBEAT_INTERVAL", default=2.0)
PRICEFEED_CONFIG_POLL_INTERVAL = env.float("PRICEFEED_CONFIG_POLL_INTERVAL", default=2.0)
PRICEFEED_SWEEP_INTERVAL = env.float("PRICEFEED_SWEEP_INTERVAL", default=15.0)
PRICEFEED_SHUTDOWN_GRACE = env.float("PRICEFEED_SHUTDOWN_GRACE", default=10.0)
# An instance sheds leases when it holds more than its fair share plus this weight.
PRICEFEED_REBALANCE_TOLERANCE = env.float("PRICEFEED_REBALANCE_TOLERANCE", default=0.5)
# Admission control: recorded messages not yet finished by a worker (mailboxes.admission);
# at a bound listeners stop fetching (and keep their leases) until the backlog drains.
# The counts, per instance and per mailbox, bound how long one mailbox's backlog makes
# the others wait in the queue (2,000 messages: about half a minute at two workers'
# ~60 small messages/s, bench/ingest.py); the size, per instance, bounds what waits in
# the database (25 MiB messages would make 5,000 of them 122 GiB).
PRICEFEED_MAX_IN_FLIGHT = env.int("PRICEFEED_MAX_IN_FLIGHT", default=5000)
PRICEFEED_MAX_IN_FLIGHT_PER_MAILBOX = env.int("PRICEFEED_MAX_IN_FLIGHT_PER_MAILBOX", default=2000)
PRICEFEED_MAX_IN_FLIGHT_BYTES = env.int("PRICEFEED_MAX_IN_FLIGHT_BYTES", default=2**30)
# Listener threads using the database at once (each closes its connection after use).
PRICEFEED_LISTENER_DB_CONNECTIONS = env.int("PRICEFEED_LISTENER_DB_CONNECTIONS", default=4)
# Where listen_mail writes which mailboxes it listens to (JSON); empty = nowhere.
PRICEFEED_LISTENER_STATUS_FILE = env.str("PRICEFEED_LISTENER_STATUS_FILE", default="")

# Message processing (django-q2 task).
PRICEFEED_PROCESSING_MAX_ATTEMPTS = env.int("PRICEFEED_PROCESSING_MAX_ATTEMPTS", default=5)
PRICEFEED_PROCESSING_RETRY_BASE = env.float("PRICEFEED_PROCESSING_RETRY_BASE", default=30.0)
PRICEFEED_PROCESSING_RETRY_MAX = env.float("PRICEFEED_PROCESSING_RETRY_MAX", default=3600.0)
PRICEFEED_PROCESSING_CLAIM_TIMEOUT = env.float("PRICEFEED_PROCESSING_CLAIM_TIMEOUT", default=600.0)
PRICEFEED_REQUEUE_AFTER = env.float("PRICEFEED_REQUEUE_AFTER", default=120.0)
# A message or import whose worker process died under it (native crash, out of memory,
# killed) is retried after a short backoff, and FAILED once it has happened this often.
PRICEFEED_CRASH_MAX_ATTEMPTS = env.int("PRICEFEED_CRASH_MAX_ATTEMPTS", default=2)

# Matching supplier lines to our products (products.linking): name similarity from which
# a link is made automatically, and from which one is proposed for review.
PRICEFEED_MATCH_AUTO = env.float("PRICEFEED_MATCH_AUTO", default=0.8)
PRICEFEED_MATCH_REVIEW = env.float("PRICEFEED_MATCH_REVIEW", default=0.5)
# A config's lines matched as this many transactions side by side (products.linking):
# part 0 in the worker, the others in processes forked from it (core.parts).
PRICEFEED_MATCH_PARTS = env.int("PRICEFEED_MATCH_PARTS", default=2)
# The Bank of Russia's daily rates and their use (pricing, docs/pricing.md).
PRICEFEED_RATES_URL = env.str(
    "PRICEFEED_RATES_URL", default="https://www.cbr.ru/scripts/XML_daily.asp"
)
PRICEFEED_RATES_ALLOW_PLAIN = env.bool("PRICEFEED_RATES_ALLOW_PLAIN", default=False)
PRICEFEED_RATES_TIMEOUT = env.float("PRICEFEED_RATES_TIMEOUT", default=10.0)
PRICEFEED_RATES_RETRY_BASE = env.float("PRICEFEED_RATES_RETRY_BASE", default=60.0)
PRICEFEED_RATES_RETRY_MAX = env.float("PRICEFEED_RATES_RETRY_MAX", default=3600.0)
PRICEFEED_RATES_WINDOW_DAYS = env.int("PRICEFEED_RATES_WINDOW_DAYS", default=7)
# A supplier's offers and prices recomputed as this many transactions side by side
# (pricing.offers): about the database server's cores to spare.
PRICEFEED_OFFERS_PARTS = env.int("PRICEFEED_OFFERS_PARTS", default=2)
# Feeds and customer price lists (feeds, docs/feeds.md): the most products in one xlsx
# (Excel's sheet holds 1,048,576 rows, the header one of them).
PRICEFEED_FEEDS_XLSX_MAX_ROWS = env.int("PRICEFEED_FEEDS_XLSX_MAX_ROWS", default=1_048_575)

# Outbox dispatcher.
# Each batch crosses django-q2 once (enqueue, take, worker, acknowledgement: ~10 ms of
# CPU on this machine kind, whatever its size): at 100 that was half the cost of an event.
PRICEFEED_OUTBOX_BATCH = env.int("PRICEFEED_OUTBOX_BATCH", default=500)
PRICEFEED_OUTBOX_POLL_INTERVAL = env.float("PRICEFEED_OUTBOX_POLL_INTERVAL", default=2.0)
PRICEFEED_OUTBOX_CLAIM_TIMEOUT = env.float("PRICEFEED_OUTBOX_CLAIM_TIMEOUT", default=300.0)
PRICEFEED_OUTBOX_MAX_ATTEMPTS = env.int("PRICEFEED_OUTBOX_MAX_ATTEMPTS", default=8)
PRICEFEED_OUTBOX_RETRY_BASE = env.float("PRICEFEED_OUTBOX_RETRY_BASE", default=10.0)
PRICEFEED_OUTBOX_RETRY_MAX = env.float("PRICEFEED_OUTBOX_RETRY_MAX", default=3600.0)
# A batch of notifications is spread over up to this many SMTP connections (at least ten
# mails each), so that waits for the server's replies overlap.
PRICEFEED_NOTIFICATION_SMTP_CONNECTIONS = env.int(
    "PRICEFEED_NOTIFICATION_SMTP_CONNECTIONS", default=4
)
# Outbox events delivered to webhooks and RabbitMQ (delivery, docs/delivery.md): plain
# http:// and amqp:// endpoints only when allowed (tests, the demo); the seconds a
# webhook's connection and each answer may take.
PRICEFEED_DELIVERY_ALLOW_PLAIN = env.bool("PRICEFEED_DELIVERY_ALLOW_PLAIN", default=False)
PRICEFEED_DELIVERY_TIMEOUT = env.float("PRICEFEED_DELIVERY_TIMEOUT", default=10.0)
# Where people reach this site (scheme and host, e.g. https://pricefeed.example.com):
# notification mails link to the import in the admin under it. Empty: no link.
PRICEFEED_PUBLIC_URL = env.str("PRICEFEED_PUBLIC_URL", default="")

# --- API ----------------------------------------------------------------------------
# /api/ (the api app, docs/api.md): read-only; programs sign in with an API token, people
# with the admin's session; the user's view permissions decide what either may read.
# Optional requests per token (e.g. "600/minute"; empty: no limit). Off by default: every
# page is an index range of at most 1000 rows, the tokens are given to known systems,
# and without a shared cache the counts would be per web worker.
PRICEFEED_API_RATE = env.str("PRICEFEED_API_RATE", default="")
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["api.permissions.ViewPermission"],
    "DEFAULT_PAGINATION_CLASS": "api.pagination.CursorPagination",
    "PAGE_SIZE": 100,
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "api.negotiation.ContentNegotiation",
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_THROTTLE_CLASSES": (
        ["api.throttling.TokenRateThrottle"] if PRICEFEED_API_RATE else []
    ),
    "DEFAULT_THROTTLE_RATES": {"api": PRICEFEED_API_RATE or None},
    # Prices are exact: decimals as strings (DRF's default, stated).
    "COERCE_DECIMAL_TO_STRING": True,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "pricefeed API",
    "DESCRIPTION": "Supplier price lists received by e-mail: configs, imports, their rows, "
    "and each config's catalogue now, as of a moment, and its changes. Read-only.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
}

# --- django-q2 ----------------------------------------------------------------------
# The worker count is the concurrency cap for parsing and sending.
# Successful task results kept for the admin (the newest ones); 0: all, -1: none.
PRICEFEED_Q_SAVE_LIMIT = env.int("PRICEFEED_Q_SAVE_LIMIT", default=1000)
Q_CLUSTER = {
    "name": "pricefeed",
    "workers": env.int("PRICEFEED_Q_WORKERS", default=2),
    "timeout": env.int("PRICEFEED_Q_TIMEOUT", default=300),
    # Must exceed the timeout, or a slow task is handed to a second worker.
    "retry": env.int("PRICEFEED_Q_RETRY", default=360),
    "max_attempts": env.int("PRICEFEED_Q_MAX_ATTEMPTS", default=3),
    "queue_limit": env.int("PRICEFEED_Q_QUEUE_LIMIT", default=50),
    # django-q2's monitor prunes successful results itself by locking every one kept
    # (SELECT ... FOR UPDATE of up to save_limit rows) after each task: at 1000 that
    # held the cluster to ~40 tasks/s. It keeps them all here (0) and a sweep prunes
    # them to PRICEFEED_Q_SAVE_LIMIT (core.taskresults); -1 still means
    # "save no successful results".
    "save_limit": min(PRICEFEED_Q_SAVE_LIMIT, 0),
    "poll": env.float("PRICEFEED_Q_POLL", default=0.2),
    "ack_failures": True,
    "catch_up": False,
    # The admin's name for django-q2's app (its verbose_name), in the request's language.
    "label": gettext_lazy("Task queue"),
}
# Address space (RLIMIT_AS) of each django-q2 worker process, in bytes; 0 = no cap. An
# idle worker maps ~100 MiB; importing a 1M-row CSV peaks at ~510 MiB, a 1M-row (46 MiB)
# xlsx at ~2.3 GiB. Beyond the cap an allocation fails: a MemoryError (the import FAILED)
# or a dead worker (reaped), never the host's OOM killer.
PRICEFEED_WORKER_MEMORY_LIMIT = env.int("PRICEFEED_WORKER_MEMORY_LIMIT", default=3 * 2**30)
# The config preview reads an upload in a child of the web process under these caps
# (pricefeed.imports.preview, core.capped): 768 MiB keeps a gunicorn worker (~100 MiB)
# and its child under 1 GB; a 100k-row xlsx previews in ~1 s of CPU and ~100 MiB.
PRICEFEED_PREVIEW_MEMORY_LIMIT = env.int("PRICEFEED_PREVIEW_MEMORY_LIMIT", default=768 * 2**20)
PRICEFEED_PREVIEW_CPU_SECONDS = env.int("PRICEFEED_PREVIEW_CPU_SECONDS", default=20)
_redis_url = env.str("PRICEFEED_REDIS_URL", default="")
# A Redis broker without a password, or without TLS off this host, is refused with DEBUG
# off (core.brokers.check_redis_security) unless this says it is meant.
PRICEFEED_REDIS_ALLOW_INSECURE = env.bool("PRICEFEED_REDIS_ALLOW_INSECURE", default=False)
if _redis_url:
    Q_CLUSTER["redis"] = _redis_url
else:
    Q_CLUSTER["orm"] = "default"
    # django-q2's database queue, its workers woken by NOTIFY on PostgreSQL rather than
    # at their next poll (core/taskqueue.py); off: django-q2's own broker, which polls
    # (for a connection pooler that does not pass LISTEN/NOTIFY).
    if env.bool("PRICEFEED_Q_WAKE", default=True):
        Q_CLUSTER["broker_class"] = "core.taskqueue.WakingORM"

# --- Metrics ------------------------------------------------------------------------
# /metrics (monitoring.metrics) asks for "Authorization: Bearer <token>" when set; with
# DEBUG off it is refused (403) until set. PROMETHEUS_MULTIPROC_DIR, the directory the
# processes write their event metrics to, is read by prometheus_client itself.


def _forget_a_missing_metrics_directory() -> None:
    """Leaves PROMETHEUS_MULTIPROC_DIR out of this process's environment when it names no
    directory, before prometheus_client is first imported (django.setup() comes after the
    settings): the process then counts its events in memory, as without the variable.

    The directory belongs to the services: pricefeed-metrics.service makes it, empty, for
    them and removes it when they stop (deploy/systemd). A one-off command (migrate,
    createsuperuser, pricefeed_status) runs as well before they ever started or while
    they are stopped, when the directory is not there; prometheus_client would fail on
    the first metric with a traceback. It does not make the directory either: the
    service user may not write /run, and one made by hand would outlive the emptying the
    services rely on. What a one-off command counts is of no interest to /metrics."""
    path = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")
    if path and not os.path.isdir(path):
        del os.environ["PROMETHEUS_MULTIPROC_DIR"]


_forget_a_missing_metrics_directory()
PRICEFEED_METRICS_TOKEN = env.str("PRICEFEED_METRICS_TOKEN", default="")
# The metrics port of listen_mail and of dispatch_outbox (core.metrics_server), for hosts
# without the web process: what /metrics answers, behind the same token; 0 or empty = off.
PRICEFEED_METRICS_ADDRESS = env.str("PRICEFEED_METRICS_ADDRESS", default="127.0.0.1")
# HTTPS on that port: required off loopback, where the token would otherwise cross in clear.
PRICEFEED_METRICS_TLS_CERT = env.str("PRICEFEED_METRICS_TLS_CERT", default="")
PRICEFEED_METRICS_TLS_KEY = env.str("PRICEFEED_METRICS_TLS_KEY", default="")
PRICEFEED_LISTENER_METRICS_PORT = int(env.str("PRICEFEED_LISTENER_METRICS_PORT", default="") or 0)
PRICEFEED_OUTBOX_METRICS_PORT = int(env.str("PRICEFEED_OUTBOX_METRICS_PORT", default="") or 0)

# --- Logging ------------------------------------------------------------------------
# LOG_FORMAT=text: one escaped line per record with its context as key=value;
# LOG_FORMAT=json: one JSON object per record (core.logs).
LOG_FORMAT = env.str("LOG_FORMAT", default="text")
if LOG_FORMAT not in ("text", "json"):
    raise ValueError(f"LOG_FORMAT must be text or json, not {LOG_FORMAT!r}")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "text": {"()": "core.logs.TextFormatter"},
        "json": {"()": "core.logs.JsonFormatter"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT},
        "mail_admins": {
            "class": "django.utils.log.AdminEmailHandler",
            "level": "ERROR",
            "filters": ["require_debug_false"],
        },
    },
    "filters": {"require_debug_false": {"()": "django.utils.log.RequireDebugFalse"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {
        "imapclient": {"level": "WARNING"},
        # pika logs every connection's opening and closing at INFO: one per batch.
        "pika": {"level": "WARNING"},
        # django-q2 logs as "django-q" (its Q_CLUSTER log_level applies only when no
        # handler is configured, and the root's is).
        "django-q": {"level": env.str("PRICEFEED_Q_LOG_LEVEL", default="WARNING")},
        # django-axes's banner at every process's start (its failures and lockouts are
        # logged by axes.handlers, at WARNING).
        "axes.apps": {"level": "WARNING"},
    },
}
