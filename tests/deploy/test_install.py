"""The production path of README's "Running it for real": `pip install .` (not editable)
into a fresh venv, the documented environment file and nothing else, DEBUG off;
django-admin and gunicorn as the units in deploy/systemd run them, from a directory
outside any source tree."""

from __future__ import annotations

import json
import re
import secrets
import subprocess

import pytest
from cryptography.fernet import Fernet

from .support import ROOT, Gunicorn, documented_environment, run, unit_command

pytestmark = pytest.mark.integration

HOST = "127.0.0.1"
# gunicorn listens on plain HTTP here, as behind the TLS proxy of the walk-through; the
# requests carry the header that proxy sets (SECURE_PROXY_SSL_HEADER of pricefeed.env).
VIA_PROXY = {"X-Forwarded-Proto": "https"}
METRICS_TOKEN = secrets.token_urlsafe(32)


def production_environment(tmp_path, database_url: str = "", **values: str) -> dict[str, str]:
    """deploy/pricefeed.env with fresh secrets, this host, a state directory and a
    metrics directory (in place of the one pricefeed-metrics.service holds)."""
    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir(exist_ok=True)
    defaults = {
        "SECRET_KEY": secrets.token_urlsafe(50),
        "PRICEFEED_ENCRYPTION_KEYS": Fernet.generate_key().decode(),
        "ALLOWED_HOSTS": HOST,
        "CSRF_TRUSTED_ORIGINS": f"https://{HOST}",
        "PRICEFEED_PUBLIC_URL": f"https://{HOST}",
        "PRICEFEED_METRICS_TOKEN": METRICS_TOKEN,
        "PRICEFEED_VAR_DIR": str(tmp_path / "var"),
        # Nothing here connects to it unless a test gives one of its own.
        "DATABASE_URL": database_url or "postgres://pricefeed:unused@127.0.0.1:1/pricefeed",
        "EMAIL_URL": "smtp+tls://pricefeed%40example.com:unused@smtp.example.com:587",
        "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir),
    }
    return documented_environment(**{**defaults, **values})


def python_in(installed, code: str, env, cwd):
    return run([str(installed.bin / "python"), "-c", code], env, cwd)


def test_installed_package_serves_the_styled_admin_under_gunicorn_with_debug_off(
    installed, deploy_database, tmp_path
):
    env = production_environment(tmp_path, deploy_database)
    assert "DEBUG" not in env  # off by default
    cwd = tmp_path / "run"
    cwd.mkdir()
    django_admin = str(installed.bin / "django-admin")
    located = python_in(installed, "import config; print(config.__file__)", env, cwd)
    assert located.stdout.startswith(str(installed.venv)), located.stdout

    run([django_admin, "migrate", "--noinput"], env, cwd)
    run([django_admin, "collectstatic", "--noinput"], env, cwd)

    def command(bind: str) -> list[str]:
        return unit_command("pricefeed-web.service", "ExecStart", installed.venv, bind=bind)

    with Gunicorn(command, env, cwd) as server:
        plain = server.get("/admin/login/")
        login = server.get("/admin/login/", {**VIA_PROXY, "Accept-Language": "en"})
        # The catalogues compiled by the wheel build: Russian by default and when asked.
        russian = server.get("/admin/login/", {**VIA_PROXY, "Accept-Language": "ru"})
        default = server.get("/admin/login/", VIA_PROXY)
        stylesheets = re.findall(r'<link rel="stylesheet" href="([^"]+)"', login.text)
        sheets = {href: server.get(href, VIA_PROXY) for href in stylesheets}
    # Plain HTTP is sent to HTTPS; through the proxy the page comes, HTTPS-only.
    assert plain.status == 301
    assert plain.headers["Location"] == f"https://{server.url.removeprefix('http://')}/admin/login/"
    assert login.status == 200, login.text
    assert "Log in" in login.text
    assert "Username" in login.text
    assert 'lang="en"' in login.text
    for page in (russian, default):
        assert page.status == 200, page.text
        assert "Имя пользователя" in page.text and "Войти" in page.text, page.text[:3000]
        assert ">Язык</label>" in page.text  # the project's own catalogue (the switcher)
        assert 'lang="ru"' in page.text
    assert login.headers["Strict-Transport-Security"] == "max-age=3600"
    assert "; Secure" in login.headers["Set-Cookie"]
    # The admin's stylesheets, under the hashed names of the manifest, served.
    base = [href for href in stylesheets if "/admin/css/base." in href]
    assert base and re.fullmatch(r"/static/admin/css/base\.[0-9a-f]{12}\.css", base[0]), stylesheets
    for href, sheet in sheets.items():
        assert sheet.status == 200, href
        assert sheet.headers["Content-Type"].startswith("text/css"), href
        assert sheet.body, href
    assert b"body" in sheets[base[0]].body
    assert server.returncode == 0, server.log()[-3000:]


