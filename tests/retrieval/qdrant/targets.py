"""Where Qdrant tests put their collections: local mode in a temporary directory, or `$QDRANT_URL`.

Not a test module; shared by the Qdrant, eval and adversarial tests so that `QDRANT_URL=http://host:6333
pytest ...` runs every one of them unchanged against a server (each test then uses its own collection,
dropped afterwards by `drop_target`).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from haygraph.retrieval.config import StoreConfig
from haygraph.retrieval.qdrant import connection


def qdrant_target(tmp: Path, prefix: str = "t") -> StoreConfig:
    """A fresh collection: on the server at `$QDRANT_URL` when set, else in local mode under `tmp`."""
    url = os.environ.get("QDRANT_URL")
    name = f"{prefix}{uuid.uuid4().hex[:12]}"
    target = {"url": url} if url else {"path": str(tmp / "qdrant")}
    api_key_env = "QDRANT_API_KEY" if url and os.environ.get("QDRANT_API_KEY") else None
    return StoreConfig(backend="qdrant", collection=name, api_key_env=api_key_env, **target)


def drop_target(settings: StoreConfig) -> None:
    """Drop a server collection made by `qdrant_target`; close the clients (unlocks local mode)."""
    if settings.url:
        connection.drop_collection(settings)
    connection.close_clients()
