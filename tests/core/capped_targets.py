"""Functions core.capped runs in its child in tests/core/test_capped.py (a module that
imports no Django, as the child loads none)."""

from __future__ import annotations

import os


def add(a: int, b: int) -> int:
    return a + b


def allocate(size: int) -> int:
    return len(bytearray(size))


def spin() -> None:
    while True:
        pass


def abort() -> None:
    os.abort()


def refuse(text: str) -> None:
    raise ValueError(text)