def test_installed_package_carries_every_catalogue_compiled(installed, tmp_path):
    # The .mo files are not committed: the wheel build compiled each app's and the
    # project's (config/locale). Every app names itself in Russian from its own catalogue.
    env = production_environment(tmp_path)
    cwd = tmp_path / "run"
    cwd.mkdir()
    code = (
        "import json, django; django.setup()\n"
        "from django.apps import apps\n"
        "from django.utils import translation\n"
        "names = {}\n"
        "for language in ('ru', 'en'):\n"
        "    with translation.override(language):\n"
        "        names[language] = {a.label: str(a.verbose_name) for a in apps.get_app_configs()}\n"
        "print(json.dumps(names))"
    )
    names = json.loads(python_in(installed, code, env, cwd).stdout)
    ours = ["access", "fleet", "monitoring", "mailboxes", "outbox", "pricefeed", "notifications"]
    ours.append("console")
    for label in ours:
        assert re.search("[а-яё]", names["ru"][label], re.IGNORECASE), (label, names["ru"])
        assert names["ru"][label] != names["en"][label], label
    assert names["ru"]["fleet"] == "Процессы и их брокер"


def test_installed_package_answers_probes_and_metrics_over_plain_http_on_any_host(
    installed, deploy_database, tmp_path
):
    env = production_environment(tmp_path, deploy_database)
    cwd = tmp_path / "run"
    cwd.mkdir()
    django_admin = str(installed.bin / "django-admin")
    # As kubelet probes: plain HTTP, the pod's address as Host (not in ALLOWED_HOSTS).
    pod = {"Host": "10.42.0.17:8000"}
    # The static files are part of the image (the error pages use the admin's stylesheet).
    run([django_admin, "collectstatic", "--noinput"], env, cwd)

    def command(bind: str) -> list[str]:
        return unit_command("pricefeed-web.service", "ExecStart", installed.venv, bind=bind)

    with Gunicorn(command, env, cwd) as server:
        before_migrate = server.get("/readyz", pod)
        run([django_admin, "migrate", "--noinput"], env, cwd)
        healthz = server.get("/healthz", pod)
        readyz = server.get("/readyz", pod)
        admin = server.get("/admin/login/", pod)
        # As Prometheus scrapes: the same, with the token.
        scraped = server.get("/metrics", {**pod, "Authorization": f"Bearer {METRICS_TOKEN}"})
        tokenless = server.get("/metrics", pod)
    status = run([django_admin, "pricefeed_status", "--json"], env, cwd)

    assert before_migrate.status == 503, before_migrate.text
    assert json.loads(before_migrate.body)["failed"] == ["migrations"]
    assert (healthz.status, healthz.text) == (200, "ok\n")
    assert "no-store" in healthz.headers["Cache-Control"]
    assert readyz.status == 200, readyz.text
    assert json.loads(readyz.body) == {
        "status": "ok",
        "checks": {"database": "ok", "migrations": "ok", "broker": "ok"},
    }
    assert readyz.headers["Set-Cookie"] is None
    # Anything else from that host is refused (DisallowedHost).
    assert admin.status == 400
    assert scraped.status == 200, scraped.text
    assert "pricefeed_state_up 1.0" in scraped.text
    assert 'pricefeed_messages{status="RECEIVED"} 0.0' in scraped.text
    assert "pricefeed_import_rows_stored_total 0.0" in scraped.text
    assert tokenless.status == 401
    assert "pricefeed_" not in tokenless.text
    report = json.loads(status.stdout)
    assert (report["exit_code"], report["problems"], report["instances"]) == (0, [], [])
    assert report["messages"]["by_status"]["RECEIVED"] == 0
    assert server.returncode == 0, server.log()[-3000:]


def test_installed_package_has_every_template_of_the_source_tree(installed, tmp_path):
    names = sorted(
        str(path.relative_to(templates))
        for templates in [ROOT / "templates", *ROOT.glob("*/templates")]
        if templates.parts[-2] not in {"devkit", "tests"}
        for path in templates.rglob("*")
        if path.is_file()
    )
    assert names  # the notification mails at least
    env = production_environment(tmp_path)
    code = (
        "import sys, django; django.setup()\n"
        "from django.template.loader import get_template\n"
        "for name in sys.argv[1:]: get_template(name)\n"
    )
    cwd = tmp_path
    run([str(installed.bin / "python"), "-c", code, *names], env, cwd)


def test_check_deploy_with_the_documented_environment_prints_no_warning(installed, tmp_path):
    env = production_environment(tmp_path)
    check = unit_command("pricefeed-web.service", "ExecStartPre", installed.venv)

    result = run(check, env, tmp_path)

    assert "check --deploy" in " ".join(check)
    assert result.stdout.strip() == "System check identified no issues (2 silenced).", (
        result.stdout + result.stderr
    )
    assert result.stderr == ""


def test_check_deploy_without_encryption_keys_fails_saying_how_to_make_one(installed, tmp_path):
    env = production_environment(tmp_path)
    del env["PRICEFEED_ENCRYPTION_KEYS"]
    check = unit_command("pricefeed-web.service", "ExecStartPre", installed.venv)

    result = subprocess.run(
        check, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )

    assert result.returncode == 1, result.stdout + result.stderr
    assert "(core.E001) PRICEFEED_ENCRYPTION_KEYS is not set" in result.stderr
    assert "Fernet.generate_key()" in result.stderr
