"""Settings for bench/outbox.py's django-post_office peer: pricefeed's own plus the app.

Only the bench uses this module (``DJANGO_SETTINGS_MODULE=bench.outbox_postoffice_settings``);
post_office is a peer measured against pricefeed, not a dependency of it.
"""

from __future__ import annotations

from config.settings import *  # noqa: F403
from config.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "post_office"]

# post_office's own defaults, spelled out so the bench report can name them: 100 mails
# per batch, 5 sending threads (each with its own SMTP connection) per process, and a
# Log row for every mail sent (LOG_LEVEL 2). The backend is EMAIL_BACKEND from EMAIL_URL.
POST_OFFICE = {
    "BATCH_SIZE": 100,
    "THREADS_PER_PROCESS": 5,
    "LOG_LEVEL": 2,
    "DEFAULT_PRIORITY": "medium",
    # Off by default: the Message-ID header pricefeed derives from the notification id
    # is kept, so every peer sends byte-for-byte comparable mails.
    "MESSAGE_ID_ENABLED": False,
}
