"""Fixtures of the service tests: the two-tenant store (built once) and a running keyed server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.adapters.service.server_helpers import build_tenant_store, running_server, write_keys


@pytest.fixture(scope="session")
def tenant_store(tmp_path_factory: pytest.TempPathFactory, haygraph_cache_dir: Path) -> Path:
    """A store with tenant A's and tenant B's documents (`meta.tenant`); read-only for tests."""
    return build_tenant_store(tmp_path_factory.mktemp("tenants") / "store", haygraph_cache_dir)


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory: pytest.TempPathFactory, tenant_store: Path) -> Iterator[str]:
    """The real service over `tenant_store` with API keys for tenants A and B; yields its base URL."""
    from haygraph.adapters.service import HaygraphService, ServiceSettings

    keys = write_keys(tmp_path_factory.mktemp("keys") / "keys.yaml")
    settings = ServiceSettings(store_dir=tenant_store, api_keys=keys, max_body_bytes=64 * 1024)
    with running_server(HaygraphService(settings)) as url:
        yield url
