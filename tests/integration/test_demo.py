"""The README's demo command: sample mail arrives, is recorded and matched; admin answers;
and the trouble an operator should see is there too. It runs as ./scripts/demo runs it,
with DATABASE_URL unset: on an embedded PostgreSQL in its var directory, started for it
and stopped after it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

import psycopg
import pytest

from devkit.servers import free_port
from devkit.servers.postgres import EmbeddedPostgres

from .support import ROOT


@pytest.fixture
def var_dir():
    """The demo's var directory, outside pytest's: pytest's temporary directories are
    private to their user, and under root the server runs as another one."""
    path = Path(tempfile.mkdtemp(prefix="pricefeed-demo-"))
    path.chmod(0o755)
    yield path / "var"
    shutil.rmtree(path, ignore_errors=True)


def test_demo_records_and_matches_sample_mail_with_admin_reachable(var_dir):
    port = free_port()
    env = {
        key: value
        for key, value in os.environ.items()
        if key != "DATABASE_URL" and not key.startswith("PRICEFEED_")
    }
    env |= {"PRICEFEED_VAR_DIR": str(var_dir), "DEBUG": "1"}
    # The first five e-mails of the demo's stream: a good CSV, an xlsx with bad rows, a
    # newsletter, a wrong file, a good xlsx with a zipped CSV.
    data = var_dir / "postgres"
    command = [
        *(sys.executable, "-m", "devkit.servers.postgres", str(data), "--"),
        *(sys.executable, "manage.py", "demo", "--count", "5", "--interval", "2.5"),
    ]
    lines = []
    login_page = ""
    with subprocess.Popen(
        [*command, "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as demo:
        for line in demo.stdout:
            lines.append(line)
            if "Ctrl-C stops everything" in line:
                url = f"http://127.0.0.1:{port}/admin/login/"
                with urllib.request.urlopen(url, timeout=5) as response:
                    login_page = response.read().decode()
        returncode = demo.wait(180)  # a liveness bound: --count waits for the work to end
    output = "".join(lines)
    assert returncode == 0, output
    assert f"http://127.0.0.1:{port}/admin/" in output
    assert "login: demo / demo" in output
    assert "pricefeed" in login_page
    # Five e-mails: four match a config (one of them twice), one matches nothing.
    final = [line for line in lines if line.strip().startswith("messages:")][-1]
    assert re.search(r"done 4\b", final), output
    assert re.search(r"ignored 1\b", final), output
    assert "still busy" not in output
    assert "embedded PostgreSQL in" in output
    # The server was stopped with the demo; started again, it has kept everything.
    server = EmbeddedPostgres(data)
    assert not server.running()
    server.start()
    try:
        with psycopg.connect(server.url) as db:

            def counts(sql: str) -> dict[str, int]:
                return dict(db.execute(sql).fetchall())

            messages = counts("SELECT status, count(*) FROM mailboxes_inboundmessage GROUP BY 1")
            imports = counts("SELECT status, count(*) FROM pricefeed_priceimport GROUP BY 1")
            notifications = counts(
                "SELECT status || (CASE WHEN attempts > 1 THEN ' retried' ELSE '' END), "
                "count(*) FROM notifications_notification GROUP BY 1"
            )
            reasons = [
                reason
                for (reason,) in db.execute(
                    "SELECT last_error FROM pricefeed_priceimport WHERE status = 'FAILED'"
                )
            ]
            # The bank's rates of today, from the demo's own XML_daily server.
            rates = counts(
                "SELECT currency, rate FROM pricing_rate r JOIN pricing_ratefetch f "
                "ON f.date = r.date AND f.status = 'done' WHERE r.source = 'cbr'"
            )
    finally:
        server.stop()
    assert messages == {"DONE": 4, "IGNORED": 1}, output
    # Trouble to show: a file that failed (with its reason), one with bad rows.
    assert imports == {"SUCCEEDED": 3, "PARTIAL": 1, "FAILED": 1}, output
    assert "no header row" in reasons[0], reasons
    assert {"USD", "EUR", "JPY", "CNY"} <= set(rates), output
    assert 0.4 < rates["JPY"] < 0.6, rates  # per one yen: the bank quotes a hundred
    # Every outcome reached the SMTP sink through the outbox, the first after the sink
    # refused it (451) and the outbox tried again.
    assert set(notifications) <= {"SENT", "SENT retried"}, (notifications, output)
    assert notifications.get("SENT retried", 0) >= 1, (notifications, output)
    mails = list((var_dir / "demo-mail" / "new").iterdir())
    # One mail per message and recipient (a message with two files is one digest).
    assert 0 < len(mails) <= sum(notifications.values()), output
