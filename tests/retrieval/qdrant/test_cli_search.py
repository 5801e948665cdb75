"""`haygraph search --config qdrant.yaml` needs no `--store`: the collection the config names is the store."""

from pathlib import Path

import pytest
import yaml

from haygraph.adapters.cli.main import main
from haygraph.retrieval.config import RetrievalConfig
from haygraph.retrieval.knowledge_base import KnowledgeBase

TRAVEL = "# Travel\n\nBook flights at least fourteen days before departure in TripDesk.\n"


def test_search_with_a_qdrant_config_needs_no_store(tmp_path: Path, qdrant_settings, capsys) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "travel.md").write_text(TRAVEL, encoding="utf-8")
    data = {"store": qdrant_settings.model_dump(exclude_none=True), "query": {"mode": "bm25"}}
    kb = KnowledgeBase(RetrievalConfig.from_dict(data))
    kb.index([docs])
    config = tmp_path / "qdrant.yaml"
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert main(["search", "flights", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "source: travel.md" in out


@pytest.mark.parametrize("extra", [[], ["--config", "embedded.yaml"]], ids=["no-config", "embedded-config"])
def test_search_without_store_needs_a_qdrant_config(tmp_path: Path, capsys, extra, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "embedded.yaml").write_text("query: {mode: bm25}\n", encoding="utf-8")
    assert main(["search", "flights", *extra]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: --store is required, unless --config names a Qdrant or PostgreSQL store "
        "(store: {backend: qdrant} or {backend: postgres})"
    )
