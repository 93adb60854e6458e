"""``manage.py demo``: the whole pipeline on one machine, with sample mail flowing in.

The sample mail (devkit.samples.demo_stream) brings trouble as well as good price lists:
a file that fails, one with bad rows (PARTIAL), a message no config matches; and the SMTP
sink refuses the first few notification mails with a temporary error, which the outbox
retries. The admin thus has something to show from the first minute."""

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

from devkit.samples import DEMO_CONFIGS, DEMO_KINDS, demo_stream
from devkit.servers import LOOPBACK_IMAP_ENV, ImapAppender, free_port
from devkit.servers.cbr import CbrServer, demo_day
from devkit.servers.cbr import start as start_bank
from devkit.servers.pymap import PymapServer
from mailboxes.models import IN_FLIGHT, InboundMessage, Mailbox
from notifications.models import Notification, Subscription
from outbox.models import EventStatus, OutboxEvent
from pricefeed.models import PriceImport, PriceListConfig
from pricing.models import Rate, RateFetch
from pricing.services import bank_today

ROOT = Path(settings.BASE_DIR)

# With --count: how long the demo waits, after its last e-mail, for the work to end.
SETTLE_SECONDS = 120.0


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
            help="Stop after this many e-mails, once they are worked off (0: run until Ctrl-C).",
        )
        parser.add_argument(
            "--smtp-refusals",
            type=int,
            default=3,
            help="Notification mails the SMTP sink refuses first with a temporary error "
            "(451), so that the outbox retries them (0: none).",
        )

    def handle(self, *args, port: int, interval: float, count: int, smtp_refusals: int, **options):
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
        servers: list = []
        try:
            # The mail that went out, one file each; the first --smtp-refusals are refused.
            sent_mail = Path(settings.VAR_DIR) / "demo-mail"
            children.append(
                self._spawn(
                    [
                        sys.executable,
                        "-m",
                        "devkit.servers.smtp",
                        "--port",
                        str(smtp_port),
                        "--maildir",
                        str(sent_mail),
                        "--fail-first",
                        str(max(0, smtp_refusals)),
                        "--code",
                        "451",
                    ],
                    logs / "smtp-sink.log",
                )
            )
            self._demo_mailbox(imap.port, password)
            # The bank's daily rates, made up and served on loopback (plain HTTP allowed
            # for these processes only; production fetches cbr.ru over verified TLS).
            bank = CbrServer(every_day=demo_day)
            bank_server = start_bank(bank)
            servers.append(bank_server)
            env = {
                # pymap listens on 127.0.0.1 without TLS: allowed for these processes only.
                **LOOPBACK_IMAP_ENV,
                "EMAIL_URL": f"smtp://127.0.0.1:{smtp_port}",
                "ADMINS": "Operator <ops@localhost>",
                "PRICEFEED_SWEEP_INTERVAL": "5",
                # A refused notification is tried again within seconds, not minutes.
                "PRICEFEED_OUTBOX_RETRY_BASE": "2",
                "PRICEFEED_OUTBOX_RETRY_MAX": "10",
                "PRICEFEED_RATES_URL": bank.url,
                "PRICEFEED_RATES_ALLOW_PLAIN": "true",
                # Webhooks and RabbitMQ targets an operator adds on loopback.
                "PRICEFEED_DELIVERY_ALLOW_PLAIN": "true",
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
                    f"  Look at: Inbound messages, Price imports, Notifications, Mailboxes.\n"
                    f"  Trouble: every {DEMO_KINDS} e-mails a file fails, one has bad rows "
                    f"(partial), one matches no config;\n"
                    f"           the SMTP sink refuses the first {max(0, smtp_refusals)} "
                    f"mails (451), the outbox retries them.\n"
                    f"  IMAP:    127.0.0.1:{imap.port} (pymap), SMTP sink 127.0.0.1:{smtp_port}\n"
                    f"  Rates:   {bank.url} (the bank's XML_daily, made up)\n"
                    f"  Mail:    {sent_mail / 'new'} (what the sink accepted)\n"
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
            for server in servers:
                server.shutdown()
                server.server_close()

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
        before = InboundMessage.objects.count()
        with ImapAppender(imap.host, imap.port, "prices", password) as appender:
            for n, (description, raw) in enumerate(demo_stream(), start=1):
                appender.append(raw)
                self.stdout.write(f"→ e-mail {n}: {description}")
                if stop.wait(interval):
                    break
                self._summary()
                if count and n >= count:
                    if not stop.is_set():
                        self._settle(before + n, stop)
                        self._summary()
                    break

    def _settle(self, messages: int, stop: threading.Event) -> None:
        """Waits until ``messages`` messages are recorded and nothing is left to do: no
        message, import, notification or outbox event waiting or running (refused mail
        included: it is retried within seconds here), and today's rates received; at most
        SETTLE_SECONDS, or until the demo is stopped."""
        deadline = time.monotonic() + SETTLE_SECONDS
        while time.monotonic() < deadline:
            busy = (
                InboundMessage.objects.count() < messages
                or InboundMessage.objects.filter(
                    status__in=[*IN_FLIGHT, InboundMessage.Status.RETRYABLE]
                ).exists()
                or PriceImport.objects.filter(
                    status__in=[PriceImport.Status.PENDING, PriceImport.Status.RUNNING]
                ).exists()
                or Notification.objects.filter(status=Notification.Status.PENDING).exists()
                or OutboxEvent.objects.filter(
                    status__in=[EventStatus.NEW, EventStatus.PROCESSING]
                ).exists()
                or not RateFetch.objects.filter(
                    date=bank_today(), status=RateFetch.Status.DONE
                ).exists()
            )
            if not busy or stop.wait(0.5):
                return
        self.stdout.write(f"   still busy after {SETTLE_SECONDS:.0f} s; stopping anyway")

    def _summary(self) -> None:
        def counts(model) -> str:
            by_status = dict(model.objects.values_list("status").annotate(n=Count("pk")).order_by())
            return ", ".join(f"{k.lower()} {v}" for k, v in sorted(by_status.items()))

        retried = Notification.objects.filter(
            status=Notification.Status.SENT, attempts__gt=1
        ).count()
        self.stdout.write(
            f"   messages: {counts(InboundMessage) or 'none yet'}; "
            f"price imports: {counts(PriceImport) or 'none yet'}; "
            f"notifications: {counts(Notification) or 'none yet'} "
            f"({retried} sent after a refusal); "
            f"rates of the bank: {Rate.objects.filter(source=Rate.Source.CBR).count()}"
        )
