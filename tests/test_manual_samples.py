"""Every Python code sample of the manual runs as written (real model, real handbook, real server).

The README's samples run in one temporary working directory, the pages' samples (in the order of
mkdocs.yml) in another, as a reader would paste them: the Python API sample builds the `kb` store the
later samples use. Only the service address is adapted (the sample names port 8000; the test serves
`kb` on a free port) and the MCP sample's `haygraph` command is this environment's console script.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from pathlib import Path

import pytest

from tests.manual import README, blocks, nav_pages

pytestmark = pytest.mark.integration


def _run(block: str, name: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, name, "exec"), {"__name__": "__manual__"})
    return out.getvalue()


def _run_all(samples: list[tuple[str, str]], workdir: Path) -> int:
    ran = 0
    for name, block in samples:
        if "base_url=" in block or "http://127.0.0.1:8000" in block:  # the service's, the MCP client's
            from haygraph.adapters.service import HaygraphService, ServiceSettings
            from tests.adapters.service.server_helpers import running_server

            settings = ServiceSettings(store_dir=workdir / "kb")
            with running_server(HaygraphService(settings)) as url:
                printed = _run(block.replace("http://127.0.0.1:8000", url), name)
            assert "[" in printed  # the answer carries [evidence-id] citations
            if "/mcp" in block:
                assert "'citations': [{" in printed, printed[:300]  # the MCP ask tool's cited answer
        else:
            printed = _run(block, name)
        if "kb.search(" in block:
            assert "leave-policy.md" in printed, name
        ran += 1
    return ran


@pytest.fixture
def reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, haygraph_cache_dir: Path) -> Path:
    monkeypatch.setenv("HAYGRAPH_CACHE_DIR", str(haygraph_cache_dir))
    bin_dir = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", bin_dir + os.pathsep + os.environ.get("PATH", ""))
    return tmp_path


def test_every_readme_sample_runs(reader: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(reader)
    samples = [("README.md", b) for b in blocks(README, "python")]
    assert samples, "the README has no Python samples"
    assert _run_all(samples, reader) == len(samples) and (reader / "kb").is_dir()


def test_every_page_sample_runs(reader: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(reader)
    samples = [(page.name, b) for page in nav_pages() for b in blocks(page, "python")]
    assert len(samples) >= 4, "the manual's pages have lost their Python samples"
    assert _run_all(samples, reader) == len(samples) and (reader / "kb").is_dir()
