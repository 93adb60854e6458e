"""Hostile uploads to the config preview, served as in production (gunicorn, DEBUG off):
each is answered with why it was not read, while gunicorn's process tree (its workers
and the preview's child processes) stays under 1 GB and keeps serving (issue 30: one
such upload took the web process to 4.8 GB). How soon they are answered (the issue's
second) is a bar of bench/hostile.py (``--preview-only``), measured beside a peer: a
shared machine makes it no assertion here."""

from __future__ import annotations

import http.cookiejar
import os
import re
import sys
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from devkit import hostile_files
from devkit.hostile import RssSampler
from mailboxes.models import Mailbox
from pricefeed.models import PriceListConfig
from tests.factories import create_mailbox
from tests.integration.support import database_url

from .support import ROOT, Gunicorn, run, unit_command

pytestmark = pytest.mark.integration

PASSWORD = "preview-test-password-42"
GUNICORN_TREE_LIMIT = 10**9
CASES = [
    ("shared.xlsx", hostile_files.xlsx_shared_string_copies, r"PRICEFEED_PARSE_MAX_TEXT_BYTES"),
    ("shared.xls", hostile_files.xls_shared_string_copies, r"PRICEFEED_PARSE_MAX_TEXT_BYTES"),
    ("far.xlsx", hostile_files.xlsx_far_cell, r"more than 262,144 cells"),
]


class Browser:
    """Cookies, CSRF and multipart uploads over urllib: what the admin needs."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def get(self, path: str) -> str:
        with self.opener.open(self.base + path, timeout=60) as response:
            return response.read().decode()

    def csrf(self) -> str:
        return next(c.value for c in self.jar if c.name == "csrftoken")

    def login(self, username: str, password: str) -> None:
        self.get("/admin/login/")
        data = urllib.parse.urlencode(
            {"username": username, "password": password, "csrfmiddlewaretoken": self.csrf()}
        ).encode()
        request = urllib.request.Request(self.base + "/admin/login/?next=/admin/", data=data)
        request.add_header("Referer", self.base + "/admin/login/")
        with self.opener.open(request, timeout=60) as response:
            assert "/admin/login/" not in response.url, "the login failed"

    def upload(self, path: str, filename: str, content: bytes) -> str:
        self.get(path)
        boundary = uuid.uuid4().hex
        body = b"".join(
            [
                f"--{boundary}\r\nContent-Disposition: form-data; "
                f'name="csrfmiddlewaretoken"\r\n\r\n{self.csrf()}\r\n'.encode(),
                f"--{boundary}\r\nContent-Disposition: form-data; "
                f'name="file"; filename="{filename}"\r\n'
                "Content-Type: application/octet-stream\r\n\r\n".encode(),
                content,
                f"\r\n--{boundary}--\r\n".encode(),
            ]
        )
        request = urllib.request.Request(self.base + path, data=body)
        request.add_header("Content-Type", f"multipart/form-data; boundary={boundary}")
        request.add_header("Referer", self.base + path)
        with self.opener.open(request, timeout=60) as response:
            return response.read().decode()


def test_hostile_previews_are_refused_with_why_and_gunicorn_stays_small(transactional_db, tmp_path):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": database_url(),
        "DEBUG": "false",
        "STATIC_ROOT": str(tmp_path / "static"),
        "SECURE_SSL_REDIRECT": "false",
        "SESSION_COOKIE_SECURE": "false",
        "CSRF_COOKIE_SECURE": "false",
        "LANGUAGE_CODE": "en",
    }
    run([sys.executable, "manage.py", "collectstatic", "--noinput"], env, ROOT)
    get_user_model().objects.create_superuser("admin", "admin@example.com", PASSWORD)
    mailbox = create_mailbox(host="127.0.0.1", port=143, security=Mailbox.Security.PLAIN)
    config = PriceListConfig.objects.create(mailbox=mailbox, name="Supplier")
    path = f"/admin/pricefeed/pricelistconfig/{config.pk}/preview/"
    venv = Path(sys.executable).parent.parent

    def command(bind: str) -> list[str]:
        return unit_command("pricefeed-web.service", "ExecStart", venv, bind=bind)

    files = [(name, build(), reason) for name, build, reason in CASES]
    with Gunicorn(command, env, ROOT, tmp_path) as server:
        assert server.process is not None
        browser = Browser(server.url)
        browser.login("admin", PASSWORD)
        with RssSampler({"gunicorn": server.process.pid}, interval=0.05) as sampler:
            for name, data, reason in files:
                page = browser.upload(path, name, data)
                assert re.search(reason, page), f"{name}: no refusal in the page"
        assert "Supplier" in browser.get(path)  # still serving
    assert sampler.peaks["gunicorn"] < GUNICORN_TREE_LIMIT, sampler.peaks
    assert server.returncode == 0, server.log()[-3000:]
