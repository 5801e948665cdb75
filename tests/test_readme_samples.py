"""Every Python code sample in the README runs as written (real model, real handbook, real server).

The samples are executed in order in one temporary working directory, as a reader would paste them:
the API sample builds the `kb` store the later samples use. Only the service address is adapted (the
sample names port 8000; the test serves `kb` on a free port) and the MCP sample's `haygraph` command
is this environment's console script.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
pytestmark = pytest.mark.integration


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def _run(block: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), {"__name__": "__readme__"})
    return out.getvalue()


def test_every_python_sample_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, haygraph_cache_dir: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HAYGRAPH_CACHE_DIR", str(haygraph_cache_dir))
    bin_dir = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", bin_dir + os.pathsep + os.environ.get("PATH", ""))
    blocks = _python_blocks()
    assert blocks, "the README has no Python samples"
    ran = 0
    for block in blocks:
        if "base_url=" in block:
            from haygraph.adapters.service import HaygraphService, ServiceSettings
            from tests.adapters.service.server_helpers import running_server

            settings = ServiceSettings(store_dir=tmp_path / "kb")
            with running_server(HaygraphService(settings)) as url:
                printed = _run(block.replace("http://127.0.0.1:8000", url))
            assert "[" in printed  # the answer carries [evidence-id] citations
        else:
            printed = _run(block)
        if "kb.search(" in block:
            assert "leave-policy.md" in printed
        ran += 1
    assert ran == len(blocks) and (tmp_path / "kb").is_dir()
