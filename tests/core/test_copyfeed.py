"""CopyFeeder: chunks reach the writer in order, from its own thread, within a bound."""

from __future__ import annotations

import threading
import time

import pytest

from core.copyfeed import CopyFeeder


class _Writer:
    def __init__(self, *, fail_at: int | None = None, gate: threading.Event | None = None):
        self.chunks: list[str] = []
        self.threads: set[str] = set()
        self.fail_at = fail_at
        self.gate = gate

    def __call__(self, chunk: str) -> None:
        if self.gate is not None:
            self.gate.wait(5)
        self.threads.add(threading.current_thread().name)
        if self.fail_at is not None and len(self.chunks) == self.fail_at:
            raise ValueError(f"refused {chunk}")
        self.chunks.append(chunk)


def test_chunks_are_written_in_order_by_the_feeder_thread():
    writer = _Writer()
    feeder = CopyFeeder(writer, max_pending=10)
    sent = [f"chunk-{i}" for i in range(200)]
    for chunk in sent:
        feeder.write(chunk)
    feeder.close()
    feeder.close()  # twice is harmless
    assert writer.chunks == sent
    assert writer.threads == {"copy-feeder"}


def test_write_waits_while_the_bound_is_queued():
    gate = threading.Event()
    writer = _Writer(gate=gate)
    feeder = CopyFeeder(writer, max_pending=10)
    feeder.write("aaaaaaaa")  # 8 queued (or being written)
    returned = threading.Event()

    def second() -> None:
        feeder.write("bbbbbbbb")  # 16 > 10: waits for the first to be written
        returned.set()

    thread = threading.Thread(target=second)
    thread.start()
    assert not returned.wait(0.3)
    gate.set()
    assert returned.wait(5)
    thread.join()
    feeder.close()
    assert writer.chunks == ["aaaaaaaa", "bbbbbbbb"]


def test_a_chunk_larger_than_the_bound_is_queued_alone():
    writer = _Writer()
    feeder = CopyFeeder(writer, max_pending=4)
    feeder.write("x" * 100)
    feeder.write("y")
    feeder.close()
    assert writer.chunks == ["x" * 100, "y"]


def test_the_writers_error_is_raised_by_the_next_write_and_by_close():
    writer = _Writer(fail_at=2)
    feeder = CopyFeeder(writer, max_pending=1)
    with pytest.raises(ValueError, match="refused"):
        for i in range(50):
            feeder.write(f"c{i}")
    assert writer.chunks == ["c0", "c1"]
    with pytest.raises(ValueError, match="refused c2"):
        feeder.write("more")
    with pytest.raises(ValueError, match="refused c2"):
        feeder.close()


def test_abandon_drops_what_is_queued_and_stops_the_thread():
    gate = threading.Event()
    writer = _Writer(gate=gate)
    feeder = CopyFeeder(writer, max_pending=1000)
    for i in range(5):
        feeder.write(f"c{i}")
    threading.Timer(0.1, gate.set).start()
    started = time.monotonic()
    feeder.abandon()
    assert time.monotonic() - started < 5
    assert len(writer.chunks) <= 1  # at most the chunk being written when it was called
    assert not feeder._thread.is_alive()
