"""docs/install.md's steps 1 to 5, read from the page and run in its order: a system user,
the installed package in a venv of its own, an empty database, the environment file
filled in, the commands of step 4 through the page's own ``pricefeed`` shell function
as that unprivileged user (before any service ran, so without the metrics directory),
then the services as the units run them and ``pricefeed_status``: 0 while they run,
8 once they are stopped with a mailbox set up (step 6), never a traceback.

What the test cannot do as the page says is done its way, named by the page's line
(every line must be known here, so a step added to the page fails the test until it is
run too): the checkout and ``pip install`` are the ``installed`` fixture's (or, when the
service user cannot run that interpreter, the same from the system's python3, as a
server has); the database comes from the test server; the units are started as
systemd would (``pricefeed-metrics`` making the directory, the others started after it
as the service user, with the environment file); ``createsuperuser`` takes its answers
from the environment (``--noinput``), as it has no terminal here."""

from __future__ import annotations

import pwd
import re
import secrets
import shlex
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from devkit.servers.dovecot import DovecotServer
from devkit.servers.processes import wait_until
from tests.requirements import require_dovecot

from .conftest import Installation, install_into
from .support import BASE_ENV, ROOT, Gunicorn, readable_directory, unit_command
from .test_install import HOST, METRICS_TOKEN
from .test_install_metrics import Daemon

pytestmark = pytest.mark.integration

INSTALL_DOC = ROOT / "docs" / "install.md"
SERVICE_USER = "pricefeed-walkthrough"
PASSWORD = secrets.token_urlsafe(16)
# The page's paths, and where this test puts each (under one directory every user may
# enter, as / is).
PATHS = {
    "/etc/pricefeed": "etc-pricefeed",
    "/var/lib/pricefeed": "var-lib-pricefeed",
    "/run/pricefeed/metrics": "run-pricefeed-metrics",
}
# Step 6, as the operator does it in the admin: a mailbox on the test's Dovecot and a
# config for it (run with `pricefeed shell -c`).
SETUP = """
from mailboxes.models import Mailbox
from pricefeed.models import PriceListConfig
mailbox = Mailbox.objects.create(
    name="prices", host={host!r}, port={port}, security="plain",
    username="pricefeed", password="secret",
)
PriceListConfig.objects.create(mailbox=mailbox, name="acme", sender_pattern="*@acme.test")
"""


def documented_commands() -> list[str]:
    """The shell lines of steps 1 to 5 of docs/install.md (its indented code blocks), in
    the page's order."""
    text = INSTALL_DOC.read_text()
    steps = text[text.index("**1. Install.**") : text.index("**6. In the admin**")]
    return [line[4:].strip() for line in steps.splitlines() if line.startswith("    ")]


def as_service_user(argv: list[str]) -> list[str]:
    """``argv`` run as the service user with its groups (as ``sudo -u``), exec'd in
    place, so that a signal to it reaches the program."""
    return ["setpriv", f"--reuid={SERVICE_USER}", f"--regid={SERVICE_USER}", "--init-groups", *argv]


def runs_as_service_user(python: Path) -> bool:
    result = subprocess.run(
        as_service_user([str(python), "-c", "import django"]), capture_output=True, timeout=60
    )
    return result.returncode == 0


