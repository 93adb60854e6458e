"""A throwaway PostgreSQL database for a benchmark, next to the one DATABASE_URL names;
the ``BAR`` line every benchmark prints per target; and the CPU a run used."""

from __future__ import annotations

import os
import signal
import sys


def bar_line(name: str, met: bool, figure: str, target: str, quick: bool) -> str:
    """A target's ``BAR`` line; ``--quick``'s smaller runs make the figures indicative
    only, and the line says so."""
    line = f"BAR {name} {'met' if met else 'missed'} {figure} (target {target})"
    return line + " (quick)" if quick else line


def process_cpu() -> float:
    """CPU seconds of this process, its threads and its waited-for children."""
    import resource

    own, children = (
        resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def machine_busy() -> float | None:
    """CPU seconds the whole machine has been busy (every core, every process: not idle
    nor waiting for I/O) since it started; None where /proc/stat is not there."""
    try:
        with open("/proc/stat") as stat:
            ticks = [int(field) for field in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle, iowait = ticks[3], ticks[4]
    return (sum(ticks) - idle - iowait) / os.sysconf("SC_CLK_TCK")


def base_database_url() -> str:
    """DATABASE_URL, or the local server's postgres database."""
    return os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")


def bench_database(bench: str) -> str:
    """The name of a benchmark's database: DATABASE_URL's database name plus
    ``_bench_<bench>``, so that people sharing one server (each with a database of their
    own, as the tests are) do not drop each other's bench database mid-run."""
    return base_database_url().rsplit("/", 1)[-1].split("?")[0] + "_bench_" + bench


def database_url(name: str) -> str:
    """The URL of database ``name`` on the server of DATABASE_URL."""
    return base_database_url().rsplit("/", 1)[0] + "/" + name


def interrupt_on_termination() -> None:
    """From here on SIGTERM and SIGHUP end the run as Ctrl-C does (KeyboardInterrupt):
    through the finally blocks that stop what the bench started and drop its database."""
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.default_int_handler)


def fresh_database(name: str, script: str) -> str:
    """Drops and creates database ``name`` on the server of DATABASE_URL (default: the
    local server on 127.0.0.1:5432) and returns its URL. Exits when that is not
    PostgreSQL: the benchmarks measure what production runs on."""
    import environ
    import psycopg

    base = base_database_url()
    if "postgresql" not in environ.Env.db_url_config(base)["ENGINE"]:
        sys.exit(f"{script} needs PostgreSQL: set DATABASE_URL=postgres://...")
    with psycopg.connect(base.replace("postgres://", "postgresql://"), autocommit=True) as c:
        c.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        c.execute(f"CREATE DATABASE {name}")
    return database_url(name)


def drop_database(name: str) -> None:
    """Drops database ``name`` (made by ``fresh_database``) from the same server."""
    import psycopg

    base = base_database_url()
    if base.rsplit("/", 1)[-1] == name:  # django_on pointed DATABASE_URL at it
        base = database_url("postgres")
    with psycopg.connect(base.replace("postgres://", "postgresql://"), autocommit=True) as c:
        c.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def django_on(url: str) -> None:
    """Points this process's Django at ``url`` and migrates it (call before any model
    import). The benchmarks' IMAP servers listen on loopback without TLS: this process,
    and the ones it starts with its environment, are allowed to reach them."""
    from devkit.servers import LOOPBACK_IMAP_ENV

    os.environ["DATABASE_URL"] = url
    os.environ.update(LOOPBACK_IMAP_ENV)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    production_key()
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def production_key() -> None:
    """The benchmarks run the production settings (DEBUG off), which require
    PRICEFEED_ENCRYPTION_KEYS: unless given, a key of this run's own, inherited by every
    process it starts."""
    from cryptography.fernet import Fernet

    os.environ.setdefault("PRICEFEED_ENCRYPTION_KEYS", Fernet.generate_key().decode())
