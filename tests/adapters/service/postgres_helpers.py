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


@contextmanager
def postgres_server() -> Iterator[str]:
    """Start a private PostgreSQL server; yields its `postgresql://` URL; stops it and removes its files."""
    bin_dir = find_pg_bin()
    if bin_dir is None:
        raise RuntimeError("initdb not found")
    root = Path(tempfile.mkdtemp(prefix="haygraph-pg-"))
    data = root / "data"
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    root.chmod(0o700)
    port = _free_port()
    run = {"check": True, "capture_output": True, "timeout": 120}
    try:
        subprocess.run(
            _as_postgres(
                [str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8"]
            ),
            **run,  # type: ignore[call-overload]
        )
        options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
        subprocess.run(
            _as_postgres(
                [
                    str(bin_dir / "pg_ctl"),
                    "-D",
                    str(data),
                    "-o",
                    options,
                    "-l",
                    str(root / "log"),
                    "-w",
                    "start",
                ]
            ),
            **run,  # type: ignore[call-overload]
        )
        try:
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            subprocess.run(
                _as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]),
                check=False,
                capture_output=True,
                timeout=60,
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)
