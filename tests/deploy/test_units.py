"""deploy/: the systemd units, the environment file and the Procfile say what the code
does (commands that exist, stop timeouts above the grace the code takes, every variable
read by the settings and listed in .env.example)."""

from __future__ import annotations

import re
import shlex

import pytest
from django.conf import settings
from django.core.management import get_commands

from .support import ENV_FILE, ROOT, UNIT_VENV, UNITS, unit_setting

SERVICES = sorted(path.name for path in UNITS.glob("*.service"))
# The services that run pricefeed (the others hold something for them and exit).
RUNNING = [unit for unit in SERVICES if "Type=oneshot" not in (UNITS / unit).read_text()]
DJANGO_ADMIN = f"{UNIT_VENV}/bin/django-admin"
METRICS_DIR = "/run/pricefeed/metrics"
# Read from the environment by a library, not by config/settings.py.
READ_BY_LIBRARIES = {"DJANGO_SETTINGS_MODULE", "PROMETHEUS_MULTIPROC_DIR"}


def test_there_is_a_unit_for_the_web_server_and_each_long_running_command():
    commands = {tuple(shlex.split(unit_setting(unit, "ExecStart"))[:2]) for unit in RUNNING}

    assert commands == {
        (f"{UNIT_VENV}/bin/gunicorn", "config.wsgi"),
        (DJANGO_ADMIN, "listen_mail"),
        (DJANGO_ADMIN, "qcluster"),
        (DJANGO_ADMIN, "dispatch_outbox"),
    }
    for program, command in commands:
        if program == DJANGO_ADMIN:
            assert command in get_commands()


@pytest.mark.parametrize("unit", SERVICES)
def test_each_unit_runs_unprivileged_from_the_environment_file_and_hardened(unit):
    assert unit_setting(unit, "User") == "pricefeed"
    assert unit_setting(unit, "EnvironmentFile") == "/etc/pricefeed/pricefeed.env"
    assert unit_setting(unit, "NoNewPrivileges") == "yes"
    assert unit_setting(unit, "ProtectSystem") == "strict"
    assert unit_setting(unit, "CapabilityBoundingSet") == ""
    # SIGTERM to the main process, then SIGKILL to every process of the unit.
    assert unit_setting(unit, "KillMode") == "mixed"


def test_the_workers_get_time_to_finish_a_task_and_then_all_of_them_are_killed():
    # django-q2 may deadlock in its SIGTERM handler (django-q2#346): the unit's kill
    # must reach every process of its cgroup, after a task's longest run.
    assert unit_setting("pricefeed-workers.service", "KillMode") == "mixed"
    stop = int(unit_setting("pricefeed-workers.service", "TimeoutStopSec"))
    assert stop > settings.Q_CLUSTER["timeout"]


def test_the_listener_gets_its_shutdown_grace_before_it_is_killed():
    stop = int(unit_setting("pricefeed-listener.service", "TimeoutStopSec"))
    assert stop > settings.PRICEFEED_SHUTDOWN_GRACE + 5


def test_the_web_unit_refuses_to_start_on_a_failing_deploy_check():
    assert unit_setting("pricefeed-web.service", "ExecStartPre") == f"{DJANGO_ADMIN} check --deploy"


def test_every_variable_of_the_environment_file_is_read_and_listed_in_env_example():
    names = re.findall(r"(?m)^([A-Z_]+)=", ENV_FILE.read_text())
    read = (ROOT / "config" / "settings.py").read_text()
    listed = re.findall(r"(?m)^#? ?([A-Z_]+)=", (ROOT / ".env.example").read_text())

    assert "DJANGO_SETTINGS_MODULE" in names
    for name in set(names) - READ_BY_LIBRARIES:
        assert f'"{name}"' in read, name
    for name in set(names) - {"DJANGO_SETTINGS_MODULE"}:
        assert name in listed, name


