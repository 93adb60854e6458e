"""The django-q2 log level setting reaches the logger django-q2 writes to."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRINT_LEVEL = (
    "import logging, django_q.conf; "
    "print(logging.getLevelName(logging.getLogger('django-q').getEffectiveLevel()))"
)


def _django_q_level(**variables: str) -> str:
    environment = {k: v for k, v in os.environ.items() if k != "PRICEFEED_Q_LOG_LEVEL"}
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", PRINT_LEVEL],
        cwd=ROOT,
        env={**environment, **variables},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return result.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("variables", "level"),
    [
        ({}, "WARNING"),
        ({"PRICEFEED_Q_LOG_LEVEL": "ERROR"}, "ERROR"),
        ({"PRICEFEED_Q_LOG_LEVEL": "DEBUG"}, "DEBUG"),
    ],
)
def test_django_q2_logs_at_the_level_of_its_setting(variables, level):
    # Before, the level was set on "django_q", a logger nobody writes to: django-q2's
    # records passed at the root's INFO whatever PRICEFEED_Q_LOG_LEVEL said.
    assert _django_q_level(**variables) == level
