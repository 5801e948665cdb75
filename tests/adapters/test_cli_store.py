"""`haygraph index` / `haygraph remove` and the store under crashes and concurrent writers (issue 11).

`TestIndexAndRemoveOptions` runs `main()` in-process with the embedding model patched out. The
integration classes run the real console script: `kill -9` at random points during `index`, and two
writers at once. They index the bundled handbook, whose embeddings are in the session cache (filled by
`handbook_store`), so no process loads the model.
"""

from __future__ import annotations

import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from haygraph.adapters.cli.main import main
from haygraph.retrieval import sample_handbook_path
from haygraph.retrieval.config import RetrievalConfig
from haygraph.retrieval.embedding_cache import CachedDocumentEmbedder
from haygraph.retrieval.knowledge_base import KnowledgeBase
from haygraph.retrieval.store import EmbeddedDocumentStore
from tests.adapters import test_cli as cli_tests
from tests.adapters.test_cli import assert_one_error_line, haygraph_command, run_cli
from tests.retrieval.store_helpers import fake_warm_up

cli_env = cli_tests.cli_env  # the session fixture: offline settings and the session's embedding cache

KILL_TRIALS = 10


def _ids(store: Path) -> set[str]:
    return {d.id for d in EmbeddedDocumentStore.load(store).documents}


def _sources(store: Path) -> dict[str, str | None]:
    return {d.meta["source_id"]: d.meta.get("tenant") for d in EmbeddedDocumentStore.load(store).documents}


