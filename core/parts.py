"""Work split into parts that run side by side, each a transaction on a database
connection of its own (products.linking's matching, pricing.offers' refresh).

The work is divided by fixed buckets (a hash of a key into ``buckets`` values, a power
of 2 every instance shares); part k of n has the buckets b with b % n = k. The caller
locks its buckets in ascending order, as every part does, so parts never deadlock.

Two ways to run them:

- **threads** (the default): for work that is PostgreSQL's or waits on it (the offers'
  refresh), as each session uses a core of the server of its own;
- **processes** (``processes=True``): for work that is mostly Python (the matching
  cascade normalises and decides per line), which threads would run one at a time
  under the interpreter's lock. Part 0 runs in the caller; each other part in a child
  forked from it (os.fork: the child has the caller's settings, code and data at no
  cost of start-up), on a connection of its own, sending its result back through a
  pipe and leaving with ``os._exit``. The caller's connection is never used by a child.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import pickle
import signal
import sys
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NoReturn, TypeVar

from django.db import connection, connections, transaction

logger = logging.getLogger(__name__)

T = TypeVar("T")

# In a forked child, the caller's database connections: kept referenced (and so never
# closed: closing one would end the caller's session, whose socket the child shares).
_inherited: list[Any] = []
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def shares(buckets: int, parts: int) -> list[list[int]]:
    """The buckets of each of ``parts`` parts: part k has the buckets b with
    b % parts = k."""
    return [[b for b in range(buckets) if b % parts == k] for k in range(parts)]


def side_by_side(
    work: Callable[[list[int]], T],
    buckets: int,
    parts: int,
    name: str,
    *,
    processes: bool = False,
) -> list[T]:
    """``work(share)`` for each part's share of ``buckets``, each in a transaction on its
    own connection, in part order: in threads named ``name`` (each connection closed
    after), or with ``processes`` in the caller and children forked from it (the caller
    must not be in a transaction). A part that fails raises here once the others have
    ended; those others stay committed."""
    if processes and parts > 1 and hasattr(os, "fork"):
        return _in_processes(work, shares(buckets, parts), name)

    def part(share: list[int]) -> T:
        try:
            with transaction.atomic():
                return work(share)
        finally:
            connection.close()

    with ThreadPoolExecutor(parts, thread_name_prefix=name) as pool:
        return list(pool.map(part, shares(buckets, parts)))


def _in_processes(work: Callable[[list[int]], T], parts: list[list[int]], name: str) -> list[T]:
    if connection.in_atomic_block:
        raise RuntimeError("parts in processes run outside a transaction")
    children: list[tuple[int, int]] = []
    results: list[tuple[str, Any]] = []
    try:
        for share in parts[1:]:
            children.append(_fork(work, share, name))
        try:
            with transaction.atomic():
                results.append(("ok", work(parts[0])))
        except Exception as exc:  # raised below, once the other parts have ended
            results.append(("error", exc))
        for number in range(1, len(parts)):
            pid, reader = children[0]
            results.append(_collected(pid, reader, f"{name} part {number}"))
            children.pop(0)
    finally:
        # Interrupted (a signal, Ctrl-C): the children are ended, their transactions
        # rolled back with their connections.
        for pid, reader in children:
            _end(pid, reader)
    for kind, value in results:
        if kind == "error":
            raise value
    return [value for _kind, value in results]


def _fork(work: Callable[[list[int]], T], share: list[int], name: str) -> tuple[int, int]:
    """A child running ``work(share)``: its pid and the pipe its result comes through."""
    reader, writer = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    parent = os.getpid()
    with warnings.catch_warnings():
        # Python 3.12+ warns of a fork while other threads run (django-q2's result queue
        # keeps one in a worker): the child runs only this part, on a connection of its
        # own, and leaves with os._exit.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        os.close(reader)
        _child(work, share, writer, name, parent)
    os.close(writer)
    return pid, reader


def _child(
    work: Callable[[list[int]], Any], share: list[int], writer: int, name: str, parent: int
) -> NoReturn:
    code = 1
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        _die_with(parent)
        for wrapper in connections.all(initialized_only=True):
            if wrapper.connection is not None:
                _inherited.append(wrapper.connection)
                wrapper.connection = None
        try:
            with transaction.atomic():
                result: tuple[str, Any] = ("ok", work(share))
            code = 0
        except BaseException as exc:
            # (its traceback stays here: the caller gets the exception without it)
            logger.exception("%s failed (pid %s)", name, os.getpid())
            result = ("error", exc)
        finally:
            connections.close_all()
        try:
            payload = pickle.dumps(result)
        except Exception:  # an exception that does not pickle: its text does
            payload = pickle.dumps(("error", RuntimeError(f"{name}: {result[1]!r}")))
        with os.fdopen(writer, "wb") as out:
            out.write(payload)
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        logger.exception("%s failed in its process", name)
        code = 1
    finally:
        os._exit(code)


def _die_with(parent: int) -> None:
    """A child ends with the caller (a worker killed past its timeout): its transaction
    is then rolled back, not left to commit a part nobody waits for (Linux's
    PR_SET_PDEATHSIG; elsewhere the child runs its part to the end)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the caller ended before the call above
        os._exit(1)


def _collected(pid: int, reader: int, name: str) -> tuple[str, Any]:
    """A child's result (read whole before it is reaped: it may fill the pipe)."""
    with os.fdopen(reader, "rb") as source:
        payload = source.read()
    _pid, status = os.waitpid(pid, 0)
    if payload:
        kind, value = pickle.loads(payload)
        if kind == "error":
            value.add_note(f"(raised in {name}, process {pid}: its traceback is in the log)")
        return kind, value
    if os.WIFSIGNALED(status):
        ended = f"killed by signal {os.WTERMSIG(status)}"
    else:
        ended = f"exit status {os.waitstatus_to_exitcode(status)}"
    return ("error", RuntimeError(f"{name} ended without a result ({ended})"))


def _end(pid: int, reader: int) -> None:
    """A child ended and reaped (perhaps reaped already, its pipe closed, if the caller
    was interrupted while collecting it)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    with contextlib.suppress(OSError):
        os.close(reader)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
