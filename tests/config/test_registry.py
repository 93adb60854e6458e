"""The settings registry (config/registry.py) holds every environment variable the code
reads, with the type settings.py reads it as; docs/configuration.md and .env.example are
what it makes (python -m config.registry --write)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from config import registry

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = (
    "config",
    "core",
    "mailboxes",
    "outbox",
    "pricefeed",
    "notifications",
    "fleet",
    "monitoring",
    "console",
    "api",
    "access",
)
# django-environ's readers and the type each gives.
READERS = {"str": str, "int": int, "float": float, "bool": bool, "list": list}


def settings_reads() -> dict[str, type]:
    """Each variable config/settings.py reads with env.<type>("NAME", ...)."""
    tree = ast.parse((ROOT / "config" / "settings.py").read_text())
    found: dict[str, type] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "env"
            and node.func.attr in READERS
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            found.setdefault(node.args[0].value, READERS[node.func.attr])
    return found


def environ_reads() -> set[str]:
    """Each variable the production code reads from os.environ itself."""
    names = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("get", "getenv")
                    and ast.unparse(node.func.value) in ("os.environ", "os")
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                ):
                    names.add(node.args[0].value)
    return names


def test_every_variable_settings_reads_is_in_the_registry_with_its_type():
    registered = {s.name: s.type for s in registry.SETTINGS}
    reads = settings_reads()

    assert len(reads) > 90  # the scan finds what settings.py reads
    assert {name: registered.get(name) for name in reads} == reads


def test_every_variable_read_from_the_environment_is_registered_or_a_test_switch():
    registered = {s.name for s in registry.SETTINGS}
    read = environ_reads()

    assert "PROMETHEUS_MULTIPROC_DIR" in read  # the scan finds what the code reads
    assert read - registered - set(registry.TESTS_ONLY_NAMES) == set()


def test_the_registry_names_nothing_the_code_does_not_read():
    read = set(settings_reads()) | environ_reads()

    assert {s.name for s in registry.SETTINGS} - read == set()
    assert len({s.name for s in registry.SETTINGS}) == len(registry.SETTINGS)


@pytest.mark.parametrize("path", sorted(registry.GENERATED), ids=lambda p: p.name)
def test_the_generated_files_are_what_the_registry_makes(path):
    assert path.read_text() == registry.GENERATED[path](), (
        f"{path.relative_to(ROOT)} is stale: python -m config.registry --write"
    )


def test_a_variable_missing_from_the_configuration_table_fails():
    table = (ROOT / "docs" / "configuration.md").read_text()
    example = (ROOT / ".env.example").read_text()

    missing = [name for name in settings_reads() if f"| `{name}` |" not in table]
    unlisted = [name for name in settings_reads() if f"{name}=" not in example]

    assert missing == [] and unlisted == []


def test_the_liveness_window_is_a_setting_of_its_own(settings):
    from datetime import timedelta

    from mailboxes.selectors import instance_state

    settings.PRICEFEED_LEASE_TTL = 10
    settings.PRICEFEED_LIVENESS_WINDOW = 60
    assert instance_state(stopping=False, seen_ago=timedelta(seconds=30)) == "live"
    settings.PRICEFEED_LIVENESS_WINDOW = 20
    assert instance_state(stopping=False, seen_ago=timedelta(seconds=30)) == "dead"
