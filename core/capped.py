"""Work on untrusted bytes in a child process under a memory cap and a CPU budget.

The web process has no memory cap (a gunicorn worker serves every page), so work that
reads an uploaded file (the config preview) runs in a short-lived child: a fresh
interpreter (``python -m core.capped``, about 0.1 s to start) that caps its address
space and its CPU time the way django-q2's workers do (core.budget: ``cap_memory``,
``cpu_budget``), runs one function of a module that imports no Django, and sends the
result back. A reader that aborts in native code (exit 134), a cap that kills the child
or the wall-clock ``timeout`` end as ChildFailed saying how; the parent goes on.

The child reads hostile bytes, so what it sends back is unpickled with only the
classes the caller allows (a child taken over through a native bug cannot run code in
the parent by what it writes).
"""

from __future__ import annotations

import importlib
import io
import logging
import pickle
import signal
import subprocess
import sys
from collections.abc import Iterable
from typing import Any

from core.budget import CpuBudgetExceeded, cap_memory, cpu_budget

logger = logging.getLogger(__name__)

# Results and exceptions are made of these besides the caller's own modules.
_ALWAYS = {
    ("builtins", "MemoryError"),
    ("builtins", "RuntimeError"),
    ("core.budget", "CpuBudgetExceeded"),
    ("core.storedtext", "_rebuilt"),
    ("decimal", "Decimal"),
}


class ChildFailed(Exception):
    """The child process ended without a result: ``how`` is "timeout", "aborted"
    (SIGABRT: a native reader's allocation failed), "killed" (SIGKILL, SIGXCPU) or
    "exited"; ``code`` its exit status (negative: the signal)."""

    def __init__(self, how: str, code: int | None) -> None:
        super().__init__(f"child process {how} (status {code})")
        self.how = how
        self.code = code


def run_capped(
    target: str,
    *args: Any,
    memory: int,
    cpu_seconds: float,
    timeout: float,
    allowed: Iterable[str] = (),
) -> Any:
    """``target`` ("module:function") called with ``args`` in a child process whose
    address space is capped at ``memory`` bytes and CPU time at ``cpu_seconds``; its
    return value, or the exception it raised (MemoryError, CpuBudgetExceeded, or the
    function's own), raised here. Raises ChildFailed when the child dies or outlives
    ``timeout`` seconds (it is killed). Results are unpickled with the ``allowed``
    names only ("module:Name", or "module" for every name of a module that holds
    nothing but classes), and a few builtins."""
    payload = pickle.dumps((target, args, memory, cpu_seconds))
    child = subprocess.Popen(
        [sys.executable, "-m", "core.capped"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        out, err = child.communicate(payload, timeout=timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        raise ChildFailed("timeout", child.returncode) from None
    code = child.returncode
    if code != 0 or not out:
        logger.warning("capped child %s ended status=%s: %s", target, code, err[-2000:])
        raise ChildFailed(_how(code), code)
    ok, value = _Unpickler(io.BytesIO(out), frozenset(allowed)).load()
    if ok:
        return value
    raise value


def _how(code: int) -> str:
    if code in (-signal.SIGABRT, 128 + signal.SIGABRT):
        return "aborted"
    if code in (-signal.SIGKILL, -signal.SIGXCPU):
        return "killed"
    return "exited"


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, allowed: frozenset[str]) -> None:
        super().__init__(file)
        self.allowed = allowed

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALWAYS or {module, f"{module}:{name}"} & self.allowed:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"the child sent {module}.{name}: not allowed")


def _main() -> None:
    target, args, memory, cpu_seconds = pickle.load(sys.stdin.buffer)
    module, name = target.split(":")
    function = getattr(importlib.import_module(module), name)
    cap_memory(memory)
    result: tuple[bool, Any]
    try:
        with cpu_budget(cpu_seconds):
            result = (True, function(*args))
    except (MemoryError, CpuBudgetExceeded) as exc:
        result = (False, type(exc)())
    except Exception as exc:
        result = (False, exc)
    try:
        out = pickle.dumps(result)
    except Exception as exc:
        out = pickle.dumps((False, RuntimeError(f"unpicklable result: {exc!r}")))
    sys.stdout.buffer.write(out)


if __name__ == "__main__":
    _main()
