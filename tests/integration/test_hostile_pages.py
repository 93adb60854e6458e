"""Issue #30's header, sender and supplier-text attacks end to end: through a real
Dovecot, ``listen_mail`` and ``qcluster`` (devkit.hostile.Rig, as test_hostile.py runs
every case), then read back through gunicorn as the web unit serves it, in Russian.

- Comments or quoted strings in a Content-Type or a filename: the message is REJECTED
  at once with the MIME budget's reason, where the email parser's quadratic path took
  20-30 s of CPU a message.
- A From whose comment or display name holds the supplier's address: the sender is the
  attacker (so the supplier's config does not match: IGNORED) and the message page
  warns that the name shows another address.
- A 128 KiB price cell: the import FAILS with a row error that quotes the cell cut to
  200 characters, and the imports list and the import's page hold only that cut (they
  took 52.7 s when the cell was stored whole).

How soon the pages answer (the issue's second) is a bar of bench/hostile.py, measured
beside a peer: a shared machine makes it no assertion here. What makes them slow is
asserted instead: no page holds more of the cell than its cut.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import translation

from core.texts import shown
from devkit.hostile import BIG_CELL, CASES_BY_NAME, acceptance_problems
from mailboxes.models import InboundMessage
from notifications.services import render_outcome
from pricefeed.models import PriceImport
from tests.deploy.support import Gunicorn, run, unit_command
from tests.requirements import require_dovecot

from .support import ROOT, database_url, hostile_rig

pytestmark = pytest.mark.integration

CASES = [
    CASES_BY_NAME[name]
    for name in ("ct-comments", "fn-quoted", "from-comment", "from-display-name", "big-price-cell")
]
RECORDED_WITHIN = 30.0
SETTLED_WITHIN = 120.0
WORKER_TREE_RSS_LIMIT = 2 * 10**9
# What a page may hold of the 128 KiB cell: the cut value (200 characters) and a little.
CELL_RUN = "по запросу " * 30


@pytest.fixture
def rig(transactional_db, tmp_path):
    require_dovecot()
    with hostile_rig(CASES, tmp_path) as rig:
        yield rig


def web_env(tmp_path: Path) -> dict[str, str]:
    """gunicorn's environment: plain HTTP on loopback, the HTTPS-only defaults turned off
    the documented way."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": database_url(),
        "DEBUG": "false",
        "STATIC_ROOT": str(tmp_path / "static"),
        "SECURE_SSL_REDIRECT": "false",
        "SESSION_COOKIE_SECURE": "false",
        "CSRF_COOKIE_SECURE": "false",
    }


def page(server: Gunicorn, path: str, headers: dict[str, str]) -> str:
    response = server.get(path, headers)
    assert response.status == 200, (path, response.status, response.text[:500])
    return response.text


@pytest.mark.timeout(len(CASES) * (SETTLED_WITHIN + 60) + 120)
def test_header_sender_and_cell_attacks_end_in_a_visible_state_their_pages_say_why(rig, tmp_path):
    hostile = {}
    for case in CASES:
        result = rig.run(case.name, recorded_within=RECORDED_WITHIN, settled_within=SETTLED_WITHIN)
        problems = acceptance_problems(
            case,
            result,
            recorded_within=RECORDED_WITHIN,
            settled_within=SETTLED_WITHIN,
            workers_rss_limit=WORKER_TREE_RSS_LIMIT,
        )
        assert not problems, f"{case.title}:\n- " + "\n- ".join(problems)
        hostile[case.name] = InboundMessage.objects.filter(
            mailbox_id=rig.mailbox_ids[case.name]
        ).earliest("uid")
    rig.stop_processes()  # the workers are done; the machine is shared

    refused = {name: hostile[name] for name in ("ct-comments", "fn-quoted")}
    forged = {name: hostile[name] for name in ("from-comment", "from-display-name")}
    (cell_import,) = PriceImport.objects.filter(message=hostile["big-price-cell"])
    with translation.override("ru"):
        for message in refused.values():
            assert message.status == InboundMessage.Status.REJECTED
            assert "больше 100 комментариев и строк в кавычках" in shown(message, "last_error")
        for message in forged.values():
            assert message.status == InboundMessage.Status.IGNORED
            assert message.from_address == "attacker@evil.example"
        assert cell_import.status == PriceImport.Status.FAILED
        assert shown(cell_import, "last_error").startswith("нет ни одной корректной строки")
        (row_error,) = cell_import.errors
        value = row_error["error"]["params"]["value"]
        assert len(value) <= 200 < BIG_CELL
        _subject, text, html = render_outcome(cell_import, "ru")
        assert "не число" in text and CELL_RUN not in text and CELL_RUN not in html

    run([sys.executable, "manage.py", "collectstatic", "--noinput"], web_env(tmp_path), ROOT)
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("admin", "a@example.com", "x"))
    session = client.cookies[settings.SESSION_COOKIE_NAME].value
    headers = {"Cookie": f"{settings.SESSION_COOKIE_NAME}={session}", "Accept-Language": "ru"}
    venv = Path(sys.executable).parent.parent

    def command(bind: str) -> list[str]:
        return unit_command("pricefeed-web.service", "ExecStart", venv, bind=bind)

    pages = {
        f"/admin/mailboxes/inboundmessage/{m.pk}/change/": "больше 100 комментариев"
        for m in refused.values()
    }
    pages |= {
        f"/admin/mailboxes/inboundmessage/{m.pk}/change/": "показывает адрес sales@acme.test"
        for m in forged.values()
    }
    pages["/admin/pricefeed/priceimport/"] = "нет ни одной корректной строки"
    pages[f"/admin/pricefeed/priceimport/{cell_import.pk}/change/"] = "не число"
    with Gunicorn(command, web_env(tmp_path), ROOT, tmp_path) as server:
        answers = {path: page(server, path, headers) for path in pages}
    for path, expected in pages.items():
        assert expected in answers[path], path
        assert CELL_RUN not in answers[path], path
