"""A private ``redis-server`` for tests: its own port, directory and password (as
production needs one: core.brokers.check_redis_security), no persistence."""

from __future__ import annotations

import secrets
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

from . import LOCALHOST, free_port
from .processes import wait_until


class RedisServer:
    def __init__(self) -> None:
        self.host = LOCALHOST
        self.port = 0
        self.password = secrets.token_hex(16)
        self.dir: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None

    @staticmethod
    def available() -> bool:
        return shutil.which("redis-server") is not None

    @property
    def url(self) -> str:
        return f"redis://:{self.password}@{self.host}:{self.port}/0"

    def ping(self) -> bool:
        try:
            with socket.create_connection((self.host, self.port), timeout=1) as sock:
                sock.sendall(f"AUTH {self.password}\r\nPING\r\n".encode())
                answer = b""
                while len(answer) < 12 and (chunk := sock.recv(16)):
                    answer += chunk
                return answer.startswith(b"+OK\r\n+PONG")
        except OSError:
            return False

    def start(self) -> RedisServer:
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="pricefeed-redis-"))
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port", str(self.port),
                "--bind", self.host,
                "--requirepass", self.password,
                "--dir", str(self.dir),
                "--save", "",
                "--appendonly", "no",
                "--daemonize", "no",
                "--logfile", str(self.dir / "redis.log"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        wait_until(self.ping, 15, f"redis-server on port {self.port}", interval=0.1)
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
