"""Fixtures of the deployment tests: the project installed as README installs it, and a
throwaway database for it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings

from .support import ROOT, drop_database, readable_directory, recreate_database

# What a fresh clone does not have (.gitignore), and what no clone has (.git).
NOT_IN_A_CLONE = shutil.ignore_patterns(
    ".git",
    ".venv",
    "var",
    "build",
    "*.egg-info",
    "__pycache__",
    "*.pyc",
    ".pytest_cache",
    ".ruff_cache",
    ".mypy_cache",
    ".import_linter_cache",
    ".env",
    # Compiled catalogues (.gitignore): the wheel build must make them itself.
    "*.mo",
)


@dataclass(frozen=True)
class Installation:
    """A virtualenv holding pricefeed installed from a copy of the source tree."""

    venv: Path

    @property
    def bin(self) -> Path:
        return self.venv / "bin"


@pytest.fixture(scope="session")
def installed() -> Iterator[Installation]:
    """``python -m venv`` + ``pip install <source>``, not editable: the venv holds its own
    copy of the code (pip's cache keeps this to seconds after the first time). In a
    directory any user may read, as /opt/pricefeed/venv (pytest's own are root's alone)."""
    with readable_directory("installed") as base:
        yield install_into(base)


def install_into(base: Path, python: str = sys.executable) -> Installation:
    """A copy of the source tree pip-installed into ``base``/venv, made by ``python``."""
    source = base / "source"
    shutil.copytree(ROOT, source, ignore=NOT_IN_A_CLONE)
    venv = base / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--no-input",
            "--quiet",
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert pip.returncode == 0, f"pip install failed:\n{pip.stdout}\n{pip.stderr}"
    # The source copy goes: what runs from now on is what pip installed.
    shutil.rmtree(source)
    return Installation(venv)


@pytest.fixture
def deploy_database():
    """The URL of a fresh, empty PostgreSQL database beside the test database."""
    name = f"{settings.DATABASES['default']['NAME']}_deploy"
    url = recreate_database(name)
    yield url
    drop_database(name)
