"""`haygraph ask/chat --tenant`: a CLI session bound to one tenant (in-process, BM25-only store, no model)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from haygraph.adapters.cli.main import main
from tests.adapters.tenant_helpers import build_bm25_store, store_tenants

WIDEN = "tenant=B"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_bm25_store(tmp_path_factory.mktemp("cli-tenant") / "store")


def ask(store: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict:
    assert main(["ask", "Globex travel policy business class", "--store", str(store), "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


class TestTenantFlag:
    def test_ask_sees_only_its_tenant(self, store: Path, capsys: pytest.CaptureFixture[str]) -> None:
        owner = store_tenants(store)
        unbound = ask(store, capsys)
        assert "B" in {owner[e["id"]] for e in unbound["evidence"]}  # the question is about Globex (B)
        bound = ask(store, capsys, "--tenant", "A")
        assert bound["evidence"] and {owner[e["id"]] for e in bound["evidence"]} == {"A"}
        assert bound["settings"]["tenant"] == "A"

    def test_a_filter_narrows_and_never_widens(self, store: Path, capsys: pytest.CaptureFixture[str]) -> None:
        result = ask(store, capsys, "--tenant", "A", "--filter", WIDEN)
        assert result["evidence"] == [] and result["status"] == "insufficient_evidence"

    def test_chat_is_bound_too(
        self, store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        owner = store_tenants(store)
        monkeypatch.setattr("sys.stdin", io.StringIO("What is the Globex travel policy?\nexit\n"))
        threads = str(tmp_path / "threads.sqlite")
        assert main(["chat", "--store", str(store), "--tenant", "B", "--json", "--threads-db", threads]) == 0
        [turn] = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
        assert turn["evidence"] and {owner[e["id"]] for e in turn["evidence"]} == {"B"}

    @pytest.mark.parametrize("bad", ["", "  ", "A\x00", "x" * 200])
    def test_an_unusable_tenant_is_one_error_line(
        self, store: Path, capsys: pytest.CaptureFixture[str], bad: str
    ) -> None:
        assert main(["ask", "leave", "--store", str(store), "--tenant", bad]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: --tenant")
