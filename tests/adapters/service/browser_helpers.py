"""Helpers of the web page's browser tests: Debian's Chromium, a real `haygraph serve`, page actions.

Not a test module. Screenshots and the timing figures go to `build/browser-artefacts/`
(`$HAYGRAPH_BROWSER_ARTEFACTS` overrides it).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
ANSWER_TIMEOUT_MS = 90_000


def chromium_path() -> str | None:
    """Debian's chromium binary, if installed."""
    if Path(CHROMIUM).is_file():
        return CHROMIUM
    return shutil.which("chromium")


def artefacts_dir() -> Path:
    """Where screenshots and figures are saved (created)."""
    default = Path(__file__).resolve().parents[3] / "build" / "browser-artefacts"
    folder = Path(os.environ.get("HAYGRAPH_BROWSER_ARTEFACTS") or default)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def haygraph_serve(args: list[str], env: dict[str, str], log: Path) -> Iterator[str]:
    """Run `haygraph serve ARGS --port P` as a process until ready; yields its URL; stops it with SIGINT."""
    port = free_port()
    exe = Path(sys.executable).with_name("haygraph")
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(exe), "serve", *args, "--port", str(port)], stdout=out, stderr=subprocess.STDOUT, env=env
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 180
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"haygraph serve exited: {log.read_text(errors='replace')[-2000:]}")
                try:
                    if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("haygraph serve did not start within 180 s")
                time.sleep(0.2)
            yield url
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def flat(text: str) -> str:
    """Text without Markdown markers and with single spaces (how an answer quotes a chunk)."""
    return " ".join(re.sub(r"[*_`#>|]", " ", text).split())


def sign_in(page: Any, url: str, key: str) -> None:
    """Open the page and sign in with `key`."""
    from playwright.sync_api import expect

    page.goto(url)
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("tab", name="Chat")).to_be_visible()


def ask(page: Any, question: str) -> Any:
    """Ask `question` on the chat tab (Enter in the question box); the answer's message once it is final."""
    from playwright.sync_api import expect

    before = page.locator(".message.assistant").count()
    box = page.get_by_label("Your question")
    box.fill(question)
    box.press("Enter")
    item = page.locator(".message.assistant").nth(before)
    expect(item).to_have_attribute("data-status", re.compile(r"\w+"), timeout=ANSWER_TIMEOUT_MS)
    return item
