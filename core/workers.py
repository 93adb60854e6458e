"""Who is doing the work, and what happens when a worker process dies under it.

A django-q2 worker writes ``host:pid`` (``worker_id``) into the claims it takes. A worker
that dies under a claim (a reader crashing in native code, the kernel's OOM killer, a
kill after the task timeout) cannot release it; another process on the same host can see
that the pid is gone. ``reap_dead_claims`` counts a crash for each such row of the work
registered with ``watch`` (core.claims.ClaimedWork.crashed: retried once, then FAILED).
It runs as a periodic sweep (core.sweeps, run by listen_mail's supervisor) and in every
django-q2 worker as it starts: django-q2 starts a new worker in place of one that died,
so a dead worker's claim is reaped at once. The same start hook caps the worker's
address space (``PRICEFEED_WORKER_MEMORY_LIMIT``), so a runaway allocation ends as a
MemoryError (a permanent error) or a dead worker, not as the host's OOM killer at work,
and freezes what the worker loaded for the cyclic collector (``gc.freeze``).

Pids are only compared on the host that owns them: the host name in a claim must name
one pid namespace (a container's or pod's own host name does).
"""

from __future__ import annotations

import gc
import importlib.util
import logging
import os
import socket
from pathlib import Path

from django.conf import settings
from django.core import checks
from django.db import connection

from core import sweeps
from core.budget import cap_memory
from core.claims import ClaimedWork

logger = logging.getLogger(__name__)

_watched: dict[str, ClaimedWork] = {}


def check_broker(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """A system check: the Redis broker needs the ``redis`` package, which only the
    ``redis`` extra installs. Without it every command stops here, with what to install,
    rather than ``qcluster`` dying on an import while every other process runs on."""
    if "redis" not in settings.Q_CLUSTER or importlib.util.find_spec("redis") is not None:
        return []
    return [
        checks.Error(
            "PRICEFEED_REDIS_URL is set, but the redis package (django-q2's Redis broker "
            "client) is not installed.",
            hint="pip install 'pricefeed[redis]' (or pip install redis), or unset "
            "PRICEFEED_REDIS_URL to use the database as the broker.",
            id="core.E003",
        )
    ]


def host() -> str:
    """This host's name, as claims carry it."""
    return socket.gethostname()


def worker_id() -> str:
    """``host:pid`` of this process (a django-q2 worker, a listener, a dispatcher)."""
    return f"{host()}:{os.getpid()}"


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` of this host may still be running: it exists and is not a
    zombie (dead, not yet waited for by its parent). A process of another user counts
    as alive: whether it is still our worker cannot be told, so it is left alone."""
    if pid <= 0:
        return True  # not a process id: never judged dead
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except FileNotFoundError:
        # Gone since the signal, or no /proc on this system (then only the signal says).
        return not Path("/proc/self/stat").exists()
    except OSError:
        return True
    # "pid (comm) state ...": comm may hold spaces and parentheses; the state follows ")".
    return stat.rpartition(b")")[2].split()[:1] != [b"Z"]


def watch(name: str, work: ClaimedWork) -> None:
    """Registers work whose rows django-q2 workers claim with ``worker_id``: claims of
    its dead workers are reaped by the periodic sweep and whenever a worker starts.
    Called from ``AppConfig.ready``; the sweep and the worker start hook are installed
    once, whatever the number of calls."""
    from django_q.signals import post_spawn

    _watched[name] = work
    sweeps.register("dead workers", reap_dead_claims)
    post_spawn.connect(on_worker_spawn, dispatch_uid="core.workers.on_worker_spawn")


def watched() -> dict[str, ClaimedWork]:
    return dict(_watched)


def reap_dead_claims(*, at_spawn: bool = False) -> int:
    """Counts a crash for every running row of the watched work claimed by a process of
    this host that is gone; returns how many rows moved.

    A pid that is alive is left alone, even when it may be a new process that reuses the
    number: the claim timeout ends such a claim. With ``at_spawn`` (a worker starting,
    holding no claim yet) claims made under this very pid are an earlier process's."""
    own = os.getpid() if at_spawn else None

    def is_dead(pid: int) -> bool:
        return pid == own or not pid_alive(pid)

    this_host = host()
    return sum(work.reap_orphans(host=this_host, is_dead=is_dead) for work in watched().values())


def apply_memory_limit() -> int | None:
    """Caps this process's address space (RLIMIT_AS, soft limit) at
    ``PRICEFEED_WORKER_MEMORY_LIMIT`` bytes, or lower when the process already had a
    lower limit; returns the limit now in force, None when none is set (0 = no cap)."""
    return cap_memory(settings.PRICEFEED_WORKER_MEMORY_LIMIT)


def on_worker_spawn(sender: object = None, proc_name: str = "", **kwargs: object) -> None:
    """django-q2's ``post_spawn``, in a new worker process before its first task: caps its
    memory and reaps the claims of dead workers. Never raises: django-q2 does not catch
    it, and a worker that dies at its start would be started again and again."""
    limit = None
    try:
        limit = apply_memory_limit()
    except Exception:
        logger.exception("worker memory limit not applied proc=%s", proc_name)
    reaped = 0
    try:
        reaped = reap_dead_claims(at_spawn=True)
    except Exception:
        logger.exception("reaping the claims of dead workers failed proc=%s", proc_name)
    finally:
        # Left as django-q2 hands a worker over: with no connection of its own yet.
        connection.close()
    # Everything loaded by now (Django, the apps, ~90k objects) lives as long as the
    # worker. Frozen, the cyclic collector stops walking it at each of its collections,
    # which a batch of 500 outbox events triggers several times: measured in
    # bench/outbox.py's real path, ~13 % of the drain's CPU. Objects made later are
    # collected as before; frozen ones are still freed when nothing refers to them.
    gc.freeze()
    logger.info(
        "worker started worker=%s memory_limit=%s reaped=%s",
        worker_id(),
        limit or "none",
        reaped,
        extra={"action": "worker_started"},
    )
