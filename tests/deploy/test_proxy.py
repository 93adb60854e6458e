"""The TLS proxy example, deploy/nginx.conf, in front of gunicorn as the web unit runs it
(the installed package, the documented environment, DEBUG off): Debian's nginx with a
throwaway certificate, and an admin login over HTTPS in Chromium that lands on the
admin's index with CSRF passed."""

from __future__ import annotations

import http.client
import re
import secrets
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from devkit.servers import free_port
from devkit.servers.dovecot import _certificates
from tests.requirements import require_chromium, require_nginx

from .support import DEPLOY, Gunicorn, readable_directory, run, unit_command
from .test_admin_browser import CHROMIUM_ARGS
from .test_install import HOST, production_environment

pytestmark = pytest.mark.integration

PASSWORD = secrets.token_urlsafe(16)
# The private instance around the example: its own pid, logs and temporary files, in the
# foreground; the example's server blocks are included as a site is on Debian.
MAIN_CONF = """\
daemon off;
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log notice;
events {{ worker_connections 64; }}
http {{
    access_log {dir}/access.log;
    client_body_temp_path {dir}/client_body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    include {dir}/pricefeed.conf;
}}
"""


def site_config(*, https_port: int, http_port: int, upstream: int, cert: Path, key: Path) -> str:
    """deploy/nginx.conf on this machine's ports and certificate, nothing else changed.
    Each replaced line must be there once: an example that changed shape fails here."""
    text = (DEPLOY / "nginx.conf").read_text()
    replacements = [
        (r"listen 80;", f"listen {HOST}:{http_port};"),
        (r"listen \[::\]:80;\n", ""),
        (r"listen 443 ssl;", f"listen {HOST}:{https_port} ssl;"),
        (r"listen \[::\]:443 ssl;\n", ""),
        (r"ssl_certificate \S+;", f"ssl_certificate {cert};"),
        (r"ssl_certificate_key \S+;", f"ssl_certificate_key {key};"),
        (r"proxy_pass http://127\.0\.0\.1:8000;", f"proxy_pass http://127.0.0.1:{upstream};"),
    ]
    for pattern, replacement in replacements:
        text, found = re.subn(rf"(?m)^(\s*){pattern}", rf"\g<1>{replacement}", text)
        assert found == 1, f"deploy/nginx.conf: {pattern!r} found {found} times"
    return text


