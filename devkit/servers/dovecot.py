"""A private, throwaway Dovecot IMAP server.

:class:`DovecotServer` writes a self-contained configuration into a fresh temporary directory
and runs ``dovecot -F -c <conf>`` from it: its own base_dir, state_dir and instance name, a
free port on 127.0.0.1, plaintext LOGIN, users in a passwd-file and maildirs under the
directory. The system Dovecot service and its configuration are never touched.

With ``tls=True`` the server also speaks TLS: a throwaway CA signs a certificate for the
names in ``tls_names`` (``localhost`` and 127.0.0.1 by default), the plain port offers
STARTTLS and a second port speaks implicit TLS (imaps). Clients trust the server by loading
:attr:`DovecotServer.ca_path`; plaintext LOGIN stays allowed on both ports.

Run as root, Dovecot keeps its usual privilege separation (login processes as ``dovenull``,
auth as ``dovecot``) and mail is accessed as uid/gid 65534, because Dovecot refuses to access
mail as root. Run as any other user, everything runs as that user with chroots disabled.

doveadm is run without ``-u`` and under the mail uid, with USER and HOME set, so it needs no
userdb lookup from the auth process: :meth:`DovecotServer.deliver` and friends work the same
whether the server is running or has been killed.
"""

from __future__ import annotations

import datetime
import grp
import ipaddress
import math
import os
import pwd
import re
import shutil
import socket
import stat
import subprocess
import tempfile
import time
import uuid
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from devkit.servers import (
    LOCALHOST,
    DevServerError,
    ServerResources,
    StartError,
    free_port,
    start_server_process,
)

__all__ = ["DovecotError", "DovecotServer"]

DEFAULT_USERS: Mapping[str, str] = {"pricefeed": "secret"}
DEFAULT_TLS_NAMES: tuple[str, ...] = ("localhost", LOCALHOST)
CERTIFICATE_DAYS = 30
NOBODY_ID = 65534
START_TIMEOUT = 15.0
DOVEADM_TIMEOUT = 30.0

# The user name ends up in a passwd-file line and in the maildir path (mail_location's %u).
_USER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@+-]{0,63}")
_FORBIDDEN_IN_PASSWORD = frozenset(":\r\n\0")
_SBIN_PATH = "/usr/local/sbin:/usr/sbin:/sbin"


class DovecotError(DevServerError):
    """Raised when doveadm fails or Dovecot cannot be used; quotes what they reported."""


def _binary(name: str) -> str | None:
    """Returns the path of a Dovecot program, also looking in the sbin directories."""
    return shutil.which(name) or shutil.which(name, path=_SBIN_PATH)


