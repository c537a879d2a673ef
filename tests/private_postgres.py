"""A PostgreSQL server of a test's own, on a spare port, that the test may stop and start.

The shared server on 5432 is never touched. The cluster lives in a temporary folder owned
by the ``postgres`` user (initdb refuses to run as root), and is removed at the end.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg

from tests.helpers import free_port


def _bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if found:
        return found[-1]
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(f"{name} not found: install the PostgreSQL server binaries")
    return path


class PrivatePostgres:
    """``initdb`` once, then ``start``/``stop`` at will; ``url(db)`` for a database on it."""

    def __init__(self, root: Path, port: int) -> None:
        self.root = root
        self.port = port
        self.data = root / "data"
        self.log = root / "server.log"
        self._as_postgres = os.geteuid() == 0  # root runs the server as the postgres user

    def _run(self, *args: str, timeout: float = 120) -> None:
        command = ["runuser", "-u", "postgres", "--", *args] if self._as_postgres else list(args)
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
        if done.returncode != 0:
            tail = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{' '.join(args)} failed:\n{done.stdout}{done.stderr}\n{tail}")

    def init(self) -> None:
        if self._as_postgres:
            user = pwd.getpwnam("postgres")
            os.chown(self.root, user.pw_uid, user.pw_gid)
        self._run(
            _bin("initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust", "--no-sync"
        )

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c full_page_writes=off -c synchronous_commit=off"
        )
        self._run(
            _bin("pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-o", options,
            "-w", "-t", "60", "start",
        )  # fmt: skip

    def stop(self) -> None:
        """Stop the server now (``-m fast``: open connections are cut, as in a crash)."""
        self._run(_bin("pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def running(self) -> bool:
        command = [_bin("pg_ctl"), "-D", str(self.data), "status"]
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        return subprocess.run(command, capture_output=True, check=False).returncode == 0

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        with psycopg.connect(self.url(), autocommit=True, connect_timeout=10) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


#: The temporary folder as this module found it, before the suite moved TMPDIR under
#: pytest's folder (tests/conftest.py).
SYSTEM_TEMP = tempfile.gettempdir()


@contextlib.contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    """An initialised, stopped server on a spare port; stopped and removed afterwards."""
    # in the system's temporary folder: the postgres user must reach it, and pytest's own
    # folder (where TMPDIR points during the tests) is private to this user; removed below
    root = Path(tempfile.mkdtemp(prefix="js-private-pg-", dir=SYSTEM_TEMP))
    server = PrivatePostgres(root, free_port())
    try:
        server.init()
        yield server
    finally:
        if server.running():
            with contextlib.suppress(RuntimeError):
                server.stop()
        shutil.rmtree(root, ignore_errors=True)