@dataclass
class Host:
    """The test's server: its directories, the venv, and what the steps made."""

    root: Path
    installed: Installation
    database_url: str
    dovecot: DovecotServer
    function: str = ""  # the page's `pricefeed` shell function, on this host's paths
    results: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)
    services: list[Daemon] = field(default_factory=list)
    web: Gunicorn | None = None
    web_returncode: int | None = None

    def path(self, documented: str) -> Path:
        return self.root / PATHS[documented]

    def localize(self, line: str) -> str:
        """A line of the page on this host: its paths, its venv, its service user."""
        for documented, local in PATHS.items():
            line = line.replace(documented, str(self.root / local))
        line = line.replace("/opt/pricefeed/venv", str(self.installed.venv))
        line = line.replace("/opt/pricefeed/src", str(ROOT))
        line = line.replace("sudo -u pricefeed", shlex.join(as_service_user([])))
        return re.sub(r"(-[og]) pricefeed\b", rf"\1 {SERVICE_USER}", line)

    def shell(self, line: str, env: dict[str, str] | None = None, *, check: bool = True):
        result = subprocess.run(
            ["sh", "-c", f"{self.function}\n{line}"],
            env={**BASE_ENV, **(env or {})},
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if check:
            assert result.returncode == 0, f"{line}\n{result.stdout}\n{result.stderr}"
        return result

    @property
    def env_file(self) -> Path:
        return self.path("/etc/pricefeed") / "pricefeed.env"

    def fill_in_environment_file(self) -> None:
        """Every CHANGE-ME of the copied file given a value, and the settings this host
        needs (its address, the test's Dovecot), as the operator edits it."""
        values = {
            "DATABASE_URL": self.database_url,
            "SECRET_KEY": secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": HOST,
            "PRICEFEED_ENCRYPTION_KEYS": Fernet.generate_key().decode(),
            "EMAIL_URL": "smtp+tls://pricefeed%40example.com:unused@smtp.example.com:587",
            "CSRF_TRUSTED_ORIGINS": f"https://{HOST}",
            "PRICEFEED_PUBLIC_URL": f"https://{HOST}",
            "PRICEFEED_METRICS_TOKEN": METRICS_TOKEN,
            "PRICEFEED_IMAP_ALLOWED_NETWORKS": "127.0.0.0/8",
            "PRICEFEED_IMAP_ALLOW_PLAIN": "true",
        }
        text = self.localize(self.env_file.read_text())
        for name, value in values.items():
            text, found = re.subn(
                rf"(?m)^(# ?)?{name}=.*$", f"{name}={shlex.quote(value)}", text, count=1
            )
            assert found, f"deploy/pricefeed.env has no {name}"
        settings = [line for line in text.splitlines() if not line.startswith("#")]
        assert not [line for line in settings if "CHANGE-ME" in line], settings
        self.env_file.write_text(text)

    def unit(self, unit: str, key: str = "ExecStart", **kwargs) -> list[str]:
        """A unit's command as systemd runs it: as the service user, in its state
        directory, with the environment file."""
        argv = unit_command(unit, key, self.installed.venv, **kwargs)
        load = f'cd {self.path("/var/lib/pricefeed")} && set -a && . {self.env_file} && exec "$@"'
        return as_service_user(["sh", "-c", load, "sh", *argv])

    def start_services(self) -> None:
        """``systemctl enable --now pricefeed.target``: the metrics directory first
        (RuntimeDirectory= of pricefeed-metrics.service: the service user's, 0750), the
        web unit's check, then the four services."""
        metrics = self.path("/run/pricefeed/metrics")
        subprocess.run(
            ["install", "-d", "-o", SERVICE_USER, "-g", SERVICE_USER, "-m", "0750", str(metrics)],
            check=True,
        )
        check = subprocess.run(
            self.unit("pricefeed-web.service", "ExecStartPre"),
            env=BASE_ENV,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert check.returncode == 0, check.stdout + check.stderr
        log_dir = self.root / "logs"
        log_dir.mkdir(exist_ok=True)
        self.web = Gunicorn(
            lambda bind: self.unit("pricefeed-web.service", bind=bind), BASE_ENV, log_dir
        ).__enter__()
        for unit in ("listener", "workers", "outbox"):
            argv = self.unit(f"pricefeed-{unit}.service")
            self.services.append(Daemon(argv, BASE_ENV, log_dir, unit))

    def stop_services(self) -> None:
        """``systemctl stop pricefeed.target``: the services, then the directory."""
        for daemon in self.services:
            # django-q2 may deadlock in its SIGTERM handler (django-q2#346).
            daemon.stop(grace=0 if daemon.argv[-1] == "qcluster" else 30)
        if self.web is not None:
            self.web_returncode = self.web.stop()
        shutil.rmtree(self.path("/run/pricefeed/metrics"), ignore_errors=True)

    def logs(self) -> str:
        return "\n".join(d.log()[-3000:] for d in self.services)


def ensure_service_user(host: Host, line: str) -> None:
    """The page's useradd, once per machine (a second run finds the user there)."""
    if subprocess.run(["id", "-u", SERVICE_USER], capture_output=True).returncode == 0:
        return
    argv = shlex.split(host.localize(line))
    assert argv[-1] == "pricefeed", line
    subprocess.run([*argv[:-1], SERVICE_USER], check=True)


def service_venv(host: Host, tmp_root: Path) -> None:
    """The venv of step 1: the session's when the service user can run its interpreter;
    else the same install from the system's python3, as a server has (an interpreter
    under root's home is not the service user's to run)."""
    if not runs_as_service_user(host.installed.bin / "python"):
        host.installed = install_into(tmp_root, python="/usr/bin/python3")
    assert runs_as_service_user(host.installed.bin / "python")


def status(host: Host) -> subprocess.CompletedProcess[str]:
    return host.shell("pricefeed pricefeed_status", check=False)


def step_actions(host: Host, tmp_root: Path) -> list[tuple[str, Callable[[str], None]]]:
    """What the test does for each line of the page: (pattern of the line, action)."""

    def run_as_root(line: str) -> None:
        host.shell(host.localize(line))

    def copy_environment_file(line: str) -> None:
        run_as_root(line)
        host.fill_in_environment_file()

    def define_function(line: str) -> None:
        host.function = host.localize(line)

    def django_admin(line: str) -> None:
        command = shlex.split(line.partition("#")[0])[1]
        env = {}
        if command == "createsuperuser":
            line = line.partition("#")[0].rstrip()
            line += " --noinput --username admin --email admin@example.com"
            env = {"DJANGO_SUPERUSER_PASSWORD": PASSWORD}
        if command == "pricefeed_status":
            wait_until(
                lambda: status(host).returncode == 0,
                90,
                "pricefeed_status exits 0 with the services running",
                on_timeout=lambda: status(host).stdout + host.logs(),
            )
        host.results[command] = host.shell(line, env)

    def nothing(line: str) -> None:
        """Done by the fixtures (the checkout, the database), by start_services, or
        already there (packages)."""

    return [
        (r"(sudo )?apt(-get)? install .*", nothing),  # this machine has the packages
        (r"useradd --system .* pricefeed", lambda line: ensure_service_user(host, line)),
        (r"install -d .*", run_as_root),
        (r"git clone .*", nothing),  # the installed fixture copies the source tree
        (r"\S*python3(\.\d+)? -m venv /opt/pricefeed/venv", lambda _: service_venv(host, tmp_root)),
        (r"/opt/pricefeed/venv/bin/pip install /opt/pricefeed/src", nothing),
        (r"sudo -u postgres create(user|db) .*", nothing),  # the deploy_database fixture
        # The deploy database's role is the test server's superuser, which may set the
        # parameter already (tests/pricing/test_offers.py holds both cases).
        (r'sudo -u postgres psql -c "GRANT SET ON PARAMETER wal_compression TO \w+"', nothing),
        (r"install -m 0640 .*/pricefeed\.env /etc/pricefeed/pricefeed\.env", copy_environment_file),
        (r"pricefeed\(\) \{ .*", define_function),
        (r"pricefeed \w+.*", django_admin),
        (r"cp /opt/pricefeed/src/deploy/systemd/\* /etc/systemd/system/", nothing),
        (r"systemctl daemon-reload", nothing),
        (r"systemctl enable --now pricefeed\.target", lambda line: host.start_services()),
    ]


@pytest.fixture
def dovecot() -> Iterator[DovecotServer]:
    require_dovecot()
    server = DovecotServer()
    server.start()
    yield server
    server.cleanup()


def test_the_install_page_run_in_its_order_as_the_service_user_reaches_a_healthy_status(
    installed, deploy_database, dovecot
):
    with readable_directory("walkthrough") as root, readable_directory("venv") as venv_root:
        host = Host(root, installed, deploy_database, dovecot)
        actions = step_actions(host, venv_root)
        done = []
        try:
            for line in documented_commands():
                matching = [act for pattern, act in actions if re.fullmatch(pattern, line)]
                assert len(matching) == 1, f"docs/install.md: no single step for {line!r}"
                matching[0](line)
                done.append(line)
            # Step 6, as in the admin: a mailbox and its config; the listener takes it.
            setup = SETUP.format(host=dovecot.host, port=dovecot.port)
            host.shell(f"pricefeed shell -c {shlex.quote(setup)}")
            wait_until(
                lambda: status(host).returncode == 0,
                90,
                "the listener holds the new mailbox",
                on_timeout=lambda: status(host).stdout + host.logs(),
            )
        finally:
            host.stop_services()
        stopped = status(host)
        logs = host.logs()
        static = host.path("/var/lib/pricefeed") / "static" / "admin"
        static_owners = {path.stat().st_uid for path in static.rglob("*.css")}

    # Every step ran, in the page's order, the services last.
    assert done[-2:] == ["systemctl enable --now pricefeed.target", done[-1]]
    order = [shlex.split(line)[1] for line in done if line.startswith("pricefeed ")]
    assert order == ["migrate", "collectstatic", "createsuperuser", "check", "pricefeed_status"]
    assert host.results["check"].stdout.strip() == (
        "System check identified no issues (2 silenced)."
    )
    assert "Traceback" not in "".join(r.stderr for r in host.results.values())
    # The static files were collected where the page says, by the service user.
    assert static_owners == {pwd.getpwnam(SERVICE_USER).pw_uid}
    # Services down, directory gone: the status is read, and says nobody listens.
    assert stopped.returncode == 8, stopped.stdout + stopped.stderr
    assert "Traceback" not in stopped.stderr, stopped.stderr
    assert "prices" in stopped.stdout
    assert "Traceback" not in logs, logs
    assert host.web_returncode == 0, host.web.log()[-3000:] if host.web else ""
