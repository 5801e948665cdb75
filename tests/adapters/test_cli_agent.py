from pathlib import Path

import haygraph.retrieval as retrieval_package
from haygraph.adapters.cli_agent import default_demo_store


def test_each_checkout_gets_its_own_demo_store(tmp_path, monkeypatch):
    """Two copies of the sample handbook (two checkouts) must not share a demo store: the same source ids
    from a second folder are refused, which made `make demo` fail in a second clone."""
    monkeypatch.setenv("HAYGRAPH_CACHE_DIR", str(tmp_path / "cache"))
    stores = []
    for copy in ("a", "b"):
        monkeypatch.setattr(
            retrieval_package, "sample_handbook_path", lambda c=copy: tmp_path / c / "handbook"
        )
        stores.append(default_demo_store())
    assert stores[0] != stores[1]
    assert all(s.parent == Path(tmp_path / "cache" / "demo-store") for s in stores)
    monkeypatch.setattr(retrieval_package, "sample_handbook_path", lambda: tmp_path / "a" / "handbook")
    assert default_demo_store() == stores[0]  # stable for one checkout: the demo store is reused
