"""The settings the test suite runs under: the production settings module, with the
environment a test machine needs filled in where the caller left it unset.

The values go into ``os.environ`` before ``config.settings`` reads it, so every
``manage.py`` process an integration test starts inherits them too. Tests of the
defaults themselves (``check --deploy``, address and plain-text refusals) start their
processes with an explicit environment or override these settings.
"""

from __future__ import annotations

import os

from cryptography.fernet import Fernet

TEST_ENVIRONMENT = {
    # The throwaway IMAP servers (Dovecot, pymap) listen on loopback, without TLS.
    "PRICEFEED_IMAP_ALLOW_PLAIN": "true",
    "PRICEFEED_IMAP_ALLOWED_NETWORKS": "127.0.0.0/8,::1/128",
    # The test client and the servers the tests start speak plain HTTP.
    "SECURE_SSL_REDIRECT": "false",
    # A key of this run's own: nothing encrypted by a test outlives it.
    "PRICEFEED_ENCRYPTION_KEYS": Fernet.generate_key().decode(),
    # No test reaches the Bank of Russia: the scheduled fetch of rates is off (the
    # pricing tests point it at their loopback server).
    "PRICEFEED_RATES_URL": "",
    # The tests assert the English texts (the source strings); the Russian catalogue is
    # tested on its own (tests/test_catalogue.py) and by tests that ask for Russian.
    "LANGUAGE_CODE": "en",
}
for _name, _value in TEST_ENVIRONMENT.items():
    os.environ.setdefault(_name, _value)

from config.settings import *  # noqa: E402, F403
from config.settings import STORAGES  # noqa: E402

# The suite renders admin pages in-process with DEBUG off and never runs collectstatic:
# production's manifest storage would refuse every {% static %} (no manifest), so static
# URLs stay unhashed here; and WhiteNoise looks files up when asked instead of indexing
# STATIC_ROOT as it starts (there is none; it would warn, an error under
# filterwarnings). tests/deploy runs the production storage for real.
STORAGES = {
    **STORAGES,
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
WHITENOISE_AUTOREFRESH = True