class DovecotServer:
    """Runs a private Dovecot instance for one test, benchmark or demo.

    ``users`` maps user names to plaintext passwords (default: ``pricefeed``/``secret``).
    The directory and configuration are created right away; :meth:`start` launches the
    server and :meth:`cleanup` removes everything again. As a context manager it starts on
    entry and cleans up on exit::

        with DovecotServer() as server:
            append_message(server.host, server.port, "pricefeed", "secret", raw)

    ``tls=True`` adds STARTTLS on :attr:`port` and implicit TLS on :attr:`tls_port`, with a
    certificate for ``tls_names`` (host names and IP addresses) issued by the CA in
    :attr:`ca_path`. Without it the server speaks plain IMAP only and offers no STARTTLS.
    """

    def __init__(
        self,
        users: Mapping[str, str] | None = None,
        *,
        tls: bool = False,
        tls_names: Sequence[str] = DEFAULT_TLS_NAMES,
    ) -> None:
        if tls and not tls_names:
            raise ValueError("a TLS server needs at least one name for its certificate")
        self._users: dict[str, str] = {}
        for name, password in (DEFAULT_USERS if users is None else users).items():
            _check_credentials(name, password)
            self._users[name] = password
        dovecot, doveadm = _binary("dovecot"), _binary("doveadm")
        if dovecot is None or doveadm is None:
            raise DovecotError(
                "dovecot and doveadm are not installed (see DovecotServer.available)"
            )
        self._dovecot = dovecot
        self._doveadm = doveadm
        self._rootless = os.geteuid() != 0
        if self._rootless:
            self._mail_uid, self._mail_gid = os.getuid(), os.getgid()
        else:
            self._mail_uid = self._mail_gid = NOBODY_ID
        self._tls = tls
        self._tls_names = tuple(tls_names)
        self._port = free_port()
        self._tls_port = free_port() if tls else 0
        self._instance = f"pricefeed-{uuid.uuid4().hex[:12]}"
        self._has_started = False
        self._passwd_mtime = 0
        self._root = Path(tempfile.mkdtemp(prefix="pricefeed-dovecot-")).resolve()
        self._resources = ServerResources(self._root)
        self._finalizer = weakref.finalize(self, self._resources.release)
        try:
            self._prepare()
        except BaseException:
            self._finalizer()
            raise

    # -- properties ---------------------------------------------------------------------

    @property
    def host(self) -> str:
        """Returns the address the server listens on (always 127.0.0.1)."""
        return LOCALHOST

    @property
    def port(self) -> int:
        """Returns the IMAP port; it stays the same across :meth:`restart`."""
        return self._port

    @property
    def tls(self) -> bool:
        """Tells whether the server offers STARTTLS and implicit TLS."""
        return self._tls

    @property
    def tls_port(self) -> int:
        """Returns the implicit-TLS (imaps) port; it stays the same across :meth:`restart`.

        Raises :class:`DovecotError` when the server was created without ``tls=True``.
        """
        self._require_tls()
        return self._tls_port

    @property
    def ca_path(self) -> Path:
        """Returns the PEM file of the CA that issued the server's certificate.

        Raises :class:`DovecotError` when the server was created without ``tls=True``.
        """
        self._require_tls()
        return self._tls_dir / "ca.pem"

    @property
    def root(self) -> Path:
        """Returns the private directory holding configuration, logs and maildirs."""
        return self._root

    @property
    def conf_path(self) -> Path:
        """Returns the path of the generated dovecot.conf."""
        return self._root / "dovecot.conf"

    @property
    def log_path(self) -> Path:
        """Returns the path of the log file Dovecot writes everything to."""
        return self._root / "dovecot.log"

    @property
    def running(self) -> bool:
        """Tells whether the master process started by :meth:`start` is still alive."""
        process = self._resources.process
        return process is not None and process.poll() is None

    @staticmethod
    def available() -> bool:
        """Tells whether the dovecot and doveadm programs are installed."""
        return _binary("dovecot") is not None and _binary("doveadm") is not None

    # -- lifecycle ----------------------------------------------------------------------

    def start(self, timeout: float = START_TIMEOUT) -> None:
        """Launches Dovecot and waits until it sends its IMAP greeting.

        Raises :class:`~devkit.servers.StartError` with the end of Dovecot's log when
        the server exits or does not greet within ``timeout`` seconds. If the port picked at
        construction has been taken by someone else in the meantime, the first start moves
        to new ports; later starts keep the ports.
        """
        if self._resources.process is not None:
            raise DovecotError("Dovecot is already running; use restart() to restart it")
        attempts = 1 if self._has_started else 3
        for attempt in range(1, attempts + 1):
            # Stale sockets and master.pid of a killed instance only cause trouble (a stale
            # anvil socket stalls the auth process for 5 s), so base_dir starts out empty.
            shutil.rmtree(self._base_dir, ignore_errors=True)
            self._base_dir.mkdir(mode=0o755)
            try:
                self._resources.process = start_server_process(
                    "Dovecot",
                    [self._dovecot, "-F", "-c", str(self.conf_path)],
                    port=self._port,
                    log_path=self.log_path,
                    cwd=self._root,
                    timeout=timeout,
                )
            except StartError as exc:
                if not exc.port_taken or attempt == attempts:
                    raise
                # The log does not say which listener failed to bind, so both move.
                self._port = free_port()
                if self._tls:
                    self._tls_port = free_port()
                self._write_config()
            else:
                self._has_started = True
                return

    def kill(self) -> None:
        """Kills Dovecot with SIGKILL, like a crash, and waits until the port is released.

        The whole process group goes: killing only the ``-F`` master would leave the log
        and stats processes, and every imap process with a connected client, running.
        Does nothing when the server is not running.
        """
        if self._resources.kill():
            self._wait_until_port_free()

    def stop(self) -> None:
        """Stops the server (by SIGKILL, see :meth:`kill`); calling it again is harmless."""
        self.kill()

    def restart(self, timeout: float = START_TIMEOUT) -> None:
        """Kills the server if it runs and starts it again on the same port(s).

        Configuration, users and maildirs are kept; only the runtime files in base_dir
        (sockets, pid file) are recreated.
        """
        self.kill()
        self.start(timeout)

    def cleanup(self) -> None:
        """Stops the server and removes its directory, maildirs included.

        Also happens when the object is garbage-collected or the interpreter exits.
        """
        self._finalizer()

    def __enter__(self) -> DovecotServer:
        try:
            self.start()
        except BaseException:
            self.cleanup()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.cleanup()

    # -- users and mail -----------------------------------------------------------------

    def add_user(self, name: str, password: str) -> None:
        """Adds a user, or changes the password of an existing one.

        Works while the server runs: Dovecot re-reads the passwd-file when its mtime or
        size changes, and the mtime is bumped so that even a same-length password change
        is noticed. Dovecot looks at the file at most once per second, though, so while
        the server runs this waits for the next second to begin (up to 1 s).
        """
        _check_credentials(name, password)
        self._users[name] = password
        self._write_passwd()
        if self.running:
            time.sleep(math.floor(time.time()) + 1.01 - time.time())

    def deliver(self, user: str, raw: bytes, folder: str = "INBOX") -> None:
        """Stores a message into ``folder`` of ``user`` with ``doveadm save``.

        Works whether the server runs or not; IMAP clients in IDLE are told about the
        new message within about half a second.
        """
        self._run_doveadm(user, ["save", "-m", folder], stdin=raw)

    def create_folder(self, user: str, name: str) -> None:
        """Creates (and subscribes) the folder ``name`` for ``user``."""
        self._run_doveadm(user, ["mailbox", "create", "-s", name])

    def set_uidvalidity(self, user: str, value: int, folder: str = "INBOX") -> None:
        """Changes the UIDVALIDITY of ``folder``, as a server whose mailbox was rebuilt would."""
        if not 0 < value < 2**32:
            raise ValueError(f"UIDVALIDITY must be between 1 and 2**32 - 1, not {value}")
        self._run_doveadm(user, ["mailbox", "update", "--uid-validity", str(value), folder])

    def uidvalidity(self, user: str, folder: str = "INBOX") -> int:
        """Returns the current UIDVALIDITY of ``folder``."""
        output = self._run_doveadm(user, ["-f", "flow", "mailbox", "status", "uidvalidity", folder])
        match = re.search(r"\buidvalidity=(\d+)", output)
        if match is None:
            raise DovecotError(f"unexpected output from doveadm mailbox status: {output!r}")
        return int(match.group(1))

    # -- internals ----------------------------------------------------------------------

    @property
    def _base_dir(self) -> Path:
        return self._root / "base"

    @property
    def _tls_dir(self) -> Path:
        return self._root / "tls"

    @property
    def _passwd_path(self) -> Path:
        return self._root / "passwd"

    @property
    def _mail_dir(self) -> Path:
        return self._root / "mail"

    def _home(self, user: str) -> Path:
        return self._root / "home" / user

    def _prepare(self) -> None:
        """Creates the directory tree, passwd-file, configuration and log file."""
        # mkdtemp makes the directory 0700; the auth process (user "dovecot") has to read
        # the passwd-file and the mail processes (uid 65534) have to reach the maildirs.
        self._root.chmod(0o755)
        if not self._rootless:
            _check_searchable(self._root)
        for directory in (self._root / "state", self._mail_dir, self._root / "home"):
            directory.mkdir(mode=0o755)
            self._give_to_mail_user(directory)
        self._write_passwd()
        if self._tls:
            self._write_certificates()
        self._write_config()
        self.log_path.touch(mode=0o644)

    def _require_tls(self) -> None:
        if not self._tls:
            raise DovecotError("this server has no TLS; create it with DovecotServer(tls=True)")

    def _write_certificates(self) -> None:
        """Writes the CA certificate, and the server certificate and key it signs.

        The CA's key is thrown away: nothing else is ever signed with it. Dovecot's config
        process (root, or the rootless user) reads the key, so it can stay private.
        """
        self._tls_dir.mkdir(mode=0o755)
        ca_pem, cert_pem, key_pem = _certificates(self._tls_names)
        for name, data, mode in (
            ("ca.pem", ca_pem, 0o644),
            ("server.pem", cert_pem, 0o644),
            ("server.key", key_pem, 0o600),
        ):
            path = self._tls_dir / name
            path.touch(mode=mode)
            path.write_bytes(data)

    def _give_to_mail_user(self, path: Path) -> None:
        """Hands ``path`` to the mail uid/gid when running as root."""
        if not self._rootless:
            os.chown(path, self._mail_uid, self._mail_gid)

    def _write_passwd(self) -> None:
        """Writes the passwd-file atomically and bumps its mtime past the previous one."""
        lines = []
        for name, password in self._users.items():
            home = self._home(name)
            if not home.exists():
                home.mkdir(mode=0o700)
                self._give_to_mail_user(home)
            lines.append(
                f"{name}:{{PLAIN}}{password}:{self._mail_uid}:{self._mail_gid}::{home}::\n"
            )
        temporary = self._passwd_path.with_suffix(".tmp")
        temporary.write_text("".join(lines), encoding="utf-8")
        temporary.chmod(0o644)
        mtime = max(int(time.time()), self._passwd_mtime + 1)
        os.utime(temporary, (mtime, mtime))
        os.replace(temporary, self._passwd_path)
        self._passwd_mtime = mtime

    def _write_config(self) -> None:
        """Writes dovecot.conf for the current port(s)."""
        self.conf_path.write_text(self._config_text(), encoding="utf-8")
        self.conf_path.chmod(0o644)

    def _config_text(self) -> str:
        """Returns the complete Dovecot configuration of this instance."""
        # Unprivileged processes cannot chroot, so rootless mode empties every chroot
        # Dovecot 2.3 sets by default for the services an IMAP server may start.
        chroot = "  chroot =\n" if self._rootless else ""
        if self._rootless:
            user = pwd.getpwuid(os.getuid()).pw_name
            group = grp.getgrgid(os.getgid()).gr_name
            identity = (
                f"default_internal_user = {user}\n"
                f"default_internal_group = {group}\n"
                f"default_login_user = {user}\n"
                "service ipc {\n  chroot =\n}\n"
                "service old-stats {\n  chroot =\n}\n"
            )
        else:
            identity = ""
        if self._tls:
            tls = (
                "ssl = yes\n"
                f"ssl_cert = <{self._tls_dir / 'server.pem'}\n"
                f"ssl_key = <{self._tls_dir / 'server.key'}\n"
            )
            imaps = (
                "  inet_listener imaps {\n"
                f"    address = {LOCALHOST}\n"
                f"    port = {self._tls_port}\n"
                "    ssl = yes\n"
                "  }\n"
            )
        else:
            tls = "ssl = no\n"
            imaps = "  inet_listener imaps {\n    port = 0\n  }\n"
        passwd = self._passwd_path
        return (
            "# Generated by devkit.servers.dovecot for a throwaway server.\n"
            f"base_dir = {self._base_dir}\n"
            f"state_dir = {self._root / 'state'}\n"
            f"instance_name = {self._instance}\n"
            f"log_path = {self.log_path}\n"
            f"info_log_path = {self.log_path}\n"
            f"listen = {LOCALHOST}\n"
            "protocols = imap\n"
            f"{tls}"
            # Also with TLS: tests append over the plain port without STARTTLS.
            "disable_plaintext_auth = no\n"
            "auth_mechanisms = plain login\n"
            "auth_verbose = yes\n"
            # Fail wrong passwords fast. Dovecot still answers a failure only on its
            # next 0.5 s failure-queue tick; that part cannot be configured away.
            "auth_failure_delay = 0\n"
            f"mail_location = maildir:{self._mail_dir}/%u\n"
            f"mail_uid = {self._mail_uid}\n"
            f"mail_gid = {self._mail_gid}\n"
            "first_valid_uid = 0\n"
            "first_valid_gid = 0\n"
            "mail_fsync = never\n"
            # One imap process per session; the default cap of 100 is too low for a
            # benchmark that listens to a hundred mailboxes while others hand over.
            "default_process_limit = 1000\n"
            "default_client_limit = 4000\n"
            f"{identity}"
            "passdb {\n"
            "  driver = passwd-file\n"
            f"  args = scheme=PLAIN username_format=%u {passwd}\n"
            "}\n"
            "userdb {\n"
            "  driver = passwd-file\n"
            f"  args = username_format=%u {passwd}\n"
            "}\n"
            "protocol imap {\n"
            # Benchmarks open many connections as one user from one address.
            "  mail_max_userip_connections = 1000\n"
            "}\n"
            "service imap-login {\n"
            f"{chroot}"
            "  inet_listener imap {\n"
            f"    address = {LOCALHOST}\n"
            f"    port = {self._port}\n"
            "  }\n"
            f"{imaps}"
            "}\n"
            "service anvil {\n"
            f"{chroot}"
            # No auth penalty: after a failed login, anvil would otherwise delay every
            # following login from 127.0.0.1 by 2, 4, 8 ... 15 s.
            "  unix_listener anvil-auth-penalty {\n"
            "    mode = 0\n"
            "  }\n"
            "}\n"
        )

    def _wait_until_port_free(self, timeout: float = 5.0) -> None:
        """Waits until nothing listens on the port(s) any more (killed children exit async)."""
        deadline = time.monotonic() + timeout
        for port in (self._port, self._tls_port) if self._tls else (self._port,):
            while not _port_free(port):
                if time.monotonic() >= deadline:
                    raise DovecotError(
                        f"port {port} still busy {timeout:.0f} s after killing Dovecot"
                    )
                time.sleep(0.01)

    def _run_doveadm(self, user: str, arguments: list[str], stdin: bytes | None = None) -> str:
        """Runs doveadm for ``user`` directly on the maildir and returns its output.

        doveadm runs without ``-u`` and as the mail uid: ``-u`` would ask the auth process
        for a userdb lookup, which fails while the server is down. The stats socket is
        switched off so that doveadm does not complain about the server's permissions.
        """
        if user not in self._users:
            raise ValueError(f"unknown user {user!r}; add it with add_user() first")
        command = [
            self._doveadm,
            "-c",
            str(self.conf_path),
            "-o",
            "stats_writer_socket_path=",
            *arguments,
        ]
        environment = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "USER": user,
            "HOME": str(self._home(user)),
        }
        credentials: dict[str, Any] = {}
        if not self._rootless:
            credentials = {"user": self._mail_uid, "group": self._mail_gid, "extra_groups": []}
        result = subprocess.run(
            command,
            input=stdin,
            capture_output=True,
            env=environment,
            cwd=self._root,
            timeout=DOVEADM_TIMEOUT,
            check=False,
            **credentials,
        )
        if result.returncode != 0:
            raise DovecotError(
                f"doveadm {' '.join(arguments)} for {user} failed with status "
                f"{result.returncode}: {result.stderr.decode('utf-8', 'replace').strip()}"
            )
        return result.stdout.decode("utf-8", "replace")


