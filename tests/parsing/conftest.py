"""Parsing is pure: these tests need neither the database nor the filesystem."""

from __future__ import annotations

import builtins
import io
import os
from contextlib import contextmanager

import pytest

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


@pytest.fixture
def no_writes(tmp_path):
    """A context manager: inside it, any attempt to write, create, link or rename a file
    fails the test, and on leaving it the (temporary) working directory must still be
    empty. Build fixtures outside it: openpyxl itself writes temporary files."""
    return lambda: _no_writes(tmp_path)


@contextmanager
def _no_writes(tmp_path):
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.chdir(tmp_path)
    real_open = builtins.open
    real_os_open = os.open

    def guarded_open(file, mode="r", *args, **kwargs):
        if any(flag in mode for flag in "wax+"):
            raise AssertionError(f"parsing tried to open {file!r} for writing")
        return real_open(file, mode, *args, **kwargs)

    def guarded_os_open(path, flags, *args, **kwargs):
        if flags & _WRITE_FLAGS:
            raise AssertionError(f"parsing tried to os.open {path!r} for writing")
        return real_os_open(path, flags, *args, **kwargs)

    def refuse(name):
        def call(*args, **kwargs):
            raise AssertionError(f"parsing called os.{name}{args!r}")

        return call

    monkeypatch.setattr(builtins, "open", guarded_open)
    monkeypatch.setattr(io, "open", guarded_open)
    monkeypatch.setattr(os, "open", guarded_os_open)
    for name in ("mkdir", "makedirs", "symlink", "link", "rename", "replace", "mkfifo"):
        monkeypatch.setattr(os, name, refuse(name))
    try:
        yield tmp_path
    finally:
        monkeypatch.undo()
    assert list(tmp_path.iterdir()) == [], "parsing left files in the working directory"
