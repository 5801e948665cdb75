"""Hostile command-line arguments, run in-process through `haygraph.adapters.cli.main.main(argv)`.

Every run exits 0 with a correct result (`--tenant A` answers cite only A's chunks), or exits 1/2
with exactly one `error: ...` line on stderr that is short and not "unexpected failure" — never a
traceback. Runs that write (`index`, `remove`) go to a copy of the store, whose sources must all
still be there afterwards (no data lost). A few cases run as real subprocesses, with argument bytes
that are not UTF-8 and a chat fed NUL, control and RTL characters on stdin.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest

from haygraph.adapters.cli.main import main
from haygraph.adapters.tenancy import visible_to
from haygraph.retrieval.embedding_cache import CachedDocumentEmbedder
from haygraph.retrieval.store import EmbeddedDocumentStore
from tests.adapters.tenant_helpers import store_tenants
from tests.adversarial.conftest import Tally
from tests.adversarial.inputs import BAD_STRINGS, ids
from tests.retrieval.store_helpers import fake_warm_up

SURFACE = "cli"
COMMANDS: dict[str, Callable[[str, str], list[str]]] = {
    "search-query": lambda v, s: ["search", v, "--store", s],
    "ask-question": lambda v, s: ["ask", v, "--store", s, "--json", "--tenant", "A"],
    "ask-tenant": lambda v, s: [
        "ask",
        "How many days of annual leave?",
        "--store",
        s,
        "--json",
        "--tenant",
        v,
    ],
    "ask-thread": lambda v, s: ["ask", "leave policy", "--store", s, "--thread", v, "--tenant", "A"],
    "search-filter": lambda v, s: ["search", "leave policy", "--store", s, "--filter", v],
    "search-top-k": lambda v, s: ["search", "leave policy", "--store", s, "--top-k", v],
    "search-store": lambda v, s: ["search", "leave policy", "--store", v],
    "remove-source": lambda v, s: ["remove", v, "--store", s],
    "index-path": lambda v, s: ["index", v, "--store", s, "--no-progress", "--no-delete"],
}
WRITES = {"remove-source", "index-path"}


def sources(store: Path) -> set[tuple[str | None, str]]:
    return {(d.meta.get("tenant"), d.meta["source_id"]) for d in EmbeddedDocumentStore.load(store).documents}


@pytest.fixture(scope="module")
def stores(bm25_tenant_store: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    writable = tmp_path_factory.mktemp("adv-cli") / "store"
    shutil.copytree(bm25_tenant_store, writable)
    return {
        "read": bm25_tenant_store,
        "write": writable,
        "owner": store_tenants(bm25_tenant_store),
        "sources": sources(writable),
    }


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        with patch.object(CachedDocumentEmbedder, "warm_up", fake_warm_up):
            code = main(argv)
    except SystemExit as exc:  # argparse usage errors
        code = exc.code if isinstance(exc.code, int) else 2
    out, err = capsys.readouterr()
    return code, out, err


def judge_exit(code: int, out: str, err: str) -> tuple[str, str]:
    """(outcome, detail) of a finished CLI run, by its exit code and output."""
    if "Traceback" in err or "Traceback" in out:
        return "crash", err[-300:]
    if code == 0:
        return "ok", ""
    lines = [line for line in err.splitlines() if line.strip()]
    clear = (
        code in (1, 2)
        and len(lines) == 1
        and lines[0].startswith("error: ")
        and "unexpected failure" not in lines[0]
        and len(lines[0]) < 2000
    )
    return ("clear_error" if clear else "unclear"), f"exit {code}: {err[:300]!r}"


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize(("label", "value"), BAD_STRINGS, ids=ids(BAD_STRINGS))
def test_hostile_argument(
    stores: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
    classify: Callable[..., None],
    tally: Tally,
    command: str,
    label: str,
    value: str,
) -> None:
    store = stores["write" if command in WRITES else "read"]
    with tally.timed(SURFACE, label):
        code, out, err = run(COMMANDS[command](value, str(store)), capsys)
    outcome, detail = judge_exit(code, out, err)
    if (
        outcome == "ok"
        and "--json" in COMMANDS[command](value, "S")
        and "--tenant" in COMMANDS[command](value, "S")
    ):
        result = json.loads(out)
        leaked = [
            e["id"]
            for e in result["evidence"]
            if not visible_to(result["settings"].get("tenant"), stores["owner"].get(e["id"]))
        ]
        if leaked:
            outcome, detail = "foreign_chunk", str(leaked[:3])
    if command in WRITES and not stores["sources"] <= sources(stores["write"]):
        outcome, detail = "data_lost", f"{command} {label}: {stores['sources'] - sources(stores['write'])}"
    classify(SURFACE, outcome, f"{command}={label}: {detail}")


def _haygraph() -> list[str]:
    script = Path(sys.executable).with_name("haygraph")
    return [str(script)] if script.exists() else [sys.executable, "-m", "haygraph.adapters.cli.main"]


HOSTILE_STDIN = b"\xff\xfe\x00\x01\n" + "\u202eabc \u200b\n".encode() + b"\x1b[31m\nhello\n"
SUBPROCESS_CASES = [
    ("search-invalid-utf8", [b"search", b"\xff\xfe leave \xc3\x28", b"--store"], None),
    ("ask-invalid-utf8", [b"ask", b"\xc3\x28\xa0\xa1", b"--json", b"--store"], None),
    ("tenant-invalid-utf8", [b"ask", b"leave", b"--tenant", b"\xff", b"--store"], None),
    ("search-shell-meta", [b"search", b"$(reboot); rm -rf / | `id`", b"--store"], None),
    ("chat-hostile-stdin", [b"chat", b"--tenant", b"A", b"--store"], HOSTILE_STDIN),
    ("chat-huge-line", [b"chat", b"--store"], b"leave " * 200_000 + b"\n"),
]  # fmt: skip


@pytest.mark.parametrize(("label", "argv", "stdin"), SUBPROCESS_CASES, ids=[c[0] for c in SUBPROCESS_CASES])
def test_subprocess(
    stores: dict[str, Any],
    tmp_path: Path,
    classify: Callable[..., None],
    label: str,
    argv: list[bytes],
    stdin: bytes | None,
) -> None:
    store = tmp_path / "store"
    shutil.copytree(stores["read"], store)
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HAYSTACK_TELEMETRY_ENABLED": "False",
    }
    command = [*map(os.fsencode, _haygraph()), *argv, os.fsencode(store)]
    proc = subprocess.run(command, input=stdin or b"", capture_output=True, timeout=120, env=env)
    err = proc.stderr.decode("utf-8", "replace")
    outcome, detail = judge_exit(proc.returncode, proc.stdout.decode("utf-8", "replace"), err)
    classify(SURFACE + "-subprocess", outcome, f"{label}: {detail}")