def test_every_process_writes_its_metrics_to_one_directory_emptied_with_the_target():
    # The environment file points prometheus_client at it ...
    names = dict(re.findall(r"(?m)^([A-Z_]+)=(.*)$", ENV_FILE.read_text()))
    assert names["PROMETHEUS_MULTIPROC_DIR"] == METRICS_DIR
    # ... a oneshot unit of the target holds it (made empty at its start, removed at its
    # stop) ...
    holder = "pricefeed-metrics.service"
    assert unit_setting(holder, "Type") == "oneshot"
    assert unit_setting(holder, "RemainAfterExit") == "yes"
    assert unit_setting(holder, "RuntimeDirectory") == METRICS_DIR.removeprefix("/run/")
    assert unit_setting(holder, "PartOf") == "pricefeed.target"
    assert holder in unit_setting("pricefeed.target", "Wants").split()
    # ... and every running unit needs it, starts after it and may write to it.
    for unit in RUNNING:
        assert unit_setting(unit, "Requires") == holder, unit
        assert unit_setting(unit, "After") == holder, unit
        assert unit_setting(unit, "ReadWritePaths") == METRICS_DIR, unit


def test_the_procfile_runs_the_same_four_processes():
    processes = dict(
        line.split(":", 1) for line in (ROOT / "Procfile").read_text().splitlines() if line
    )

    commands = sorted(" ".join(shlex.split(command)[:2]) for command in processes.values())
    assert commands == [
        "gunicorn config.wsgi",
        "python manage.py",
        "python manage.py",
        "python manage.py",
    ]
    managed = sorted(shlex.split(c)[2] for c in processes.values() if "manage.py" in c)
    assert managed == ["dispatch_outbox", "listen_mail", "qcluster"]


def test_the_proxy_examples_serve_the_host_of_the_environment_file_and_set_the_proto():
    names = dict(re.findall(r"(?m)^([A-Z_]+)=(.*)$", ENV_FILE.read_text()))
    host = names["ALLOWED_HOSTS"]
    nginx = (ROOT / "deploy" / "nginx.conf").read_text()
    caddy = (ROOT / "deploy" / "Caddyfile").read_text()

    # One host everywhere: what Django allows, trusts for CSRF and links mails to.
    assert names["CSRF_TRUSTED_ORIGINS"] == names["PRICEFEED_PUBLIC_URL"] == f"https://{host}"
    assert re.findall(r"(?m)^\s*server_name (\S+);", nginx) == [host, host]
    assert re.search(rf"(?m)^{re.escape(host)} {{$", caddy)
    # The header Django believes (SECURE_PROXY_SSL_HEADER) is set by the proxy, never
    # copied from the client's request.
    assert names["SECURE_PROXY_SSL_HEADER"] == "HTTP_X_FORWARDED_PROTO,https"
    assert re.findall(r"(?m)^\s*proxy_set_header X-Forwarded-Proto (\S+);", nginx) == ["https"]
    assert re.findall(r"(?m)^\s*header_up X-Forwarded-Proto (\S+)$", caddy) == ["https"]
    # Both pass requests to the web unit's address, with the Host the browser sent.
    assert "proxy_pass http://127.0.0.1:8000;" in nginx
    assert "reverse_proxy 127.0.0.1:8000" in caddy
    assert "--bind 127.0.0.1:8000" in unit_setting("pricefeed-web.service", "ExecStart")
    assert re.search(r"(?m)^\s*proxy_set_header Host \$http_host;", nginx)


def test_the_nginx_example_takes_an_upload_as_large_as_a_file_may_be():
    """The preview's upload (PRICEFEED_PARSE_MAX_FILE_BYTES at most) reaches the admin,
    which says why a larger one is not read, instead of nginx's 413 (1 MiB by default)."""
    from django.conf import settings

    nginx = (ROOT / "deploy" / "nginx.conf").read_text()
    (megabytes,) = re.findall(r"(?m)^\s*client_max_body_size (\d+)m;", nginx)
    assert int(megabytes) * 2**20 > settings.PRICEFEED_PARSE_MAX_FILE_BYTES
