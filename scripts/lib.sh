# Shared by scripts/test, scripts/demo and .ci/run: installs what they need, idempotently.
# shellcheck shell=bash

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The virtualenv; PRICEFEED_VENV names another (.ci/run keeps one per interpreter).
VENV="${PRICEFEED_VENV:-$ROOT/.venv}"

say() { printf '%s\n' "$*" >&2; }

# pricefeed runs on CPython 3.11 or newer (requires-python in pyproject.toml): Debian 12's
# 3.11, Ubuntu 24.04's 3.12 and Debian 13's 3.13 alike.
PYTHON_MIN_MINOR=11

# Prints the version ("3.13.0") of an interpreter that runs and is a final CPython
# release >= 3.$PYTHON_MIN_MINOR with the GIL (free-threaded builds lack wheels for some
# dependencies); fails otherwise, also for a pyenv shim of a version not selected.
python_version() {
    "$1" - "$PYTHON_MIN_MINOR" 2>/dev/null <<'PY'
import sys, sysconfig
v = sys.version_info
print("%d.%d.%d" % v[:3])
sys.exit(not (v[:2] >= (3, int(sys.argv[1])) and v.releaselevel == "final"
              and sys.implementation.name == "cpython"
              and not sysconfig.get_config_var("Py_GIL_DISABLED")))
PY
}

# The interpreter the venv is made with: $PYTHON when set (it must qualify), else the newest
# that qualifies among pyenv's installed versions (its shims run only the selected one)
# and python3.N / python3 on PATH.
find_python() {
    if [ -n "${PYTHON:-}" ]; then
        if ! python_version "$PYTHON" >/dev/null; then
            say "PYTHON=$PYTHON is not a CPython >= 3.$PYTHON_MIN_MINOR that runs (pricefeed is tested on 3.$PYTHON_MIN_MINOR and 3.13)"
            exit 2
        fi
        printf '%s\n' "$PYTHON"
        return 0
    fi
    local root candidate version found=""
    root="$(pyenv root 2>/dev/null || true)"
    root="${root:-${PYENV_ROOT:-$HOME/.pyenv}}"
    local candidates=("$root"/versions/3.*/bin/python3)
    for version in $(seq "$PYTHON_MIN_MINOR" 20); do candidates+=("python3.$version"); done
    candidates+=(python3)
    for candidate in "${candidates[@]}"; do
        [ -x "$candidate" ] || command -v "$candidate" >/dev/null || continue
        version="$(python_version "$candidate")" && found+="$version $candidate"$'\n'
    done
    if [ -z "$found" ]; then
        say "pricefeed needs Python >= 3.$PYTHON_MIN_MINOR and found none (python3.$PYTHON_MIN_MINOR or python3 on PATH,"
        say "$root/versions/*). Install one (pyenv install 3.$PYTHON_MIN_MINOR, or your system's"
        say "python3.$PYTHON_MIN_MINOR package), or set PYTHON=/path/to/python3.$PYTHON_MIN_MINOR."
        exit 2
    fi
    # Newest version; of equal ones, the last found (PATH's over pyenv's).
    printf '%s' "$found" | sort -s -V -k1,1 | tail -n 1 | cut -d' ' -f2-
}

ensure_venv() {
    local python want_minor have_minor
    python="$(find_python)" || exit $?
    want_minor="$(python_version "$python" | cut -d. -f1,2)"
    if [ -e "$VENV" ]; then
        # A venv made by another minor version (say, with PYTHON set differently), or whose
        # interpreter no longer runs, is made again: its installed packages do not fit.
        have_minor="$("$VENV/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true)"
        if [ "$have_minor" != "$want_minor" ]; then
            say "recreating $VENV with Python $want_minor ($python); it was made with ${have_minor:-an interpreter that no longer runs}"
            "$python" -m venv --clear "$VENV"
        fi
    else
        "$python" -m venv "$VENV"
    fi
    # Reinstall only when the dependency list changed.
    local stamp="$VENV/.pricefeed-installed"
    local want
    want="$(sha256sum "$ROOT/pyproject.toml" | cut -d' ' -f1)"
    if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
        say "installing pricefeed and its dev dependencies into $VENV ..."
        mkdir -p "$ROOT/var"
        if ! { "$VENV/bin/python" -m pip install --upgrade pip &&
               "$VENV/bin/python" -m pip install -e "$ROOT[dev]"; } >"$ROOT/var/pip.log" 2>&1; then
            tail -n 30 "$ROOT/var/pip.log" >&2; say "pip install failed (var/pip.log)"; exit 1
        fi
        echo "$want" > "$stamp"
    fi
    # The message catalogues' .mo files (not committed; the wheel build compiles them the
    # same way): those missing or older than their .po, in pure Python (no msgfmt).
    "$VENV/bin/python" "$ROOT/build_locale.py" || { say "compiling the message catalogues failed"; exit 1; }
}

ensure_bench_peers() {
    # The peers bench/outbox.py measures pricefeed against (the [bench] extra), for the
    # test that runs each benchmark's quick pass (tests/integration/test_benches.py).
    # (Found, not imported: post_office reads Django's settings when imported.)
    "$VENV/bin/python" -c 'import importlib.util as u, sys
sys.exit(not all(map(u.find_spec, ("procrastinate", "post_office"))))' 2>/dev/null && return 0
    say "installing the benchmarks' peers (the [bench] extra) into $VENV ..."
    mkdir -p "$ROOT/var"
    if ! "$VENV/bin/python" -m pip install -e "$ROOT[bench]" >"$ROOT/var/pip-bench.log" 2>&1; then
        tail -n 30 "$ROOT/var/pip-bench.log" >&2; say "pip install failed (var/pip-bench.log)"; exit 1
    fi
}

