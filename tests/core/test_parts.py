"""core.parts with processes: part 0 in the caller, the others in forked children, each
a transaction on a connection of its own; the caller's own session survives them, a
part's failure comes back as itself once the others have ended."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.db import connection

from core.parts import shares, side_by_side

pytestmark = pytest.mark.django_db(transaction=True)

BUCKETS = 8


def _table() -> None:
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE IF NOT EXISTS parts_done (bucket int PRIMARY KEY)")
        cursor.execute("TRUNCATE parts_done")


def _done() -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT bucket FROM parts_done ORDER BY bucket")
        return [row[0] for row in cursor.fetchall()]


def _backend() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def _record(share: list[int]) -> tuple[int, int, bool, list[int]]:
    with connection.cursor() as cursor:
        cursor.executemany("INSERT INTO parts_done VALUES (%s)", [(b,) for b in share])
    return os.getpid(), _backend(), connection.in_atomic_block, share


@pytest.fixture
def table():
    _table()
    yield
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE parts_done")


def test_each_part_runs_in_a_process_and_transaction_of_its_own(table):
    caller = _backend()
    results = side_by_side(_record, BUCKETS, 3, "test", processes=True)
    pids = [pid for pid, _backend_pid, _atomic, _share in results]
    backends = [backend for _pid, backend, _atomic, _share in results]
    assert pids[0] == os.getpid() and len(set(pids)) == 3
    assert len(set(backends)) == 3 and all(atomic for *_, atomic, _share in results)
    assert [share for *_, share in results] == shares(BUCKETS, 3)  # in part order
    assert _done() == list(range(BUCKETS))
    assert _backend() == caller  # the children never touched the caller's session


def test_a_failing_part_raises_as_itself_once_the_others_committed(table):
    def work(share: list[int]):
        if 1 in share:
            raise ValueError(f"no bucket {share}")
        return _record(share)

    with pytest.raises(ValueError, match=r"no bucket \[1, 3, 5, 7\]") as raised:
        side_by_side(work, BUCKETS, 2, "test", processes=True)
    assert "raised in test part 1" in raised.value.__notes__[0]
    assert _done() == [0, 2, 4, 6]


def test_a_part_killed_is_reported_and_its_transaction_rolled_back(table):
    def work(share: list[int]):
        _record(share)
        if 1 in share:
            os.kill(os.getpid(), signal.SIGKILL)
        return share

    with pytest.raises(RuntimeError, match=r"test part 1 ended without a result.*signal 9"):
        side_by_side(work, BUCKETS, 2, "test", processes=True)
    assert _done() == [0, 2, 4, 6]


def test_the_caller_may_run_other_threads(table):
    # (django-q2's worker feeds its result queue from a thread)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        results = side_by_side(_record, BUCKETS, 2, "test", processes=True)
    finally:
        stop.set()
        other.join()
    assert len({pid for pid, *_ in results}) == 2
    assert _done() == list(range(BUCKETS))


def test_processes_are_refused_inside_a_transaction(table):
    from django.db import transaction

    with transaction.atomic(), pytest.raises(RuntimeError, match="outside a transaction"):
        side_by_side(_record, BUCKETS, 2, "test", processes=True)


CALLER = """
import os, sys, time
import django
django.setup()
from django.db import connection
from core.parts import side_by_side

def work(share):
    with connection.cursor() as cursor:
        cursor.executemany("INSERT INTO parts_done VALUES (%s)", [(b,) for b in share])
    with open(os.path.join(sys.argv[1], str(share[0])), "w") as out:
        out.write(str(os.getpid()))
    time.sleep(120)

side_by_side(work, 8, 2, "test", processes=True)
"""


def test_the_children_end_with_a_caller_killed_and_commit_nothing(table, tmp_path):
    from tests.integration.support import ROOT, database_url

    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    env["DATABASE_URL"] = database_url()
    caller = subprocess.Popen([sys.executable, "-c", CALLER, str(tmp_path)], cwd=ROOT, env=env)
    try:
        deadline = time.monotonic() + 60
        while len(list(tmp_path.iterdir())) < 2:  # both parts inserted and are sleeping
            assert caller.poll() is None and time.monotonic() < deadline, "no parts started"
            time.sleep(0.05)
        child = int((tmp_path / "1").read_text())
        assert child != caller.pid
    finally:
        caller.kill()
        caller.wait()
    deadline = time.monotonic() + 60
    while Path(f"/proc/{child}").exists() and "zombie" not in _state(child):
        assert time.monotonic() < deadline, "the child outlived its caller"
        time.sleep(0.05)
    assert _done() == []  # neither part committed


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().lower()
    except FileNotFoundError:
        return "zombie"
