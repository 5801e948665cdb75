"""A throw-away PostgreSQL server for tests: initdb in a temp dir, 127.0.0.1 on a free port, stopped after.

Not a test module. Uses the Debian `postgresql` binaries; as root they run as the `postgres` user.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def find_pg_bin() -> Path | None:
    """The directory holding `initdb` and `pg_ctl`, or None."""
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(candidates[-1]).parent if candidates else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_postgres(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    runuser = shutil.which("runuser")
    if runuser is None:
        raise RuntimeError("running as root without runuser: cannot start PostgreSQL as a non-root user")
    return [runuser, "-u", "postgres", "--", *cmd]


class PostgresCluster:
    """A private PostgreSQL server in a temp dir on 127.0.0.1: `url`, `stop()` and `start()` again."""

    def __init__(self, bin_dir: Path, root: Path, port: int) -> None:
        self.bin_dir, self.root, self.port = bin_dir, root, port
        self.data = root / "data"
        self.url = f"postgresql://postgres@127.0.0.1:{port}/postgres"

    def _pg_ctl(self, *args: str, check: bool = True) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        cmd = [
            str(self.bin_dir / "pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.root / "log"),
        ]
        subprocess.run(_as_postgres([*cmd, *args]), check=check, capture_output=True, timeout=120)

    def start(self) -> None:
        """Start the server (waits until it accepts connections)."""
        self._pg_ctl("-w", "start")

    def stop(self, mode: str = "fast", *, check: bool = True) -> None:
        """Stop the server (`fast`: disconnect clients, then shut down)."""
        self._pg_ctl("-m", mode, "-w", "stop", check=check)


@contextmanager
def postgres_cluster() -> Iterator[PostgresCluster]:
    """Start a private PostgreSQL server; yields it; stops it and removes its files."""
    bin_dir = find_pg_bin()
    if bin_dir is None:
        raise RuntimeError("initdb not found")
    root = Path(tempfile.mkdtemp(prefix="haygraph-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    root.chmod(0o700)
    cluster = PostgresCluster(bin_dir, root, _free_port())
    try:
        subprocess.run(
            _as_postgres(
                [
                    str(bin_dir / "initdb"),
                    "-D",
                    str(cluster.data),
                    "-A",
                    "trust",
                    "-U",
                    "postgres",
                    "-E",
                    "UTF8",
                ]
            ),
            check=True,
            capture_output=True,
            timeout=120,
        )
        cluster.start()
        try:
            yield cluster
        finally:
            cluster.stop(check=False)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def postgres_server() -> Iterator[str]:
    """Start a private PostgreSQL server; yields its `postgresql://` URL; stops it and removes its files."""
    with postgres_cluster() as cluster:
        yield cluster.url
