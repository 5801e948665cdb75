"""Calls that would hang or read without end if a regression let a FIFO or a device be read.

`within` runs a call in a daemon thread and fails the test when it has not returned in time (the
`fifo` fixture of ``tests/conftest.py`` releases a reader stuck on its FIFO afterwards); `run_bounded`
runs code in a fresh interpreter with a 3 GiB address-space limit and a timeout, for ``/dev/zero``.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

import pytest

TIMEOUT = 60.0
"""Seconds a refused FIFO or device may take (it takes milliseconds; model loading may come first)."""


def within(seconds: float, call: Callable[[], Any]) -> Any:
    """Run `call` in a daemon thread; fail the test (instead of hanging) if it has not returned in time."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # handed back to the test below
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"still running after {seconds} s: a FIFO or device is being read")
    if "error" in box:
        raise box["error"]
    return box.get("value")


def run_bounded(code: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter with a 3 GiB address-space limit and a timeout."""
    limit = "import resource; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))\n"
    return subprocess.run(
        [sys.executable, "-c", limit + code], capture_output=True, text=True, timeout=timeout, check=False
    )
