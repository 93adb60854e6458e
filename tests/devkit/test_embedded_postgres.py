"""The embedded PostgreSQL of the demo and the tests (devkit/servers/postgres.py)."""

from __future__ import annotations

import os
import shutil

import psycopg
import pytest

from devkit.servers.postgres import EmbeddedPostgres


@pytest.mark.skipif(
    os.geteuid() != 0,
    reason="only under root does the server run as another user, whom a private directory "
    "keeps out",
)
def test_under_a_directory_the_server_cannot_enter_root_gets_a_cluster_under_var_tmp(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o700)  # as root's home on Debian
    asked = home / "checkout" / "var" / "postgres"
    server = EmbeddedPostgres(asked, durable=False)
    try:
        assert not server.data.is_relative_to(home)
        assert server.data == EmbeddedPostgres(asked).data  # the same one each time
        server.start()
        with psycopg.connect(server.url, connect_timeout=10) as conn:
            assert conn.execute("SELECT current_database()").fetchone() == ("pricefeed",)
        server.stop()
        assert not server.running()
    finally:
        server.stop()
        shutil.rmtree(server.data, ignore_errors=True)
