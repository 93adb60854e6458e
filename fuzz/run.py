#!/usr/bin/env python3
"""Runs the property tests of tests/fuzz randomised, for a time box.

    .venv/bin/python fuzz/run.py [--seconds 60] [--only mime] [--batch 20]

CI runs the same properties derandomised with 100 examples each (tests/fuzz/conftest.py);
this script gives each property an equal share of ``--seconds`` and runs it again and
again with fresh random seeds until its share is used. For every property it prints the
cases tried and the failures found; a failure stops that property, and its shortest
example (Hypothesis shrinks it) is written to var/fuzz/<property>.txt, with the raw
bytes of the example in var/fuzz/<property>.<argument>.bin. Failing examples are also
kept in Hypothesis' example database (var/fuzz/examples) and tried first next time.

Properties marked xfail (open bugs, the reason on the mark) are
not fuzzed: their explicit examples (and a few more) are run once, to say whether the
bug is still there.

Exits 1 when a property failed, 0 otherwise. Needs no database: Django is set up with
config.settings only because mailboxes.mime reads its MIME budget from the settings.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "var" / "fuzz"


@dataclass
class Target:
    name: str  # "test_mime.test_quick_reader_never_contradicts_the_email_parser"
    test: Any  # the @given function
    xfail_reason: str | None
    cases: int = 0
    failure: str | None = None
    example: dict[str, Any] = field(default_factory=dict)


def discover(only: str) -> list[Target]:
    targets = []
    for path in sorted((ROOT / "tests" / "fuzz").glob("test_*.py")):
        module = importlib.import_module(f"tests.fuzz.{path.stem}")
        for attr, test in vars(module).items():
            if not attr.startswith("test_") or not getattr(test, "is_hypothesis_test", False):
                continue
            name = f"{path.stem}.{attr}"
            if only not in name:
                continue
            marks = [m for m in getattr(test, "pytestmark", []) if m.name == "xfail"]
            reason = marks[0].kwargs.get("reason", "xfail") if marks else None
            targets.append(Target(name, test, reason))
    return targets


def instrument(target: Target) -> None:
    """Counts the calls of the property and keeps the arguments of the last one: after a
    failure Hypothesis replays the shortest failing example last."""
    inner = target.test.hypothesis.inner_test

    def counted(*args: Any, **kwargs: Any) -> Any:
        target.cases += 1
        target.example = dict(kwargs, **{f"arg{i}": a for i, a in enumerate(args)})
        return inner(*args, **kwargs)

    target.test.hypothesis.inner_test = counted


def fuzz(target: Target, seconds: float, batch: int) -> None:
    from hypothesis import HealthCheck, Verbosity, settings
    from hypothesis.database import DirectoryBasedExampleDatabase

    settings(
        max_examples=batch,
        derandomize=False,
        deadline=None,
        database=DirectoryBasedExampleDatabase(OUT / "examples"),
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
    )(target.test)
    instrument(target)
    stop = time.monotonic() + seconds
    while time.monotonic() < stop:
        try:
            target.test()
        except KeyboardInterrupt:
            raise
        except BaseException:  # pytest.raises() fails with a BaseException
            target.failure = traceback.format_exc(limit=-8)
            save(target)
            return


def check_known(target: Target) -> bool:
    """Runs a known bug's explicit examples, then a few generated ones; True when it
    still fails."""
    from hypothesis import HealthCheck, Phase, Verbosity, settings

    settings(
        phases=[Phase.explicit, Phase.generate],
        max_examples=20,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
    )(target.test)
    try:
        target.test()
    except KeyboardInterrupt:
        raise
    except BaseException:
        return True
    return False


def save(target: Target) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    lines = [f"property: tests/fuzz/{target.name.replace('.', '.py::', 1)}", ""]
    for arg, value in target.example.items():
        lines.append(f"{arg} = {value!r}")
        raw = value if isinstance(value, bytes) else None
        for attribute in ("raw", "data"):  # MailSpec.raw, Archive.data, TableSpec.data
            if raw is None and isinstance(getattr(value, attribute, None), bytes):
                raw = getattr(value, attribute)
        if raw is not None:
            (OUT / f"{target.name}.{arg}.bin").write_bytes(raw)
    lines += ["", target.failure or ""]
    (OUT / f"{target.name}.txt").write_text("\n".join(lines), encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60, help="time box in all (60)")
    parser.add_argument("--only", default="", help="properties whose name contains this")
    parser.add_argument("--batch", type=int, default=20, help="examples per random seed (20)")
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    # As in pytest's configuration (filterwarnings = error): a warning is a failure.
    warnings.simplefilter("error")
    targets = discover(args.only)
    fuzzed = [t for t in targets if t.xfail_reason is None]
    if not fuzzed:
        print(f"no property matches {args.only!r}")
        return 2
    share = args.seconds / len(fuzzed)
    width = max(len(t.name) for t in targets)
    print(f"{len(fuzzed)} properties, {share:.1f} s each")
    for target in fuzzed:
        started = time.monotonic()
        fuzz(target, share, args.batch)
        took = time.monotonic() - started
        verdict = "FAILED" if target.failure else "ok"
        print(f"{target.name:<{width}}  {took:6.1f} s  {target.cases:7,} cases  {verdict}")
        if target.failure:
            for line in target.failure.strip().splitlines()[-2:]:
                print(f"    {line.strip()}")
            print(f"    shortest example: {(OUT / target.name).relative_to(ROOT)}.txt")
    for target in targets:
        if target.xfail_reason is not None:
            state = "still fails" if check_known(target) else "PASSES NOW: remove its xfail"
            print(f"{target.name:<{width}}  known bug, {state}")
    failed = [t.name for t in fuzzed if t.failure]
    print(
        f"{len(failed)} of {len(fuzzed)} properties failed"
        + (f": {', '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