class TestIndexAndRemoveOptions:
    @pytest.fixture(autouse=True)
    def no_model(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(CachedDocumentEmbedder, "warm_up", fake_warm_up)

    @pytest.fixture
    def docs(self, tmp_path: Path) -> Path:
        root = tmp_path / "docs"
        (root / "sub").mkdir(parents=True)
        (root / "sub" / "travel.md").write_text("# Travel\n\nBook flights in TripDesk two weeks ahead.\n")
        (root / "pets.md").write_text("# Pets\n\nDogs may come to the office on Fridays.\n")
        (root / "budget.rtf").write_bytes(b"PK\x03\x04")
        return root

    def test_meta_tenant_and_skipped_files_are_printed(
        self, docs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        store = tmp_path / "kb"
        args = ["index", str(docs), "--store", str(store), "--no-progress", "--meta", "tenant=acme"]
        assert main([*args, "--meta", "team=hr"]) == 0
        out = capsys.readouterr().out
        assert f"skipped {docs / 'budget.rtf'}: unsupported file type '.rtf'" in out
        assert _sources(store) == {"sub/travel.md": "acme", "pets.md": "acme"}
        assert {d.meta["team"] for d in EmbeddedDocumentStore.load(store).documents} == {"hr"}

    def test_gone_files_are_removed_unless_no_delete(
        self, docs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        store = tmp_path / "kb"
        index = ["index", str(docs), "--store", str(store), "--no-progress"]
        assert main(index) == 0
        (docs / "pets.md").unlink()
        assert main([*index, "--no-delete"]) == 0
        assert "pets.md" in _sources(store) and "whose files are gone" not in capsys.readouterr().out
        assert main(index) == 0
        assert "removed 1 source(s) whose files are gone: pets.md" in capsys.readouterr().out
        assert set(_sources(store)) == {"sub/travel.md"}

    def test_missing_current_keeps_the_previous_version(
        self, docs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        # regression: with CURRENT missing, `haygraph index NEW --store S` deleted the intact version
        store = tmp_path / "kb"
        assert main(["index", str(docs), "--store", str(store), "--no-progress"]) == 0
        (store / "CURRENT").unlink()
        new = tmp_path / "new.md"
        new.write_text("# New\n\nThe library opens at nine.\n")
        assert main(["index", str(new), "--store", str(store), "--no-progress"]) == 0
        assert "holds 3 chunk(s)" in capsys.readouterr().out
        assert set(_sources(store)) == {"sub/travel.md", "pets.md", "new.md"}

    def test_remove_command(self, docs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        store = tmp_path / "kb"
        assert main(["index", str(docs), "--store", str(store), "--no-progress"]) == 0
        assert main(["remove", "pets.md", "--store", str(store)]) == 0
        out = capsys.readouterr().out
        assert "removed 1 source(s) (1 chunk(s)): pets.md" in out and "holds 1 chunk(s)" in out
        assert set(_sources(store)) == {"sub/travel.md"}
        assert main(["remove", "pets.md", "--store", str(store)]) != 0
        assert "not in store" in assert_one_error_line(capsys.readouterr().err)

    @pytest.mark.parametrize("command", ["index", "search", "remove"])
    def test_store_that_is_a_file(
        self, docs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
    ) -> None:
        # regression: `--store <a file>` said "does not exist"
        file = tmp_path / "store.txt"
        file.write_text("not a store")
        first = {"index": str(docs), "search": "flights", "remove": "pets.md"}[command]
        assert main([command, first, "--store", str(file)]) != 0
        assert "--store" in (line := assert_one_error_line(capsys.readouterr().err)) and "is a file" in line
        assert file.read_text() == "not a store"

    @pytest.mark.parametrize(
        ("meta", "message"),
        [("tenant", "--meta expects KEY=VALUE"), ("source_id=x", "--meta: meta may not set source_id")],
    )
    def test_bad_meta(
        self, docs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], meta: str, message: str
    ) -> None:
        assert main(["index", str(docs), "--store", str(tmp_path / "kb"), "--meta", meta]) != 0
        assert message in assert_one_error_line(capsys.readouterr().err)

    def test_truncated_embeddings_name_the_file_and_the_fix(
        self, docs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        # regression: a truncated embeddings.npy was an "unexpected failure (EOFError)"
        store = tmp_path / "kb"
        assert main(["index", str(docs), "--store", str(store), "--no-progress"]) == 0
        npy = store / (store / "CURRENT").read_text() / "embeddings.npy"
        npy.write_bytes(npy.read_bytes()[:64])
        assert main(["search", "flights", "--store", str(store), "--mode", "bm25"]) != 0
        line = assert_one_error_line(capsys.readouterr().err)
        assert "embeddings.npy is unreadable or truncated" in line and "Fix: re-index" in line
        assert "unexpected" not in line


@pytest.fixture(scope="module")
def kill_setup(
    tmp_path_factory: pytest.TempPathFactory,
    handbook_store: Path,
    haygraph_cache_dir: Path,
    cli_env: dict[str, str],
):
    """A store of half the handbook (old), the full handbook's chunk ids (new), and how long `index` takes.

    The full-handbook reference is indexed by a real `haygraph index` process, timed, so that kill times
    can be spread over a whole run.
    """
    root = tmp_path_factory.mktemp("kill")
    docs = root / "docs"
    docs.mkdir()
    files = sorted(p for p in sample_handbook_path().iterdir() if p.is_file())
    half = len(files) // 2
    for path in files[:half]:
        shutil.copy(path, docs / path.name)
    # the handbook store's encoder (its Chinese half chose multilingual-e5-small), so every vector is cached
    config = RetrievalConfig(embedder={"cache_dir": str(haygraph_cache_dir), "backend": "e5-multilingual"})
    base = root / "base"
    assert KnowledgeBase(config, base).index([docs]).embedded == 0
    old = _ids(base)
    for path in files[half:]:
        shutil.copy(path, docs / path.name)
    reference = root / "reference"
    shutil.copytree(base, reference)
    start = time.monotonic()
    proc = run_cli(["index", str(docs), "--store", str(reference), "--no-progress"], cli_env)
    seconds = time.monotonic() - start
    assert proc.returncode == 0 and "(0 embedded," in proc.stdout, proc.stderr
    new = _ids(reference)
    assert old < new
    return {
        "root": root,
        "docs": docs,
        "base": base,
        "old": old,
        "new": new,
        "files": files[half:],
        "seconds": seconds,
    }


def _wait_for_save(store: Path, proc: subprocess.Popen[str], limit: float = 120.0) -> bool:
    """Poll until a version is being written (a .tmp-v-* directory exists); False if the run ended first."""
    end = time.monotonic() + limit
    while time.monotonic() < end and proc.poll() is None:
        if any(store.glob(".tmp-v-*")):
            return True
        time.sleep(0.0005)
    return False


@pytest.mark.integration
class TestKillDuringIndex:
    def test_store_is_old_or_new_never_a_mix(self, kill_setup, cli_env: dict[str, str]) -> None:
        rng = random.Random(11)
        outcomes = {"old": 0, "new": 0, "killed_mid_save": 0, "leftovers": 0}
        for trial in range(KILL_TRIALS):
            store = kill_setup["root"] / f"trial-{trial}"
            shutil.copytree(kill_setup["base"], store)
            proc = subprocess.Popen(
                [
                    *haygraph_command(),
                    "index",
                    str(kill_setup["docs"]),
                    "--store",
                    str(store),
                    "--no-progress",
                ],
                env=cli_env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            if trial % 2:  # odd trials: kill while a version is being written, at a random moment of it
                if _wait_for_save(store, proc):
                    time.sleep(rng.uniform(0, 0.03))  # a save takes ~10 ms: before or after the commit
                    outcomes["killed_mid_save"] += proc.poll() is None
            else:  # even trials: kill at a random time of the whole run (start-up, conversion, save)
                time.sleep(rng.uniform(0.2, 1.2 * kill_setup["seconds"]))
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
            ids = _ids(store)  # loads and validates every file
            assert ids in (kill_setup["old"], kill_setup["new"]), f"trial {trial}: a mix of old and new"
            outcomes["old" if ids == kill_setup["old"] else "new"] += 1
            outcomes["leftovers"] += any(store.glob(".tmp-v-*"))
            with KnowledgeBase.open(store).writing():  # the next writer cleans up after the killed one
                pass
            assert not any(store.glob(".tmp-*")) and not (store / ".CURRENT.tmp").exists()
            assert KnowledgeBase.open(store).search("annual leave", config="bm25").hits
        print(f"kill -9 outcomes over {KILL_TRIALS} trials: {outcomes}")
        assert outcomes["old"] + outcomes["new"] == KILL_TRIALS


@pytest.mark.integration
class TestConcurrentWriters:
    @pytest.mark.parametrize("pair", [0, 1])
    def test_both_updates_are_kept(self, kill_setup, cli_env: dict[str, str], pair: int) -> None:
        # regression: two concurrent `haygraph index` both exited 0 and one new document was missing
        store = kill_setup["root"] / f"concurrent-{pair}"
        shutil.copytree(kill_setup["base"], store)
        first, second = kill_setup["files"][2 * pair], kill_setup["files"][2 * pair + 1]
        procs = [
            subprocess.Popen(
                [*haygraph_command(), "index", str(path), "--store", str(store), "--no-progress"],
                env=cli_env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for path in (first, second)
        ]
        results = [proc.communicate(timeout=300) for proc in procs]
        assert [proc.returncode for proc in procs] == [0, 0], results
        sources = set(_sources(store))
        assert {first.name, second.name} <= sources
        base_sources = {d.meta["source_id"] for d in EmbeddedDocumentStore.load(kill_setup["base"]).documents}
        assert base_sources <= sources
        for _, err in results:  # a writer that had to wait says so, in one line; nothing else on stderr
            assert all("waiting up to" in line or "finished" in line for line in err.splitlines()), err