class Nginx:
    """A private nginx (``-p``/``-c`` of its own, not a daemon) serving the example."""

    def __init__(self, directory: Path, site: str) -> None:
        self.directory = directory
        (directory / "pricefeed.conf").write_text(site)
        (directory / "nginx.conf").write_text(MAIN_CONF.format(dir=directory))
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, port: int) -> None:
        argv = [
            require_nginx(),
            *("-p", str(self.directory)),
            *("-c", str(self.directory / "nginx.conf")),
            *("-e", str(self.directory / "error.log")),
        ]
        run([*argv, "-t"], {}, self.directory)
        self.process = subprocess.Popen(
            argv,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"nginx exited:\n{self.log()}"
            try:
                socket.create_connection((HOST, port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.1)
        raise AssertionError(f"nginx did not listen on {port}:\n{self.log()}")

    def log(self) -> str:
        path = self.directory / "error.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()  # fast shutdown
            self.process.wait(30)


@pytest.fixture
def nginx_dir() -> Iterator[Path]:
    # nginx's workers run as nobody when the master is root: they must reach its
    # temporary files.
    with readable_directory("nginx") as directory:
        yield directory


def get(port: int, path: str, headers: dict[str, str], context: ssl.SSLContext | None = None):
    if context is None:
        conn: http.client.HTTPConnection = http.client.HTTPConnection(HOST, port, timeout=30)
    else:
        conn = http.client.HTTPSConnection(HOST, port, timeout=30, context=context)
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        return response.status, response.headers, response.read()
    finally:
        conn.close()


def test_gunicorn_behind_the_nginx_example_logs_in_over_https_in_chromium(
    installed, deploy_database, tmp_path, nginx_dir
):
    require_nginx()
    browser = require_chromium()
    from playwright.sync_api import sync_playwright

    env = production_environment(tmp_path, deploy_database)
    cwd = tmp_path / "run"
    cwd.mkdir()
    django_admin = str(installed.bin / "django-admin")
    run([django_admin, "migrate", "--noinput"], env, cwd)
    run([django_admin, "collectstatic", "--noinput"], env, cwd)
    superuser = {"DJANGO_SUPERUSER_USERNAME": "admin", "DJANGO_SUPERUSER_PASSWORD": PASSWORD}
    run(
        [django_admin, "createsuperuser", "--noinput", "--email", "admin@example.com"],
        {**env, **superuser},
        cwd,
    )
    ca, cert_pem, key_pem = _certificates([HOST])
    cert, key = nginx_dir / "cert.pem", nginx_dir / "key.pem"
    cert.write_bytes(cert_pem)
    key.write_bytes(key_pem)
    trusted = ssl.create_default_context(cadata=ca.decode())

    def command(bind: str) -> list[str]:
        return unit_command("pricefeed-web.service", "ExecStart", installed.venv, bind=bind)

    # The host's address as the operator writes it into the environment file, the port
    # taken as late as it can be (nginx binds it).
    https_port, http_port = free_port(), free_port()
    origin = f"https://{HOST}:{https_port}"
    env = {**env, "CSRF_TRUSTED_ORIGINS": origin, "PRICEFEED_PUBLIC_URL": origin}
    with Gunicorn(command, env, cwd) as server:
        nginx = Nginx(
            nginx_dir,
            site_config(
                https_port=https_port, http_port=http_port, upstream=server.port, cert=cert, key=key
            ),
        )
        try:
            nginx.start(https_port)
            # A client's own X-Forwarded-Proto changes nothing: nginx sets it.
            spoofed_http = get(https_port, "/admin/login/", {"X-Forwarded-Proto": "http"}, trusted)
            plain = get(http_port, "/admin/login/", {"X-Forwarded-Proto": "https"})
            with sync_playwright() as playwright:
                chromium = playwright.chromium.launch(
                    executable_path=browser, headless=True, args=CHROMIUM_ARGS
                )
                try:
                    context = chromium.new_context(ignore_https_errors=True)
                    page = context.new_page()
                    page.goto(f"{origin}/admin/login/")
                    page.fill("#id_username", "admin")
                    page.fill("#id_password", PASSWORD)
                    with page.expect_response(lambda r: r.request.method == "POST") as posted:
                        page.click("input[type=submit]")
                    page.wait_for_load_state()
                    login = posted.value
                    landed = page.url
                    dashboard = page.locator("body.dashboard").count()
                    user_tools = page.locator("#user-tools").inner_text()
                    cookies = {c["name"]: c for c in context.cookies()}
                finally:
                    chromium.close()
        finally:
            nginx.stop()

    # Over HTTPS the admin answers (a client's "http" would have been redirected by Django).
    assert spoofed_http[0] == 200, spoofed_http
    # Plain HTTP: nginx sends the browser to HTTPS, whatever header the client sends.
    assert plain[0] == 301, plain
    assert plain[1]["Location"].startswith(f"https://{HOST}"), plain[1]["Location"]
    # The login's POST passed CSRF (a failure answers 403) and redirected to the index.
    assert login.status == 302, (login.status, login.text())
    assert landed == f"{origin}/admin/", landed
    assert dashboard == 1
    assert "admin" in user_tools.lower()
    assert cookies["sessionid"]["secure"] and cookies["csrftoken"]["secure"]
    access_log = (nginx_dir / "access.log").read_text()
    assert '"POST /admin/login/ HTTP/1.1" 302' in access_log, access_log
    assert server.returncode == 0, server.log()[-3000:]