# Whether Debian packages can be installed here: as root, with apt-get.
can_apt() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; }

apt_install() { # PACKAGE...
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

ensure_debian_python() {
    # Debian's own python3 (3.11 on Debian 12) with its venv module (python3-venv), for
    # .ci/run's run on the lowest supported Python.
    /usr/bin/python3 -c 'import ensurepip' 2>/dev/null && return 0
    if can_apt; then
        say "installing python3 and python3-venv for the run on the lowest Python ..."
        apt_install python3 python3-venv
    else
        say "Debian's python3 with python3-venv is needed (apt-get install python3-venv)"
        exit 2
    fi
}

ensure_dovecot() {
    # Dovecot for the IMAP integration tests, faketime for the clock-skew test.
    command -v dovecot >/dev/null && command -v doveadm >/dev/null &&
        command -v faketime >/dev/null && return 0
    if can_apt; then
        say "installing Dovecot (dovecot-imapd) and faketime for the integration tests ..."
        # The package tries to start the system service; we only need the binaries.
        apt_install dovecot-imapd faketime
    else
        say "note: Dovecot or faketime is missing and cannot be installed without root;"
        say "      the tests that need them will be skipped (the pymap ones still run)."
    fi
}

ensure_gettext() {
    # GNU gettext's xgettext and msgmerge, which makemessages runs: the guard test of the
    # catalogues (tests/test_catalogue.py) extracts the strings of the code with them.
    # (Compiling needs no msgfmt: build_locale.py does it in Python.)
    command -v xgettext >/dev/null && command -v msgmerge >/dev/null && return 0
    if can_apt; then
        say "installing gettext for the catalogue test ..."
        apt_install gettext
    else
        say "note: GNU gettext is missing and cannot be installed without root;"
        say "      the catalogue test will be skipped (apt-get install gettext)."
    fi
}

ensure_redis() {
    # redis-server for the tests that run the pipeline on the Redis broker (each starts a
    # private one: its own port and directory, no persistence).
    command -v redis-server >/dev/null && return 0
    if can_apt; then
        say "installing redis-server for the Redis broker tests ..."
        # The package tries to start the system service; we only need the binary.
        apt_install redis-server
    else
        say "note: redis-server is missing and cannot be installed without root;"
        say "      the Redis broker tests will be skipped (apt-get install redis-server)."
    fi
}

rabbitmq_listening() {
    (exec 3<>/dev/tcp/127.0.0.1/5672) 2>/dev/null
}

ensure_rabbitmq() {
    # RabbitMQ on 127.0.0.1:5672 (guest/guest) for the tests of event delivery
    # (tests/delivery, tests/integration/test_delivery.py): the machine's own broker,
    # started here if it is down (installed first when it is missing and we may).
    rabbitmq_listening && return 0
    if ! command -v rabbitmq-server >/dev/null; then
        if can_apt; then
            say "installing rabbitmq-server for the event delivery tests ..."
            apt_install rabbitmq-server
        else
            say "note: RabbitMQ is not running and cannot be installed without root;"
            say "      the RabbitMQ tests will be skipped (apt-get install rabbitmq-server)."
            return 0
        fi
    fi
    rabbitmq_listening && return 0
    say "starting RabbitMQ (127.0.0.1:5672) ..."
    if [ "$(id -u)" = 0 ] && command -v service >/dev/null; then
        service rabbitmq-server start >/dev/null 2>&1 || rabbitmq-server -detached >/dev/null 2>&1 || true
    else
        rabbitmq-server -detached >/dev/null 2>&1 || true
    fi
    for _ in $(seq 1 120); do
        rabbitmq_listening && return 0
        sleep 0.5
    done
    say "note: RabbitMQ did not start listening on 127.0.0.1:5672 within 60 s."
}

ensure_chromium() {
    # Debian's Chromium for the browser test of the admin (tests/deploy); Playwright
    # drives it and downloads no browser of its own.
    command -v chromium >/dev/null && return 0
    if can_apt; then
        say "installing Chromium for the browser test of the admin ..."
        apt_install chromium
    else
        say "note: Chromium is missing and cannot be installed without root;"
        say "      the browser test of the admin will be skipped (apt-get install chromium)."
    fi
}

ensure_nginx() {
    # Debian's nginx for the test of the TLS proxy example (deploy/nginx.conf in front of
    # gunicorn; the test runs a private instance on a port of its own).
    command -v nginx >/dev/null && return 0
    if can_apt; then
        say "installing nginx for the test of the TLS proxy example ..."
        apt_install nginx
    else
        say "note: nginx is missing and cannot be installed without root;"
        say "      the test of the TLS proxy example will be skipped (apt-get install nginx)."
    fi
}

pg_ready() { # URL: a PostgreSQL server answers there and lets us in
    "$VENV/bin/python" - "$1" >/dev/null 2>&1 <<'PY'
import sys, psycopg
psycopg.connect(sys.argv[1], connect_timeout=3).close()
PY
}

# The command that runs pytest: as it is when DATABASE_URL is set or the local server on
# 5432 answers (DATABASE_URL then points at it), else under an embedded PostgreSQL in
# var/pgtest, a throwaway cluster started for the run and stopped after it
# (devkit/servers/postgres.py).
postgres_runner() {
    if [ -n "${DATABASE_URL:-}" ]; then
        return 0
    fi
    local url="postgres://postgres@127.0.0.1:5432/postgres"
    if pg_ready "$url"; then
        export DATABASE_URL="$url"
        return 0
    fi
    say "no PostgreSQL on 127.0.0.1:5432 and DATABASE_URL unset: using an embedded one in var/pgtest"
    POSTGRES_RUNNER=("$VENV/bin/python" -m devkit.servers.postgres --throwaway "$ROOT/var/pgtest" --)
}
