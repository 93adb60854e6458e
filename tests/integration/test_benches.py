"""The benchmarks of issue 16 run on a clean checkout: each ``--quick`` pass ends well,
prints one ``BAR`` line per target, and leaves no database behind.

Whether a BAR is met is not asserted: the figures depend on the machine and its load,
and the suite holds no timing threshold. That each target is reported, and that the run
tidies up, does not depend on either.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from contextlib import closing

import psycopg
import pytest
from django.db import connection

from tests.requirements import require_rabbitmq

from .support import ROOT, database_url

pytestmark = pytest.mark.integration

BARS = {
    "parse": ["xlsx_import_seconds", "xlsx_vs_calamine", "xlsx_peak_rss", "csv_import_vs_copy"],
    "ingest": ["ingest_latency_p50", "ingest_latency_p99", "ingest_burst_rate"],
    "matching": ["matching_lines_per_second"],
    "products_load": ["products_load_rate", "products_reload_rate"],
    "outbox": [
        "outbox_drain_vs_raw",
        "outbox_drain_vs_procrastinate",
        "notifications_vs_smtplib",
        "notifications_vs_post_office",
        "claim_p99_10k_sent",
        "claim_p99_1m_sent",
        "claim_p99_flat",
    ],
    # The three bars, as its docs run them: bench/offers.py runs bench/feeds.py
    # and bench/delivery.py after its own.
    "offers": [
        "offers_recompute",
        "feeds_yml_rate",
        "feeds_yml_peak_rss",
        "delivery_webhook_vs_raw",
        "delivery_amqp_vs_raw",
    ],
}
BAR_LINE = re.compile(r"^BAR (\w+) (met|missed) (.+)$", re.MULTILINE)


def _server() -> psycopg.Connection:
    url = database_url().replace("postgres://", "postgresql://", 1)
    return psycopg.connect(url, autocommit=True)


def _databases() -> set[str]:
    with closing(_server()) as c:
        return {name for (name,) in c.execute("SELECT datname FROM pg_database")}


@pytest.mark.parametrize("bench", sorted(BARS))
@pytest.mark.timeout(660)  # beyond the bench's own bound below
def test_a_quick_pass_reports_every_target_and_leaves_no_database(bench, transactional_db):
    if bench == "offers":  # (bench/delivery.py)
        require_rabbitmq()
    if bench == "outbox":
        for peer in ("procrastinate", "post_office"):
            assert importlib.util.find_spec(peer), (
                f"bench/outbox.py measures against {peer}: install the [bench] extra "
                "(pip install -e '.[bench]'; ./scripts/test does)"
            )
    before = _databases()
    # The bench makes its database next to the one DATABASE_URL names: here the test
    # database, so that its name (<test database>_bench_<bench>) is this run's own.
    env = {
        key: value
        for key, value in os.environ.items()
        if key != "DJANGO_SETTINGS_MODULE" and not key.startswith("PRICEFEED_")
    }
    env |= {"DATABASE_URL": database_url(), "PYTHONUNBUFFERED": "1"}
    prefix = f"{connection.settings_dict['NAME']}_bench_"
    own = prefix + bench
    try:
        done = subprocess.run(
            [sys.executable, f"bench/{bench}.py", "--quick"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,  # a liveness bound; --quick takes about two minutes
        )
        after = _databases()
    finally:
        # Whatever the bench did, the server is left as it was found (the benches it
        # runs in turn make theirs beside it).
        made = {name for name in _databases() - before if name.startswith(prefix)}
        with closing(_server()) as c:
            for name in made | {own}:
                c.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    reported = BAR_LINE.findall(done.stdout)
    assert [name for name, _, _ in reported] == BARS[bench], output[-4000:]
    # --quick says so on each line: its sizes make the figures indicative only.
    assert all(figure.endswith("(quick)") for _, _, figure in reported), done.stdout
    assert own not in after
    # This run's databases only: other work on a shared server makes and drops its own.
    ours = connection.settings_dict["NAME"] + "_"
    left = {name for name in after - before if name.startswith(ours)}
    assert not left, f"left behind: {sorted(left)}"