def _port_free(port: int) -> bool:
    """Tells whether nothing listens on ``port`` of 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # Dovecot binds with SO_REUSEADDR too, so only a live listener conflicts.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((LOCALHOST, port))
        except OSError:
            return False
        return True


def _certificates(names: Sequence[str]) -> tuple[bytes, bytes, bytes]:
    """Returns a new CA certificate and a server certificate and key it signs, as PEM.

    The server certificate lists ``names`` as subjectAltNames: IP addresses as IP entries,
    everything else as DNS names. Both carry the extensions strict verifiers insist on
    (Python 3.13 sets VERIFY_X509_STRICT by default): key usages, basic constraints and key
    identifiers.
    """
    now = datetime.datetime.now(datetime.UTC)
    not_before = now - datetime.timedelta(hours=1)
    not_after = now + datetime.timedelta(days=CERTIFICATE_DAYS)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "pricefeed devservers"),
            x509.NameAttribute(
                NameOID.COMMON_NAME, f"pricefeed throwaway CA {uuid.uuid4().hex[:8]}"
            ),
        ]
    )
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ca_ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    alt_names: list[x509.GeneralName] = []
    for name in names:
        try:
            alt_names.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            alt_names.append(x509.DNSName(name))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return (
        ca_cert.public_bytes(serialization.Encoding.PEM),
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )


def _check_credentials(name: str, password: str) -> None:
    """Raises ValueError for names or passwords that do not fit a passwd-file line."""
    if not _USER_NAME.fullmatch(name):
        raise ValueError(f"unsupported user name {name!r}")
    if _FORBIDDEN_IN_PASSWORD.intersection(password):
        raise ValueError("passwords may not contain ':', CR, LF or NUL")


def _check_searchable(directory: Path) -> None:
    """Raises DovecotError unless every parent of ``directory`` is searchable by others.

    Dovecot's auth process runs as user "dovecot" and the mail processes as uid 65534;
    neither can reach a directory below a 0700 one such as pytest's ``tmp_path``.
    """
    for parent in directory.parents:
        if not parent.stat().st_mode & stat.S_IXOTH:
            raise DovecotError(
                f"{parent} is not searchable by other users, so Dovecot's unprivileged "
                f"processes cannot reach {directory}; point TMPDIR somewhere like /tmp"
            )
