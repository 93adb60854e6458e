"""``manage.py demo``: the whole pipeline on one machine, with sample mail flowing in."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db.models import Count

from devkit.samples import DEMO_CONFIGS, demo_stream
from devkit.servers import LOOPBACK_IMAP_ENV, ImapAppender, free_port
from devkit.servers.pymap import PymapServer
from mailboxes.models import InboundMessage, Mailbox
from notifications.models import Notification, Subscription
from pricefeed.models import PriceImport, PriceListConfig

ROOT = Path(settings.BASE_DIR)


class Command(BaseCommand):
    help = (
        "Runs pricefeed end to end on this machine: an embedded IMAP server (pymap) with a "
        "demo mailbox, an SMTP sink, listen_mail, the django-q2 workers, dispatch_outbox and "
        "the admin, while sample price-list e-mails arrive and notifications go out."
    )

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=8000, help="Admin port (127.0.0.1).")
        parser.add_argument(
            "--interval", type=float, default=4.0, help="Seconds between sample e-mails."
        )
        parser.add_argument(
            "--count",
            type=int,
            default=0,
            help="Stop after this many e-mails (0: run until Ctrl-C).",
        )

    def handle(self, *args, port: int, interval: float, count: int, **options):
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        logs = Path(settings.VAR_DIR) / "demo-logs"
        logs.mkdir(parents=True, exist_ok=True)

        call_command("migrate", verbosity=0)
        self._demo_user()
        password = secrets.token_urlsafe(12)
        imap = PymapServer(user="prices", password=password)
        imap.start()
        smtp_port = free_port()
        children: list[subprocess.Popen] = []
        try:
            children.append(
                self._spawn(
                    [sys.executable, "-m", "aiosmtpd", "-n", "-l", f"127.0.0.1:{smtp_port}"],
                    logs / "smtp-sink.log",
                )
            )
            self._demo_mailbox(imap.port, password)
            env = {
                # pymap listens on 127.0.0.1 without TLS: allowed for these processes only.
                **LOOPBACK_IMAP_ENV,
                "EMAIL_URL": f"smtp://127.0.0.1:{smtp_port}",
                "ADMINS": "Operator <ops@localhost>",
                "PRICEFEED_SWEEP_INTERVAL": "5",
            }
            manage = [sys.executable, str(ROOT / "manage.py")]
            children.append(self._spawn([*manage, "listen_mail"], logs / "listen_mail.log", env))
            children.append(self._spawn([*manage, "qcluster"], logs / "qcluster.log", env))
            children.append(
                self._spawn([*manage, "dispatch_outbox"], logs / "dispatch_outbox.log", env)
            )
            children.append(
                self._spawn(
                    [*manage, "runserver", f"127.0.0.1:{port}", "--noreload", "--insecure"],
                    logs / "admin.log",
                    env,
                )
            )
            self._wait_for_admin(port, children, logs)
            for child in children:
                if child.poll() is not None:
                    raise CommandError(f"{child.args[2:4]} exited early; see {logs}")
            self.stdout.write(
                self.style.SUCCESS(
                    f"\npricefeed demo is running.\n"
                    f"  Admin:   http://127.0.0.1:{port}/admin/   (login: demo / demo)\n"
                    f"  Look at: Inbound messages, Price imports, Mailboxes (who listens).\n"
                    f"  IMAP:    127.0.0.1:{imap.port} (pymap), SMTP sink 127.0.0.1:{smtp_port}\n"
                    f"  Logs:    {logs}\n"
                    f"  Ctrl-C stops everything.\n"
                )
            )
            self._feed(imap, password, interval, count, stop)
        except KeyboardInterrupt:
            pass
        finally:
            self.stdout.write("stopping ...")
            for child in children:
                if child.poll() is None:
                    child.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 8
            for child in children:
                try:
                    child.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    os.killpg(child.pid, signal.SIGKILL)  # django-q2#346: SIGTERM can hang
            imap.cleanup()

    def _wait_for_admin(self, port: int, children, logs: Path) -> None:
        import urllib.request

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/admin/login/", timeout=2)
                return
            except OSError:
                if any(child.poll() is not None for child in children):
                    break
                time.sleep(0.2)
        raise CommandError(f"the admin did not come up on port {port}; see {logs}")

    def _spawn(self, args, log: Path, env: dict | None = None) -> subprocess.Popen:
        with open(log, "ab") as out:
            return subprocess.Popen(
                args,
                cwd=ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(env or {})},
                start_new_session=True,
            )

    def _demo_user(self) -> None:
        user_model = get_user_model()
        if not user_model.objects.filter(username="demo").exists():
            # Demo only: bound to 127.0.0.1, never a production account.
            user_model.objects.create_superuser("demo", "demo@localhost", "demo")

    def _demo_mailbox(self, port: int, password: str) -> None:
        mailbox, _ = Mailbox.objects.update_or_create(
            name="demo",
            defaults={
                "host": "127.0.0.1",
                "port": port,
                "security": Mailbox.Security.PLAIN,
                "username": "prices",
                "password": password,
                "enabled": True,
            },
        )
        for config in DEMO_CONFIGS:
            PriceListConfig.objects.update_or_create(
                mailbox=mailbox, name=config["name"], defaults=config
            )
        # Every outcome to the operator; the sink at EMAIL_URL receives them.
        Subscription.objects.get_or_create(email="buyer@localhost")

    def _feed(self, imap, password, interval, count, stop) -> None:
        with ImapAppender(imap.host, imap.port, "prices", password) as appender:
            for n, (description, raw) in enumerate(demo_stream(), start=1):
                appender.append(raw)
                self.stdout.write(f"→ e-mail {n}: {description}")
                if stop.wait(interval):
                    break
                self._summary()
                if count and n >= count:
                    stop.wait(interval)
                    self._summary()
                    break

    def _summary(self) -> None:
        statuses = dict(
            InboundMessage.objects.values_list("status").annotate(n=Count("id")).order_by()
        )
        imports = PriceImport.objects.count()
        sent = Notification.objects.filter(status=Notification.Status.SENT).count()
        line = ", ".join(f"{k.lower()} {v}" for k, v in sorted(statuses.items()))
        self.stdout.write(
            f"   messages: {line or 'none yet'}; price imports: {imports}; "
            f"notifications sent: {sent}"
        )
