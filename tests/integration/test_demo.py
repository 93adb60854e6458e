"""The README's demo command: sample mail arrives, is recorded and matched; admin answers."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.request

from devkit.servers import free_port

from .support import ROOT


def test_demo_records_and_matches_sample_mail_with_admin_reachable(tmp_path):
    port = free_port()
    env = {
        key: value
        for key, value in os.environ.items()
        if key != "DATABASE_URL" and not key.startswith("PRICEFEED_")
    }
    env |= {"PRICEFEED_VAR_DIR": str(tmp_path / "var"), "DEBUG": "1"}
    command = [sys.executable, "manage.py", "demo", "--count", "4", "--interval", "2.5"]
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
        returncode = demo.wait(30)
    output = "".join(lines)
    assert returncode == 0, output
    assert f"http://127.0.0.1:{port}/admin/" in output
    assert "login: demo / demo" in output
    assert "pricefeed" in login_page
    # Four e-mails: three match a config (one of them twice), one matches nothing.
    final = [line for line in lines if line.strip().startswith("messages:")][-1]
    assert re.search(r"done 3\b", final), output
    assert re.search(r"ignored 1\b", final), output
    assert re.search(r"price imports: 4\b", final), output
    sent = int(re.search(r"notifications sent: (\d+)", final).group(1))
    assert sent >= 1, output  # outcomes reach the SMTP sink through the outbox
    assert (tmp_path / "var" / "pricefeed.sqlite3").exists()
