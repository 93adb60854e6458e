"""core.sweeps: the sweeps apps register, run in order by one loop."""

from __future__ import annotations

import pytest

from core import sweeps
from mailboxes.processing import messages_sweep
from pricefeed.imports.lifecycle import price_imports_sweep


@pytest.fixture
def registry(monkeypatch) -> dict:
    """An empty registry for the test; the apps' own sweeps come back afterwards."""
    empty: dict = {}
    monkeypatch.setattr(sweeps, "_sweeps", empty)
    return empty


def test_run_all_runs_every_registered_sweep_in_registration_order(registry):
    ran = []
    sweeps.register("b", lambda: ran.append("b"))
    sweeps.register("a", lambda: ran.append("a"))
    sweeps.register("c", lambda: ran.append("c"))

    sweeps.run_all()

    assert ran == ["b", "a", "c"]


def test_registering_a_name_again_replaces_that_sweep_in_its_place(registry):
    ran = []
    sweeps.register("a", lambda: ran.append("a"))
    sweeps.register("b", lambda: ran.append("b"))
    sweeps.register("a", lambda: ran.append("a2"))

    sweeps.run_all()

    assert ran == ["a2", "b"]


def test_the_first_error_propagates_and_the_later_sweeps_wait_for_the_next_round(registry):
    ran = []

    def broken():
        raise RuntimeError("database went away")

    sweeps.register("first", lambda: ran.append("first"))
    sweeps.register("broken", broken)
    sweeps.register("last", lambda: ran.append("last"))

    with pytest.raises(RuntimeError, match="database went away"):
        sweeps.run_all()

    assert ran == ["first"]


def test_the_apps_register_their_sweeps_at_startup():
    registered = sweeps.registered()

    assert registered["messages"] is messages_sweep
    assert registered["imports"] is price_imports_sweep
    assert list(registered).index("messages") < list(registered).index("imports")
