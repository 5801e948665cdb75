"""The frozen layers' outputs of every training window, computed once and read back from disk.

The reader trains only its upper layers (`benchmarks.train_reader --train-from`); the word embeddings and
the layers below are frozen, so what they give for a window never changes. `LowerCache` keeps those
hidden states for each window in one float16 memory-mapped file (the windows' rows end to end, no
padding: a window of n tokens takes n x hidden values), with one byte per window saying whether it
has been written. A window is computed the first time a batch meets it and read from disk afterwards,
so the cache costs nothing up front and every epoch after the first skips the frozen part.

Its folder is keyed by what determines the values (the caller's `key`: the data's sha256, the windowing
settings, the frozen layers and their weights); a folder whose ``cache.json`` does not match the
windows asked for is started afresh. float16 keeps ~3 significant digits of hidden states of
magnitude ~1-20, below what the bfloat16 autocast of the old step already rounded.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np

logger = logging.getLogger(__name__)


class LowerCache:
    """Per-window frozen hidden states (float16) in ``folder``: `have`, `get`, `put`, `flush`.

    `lengths[i]` is window i's token count; `hidden` the width of a hidden state.
    """

    def __init__(self, folder: Path, lengths: Sequence[int] | np.ndarray, hidden: int) -> None:
        if hidden <= 0:
            raise ValueError(f"hidden must be > 0, but got {hidden}")
        self.folder = Path(folder)
        self.lengths = np.asarray(lengths, dtype=np.int64)
        if len(self.lengths) == 0 or int(self.lengths.min()) <= 0:
            raise ValueError("LowerCache needs at least one window, each of at least one token")
        self.hidden = hidden
        self.offsets = np.concatenate([[0], np.cumsum(self.lengths)])
        tokens = int(self.offsets[-1])
        meta = {
            "windows": len(self.lengths),
            "tokens": tokens,
            "hidden": hidden,
            "lengths_sha256": hashlib.sha256(self.lengths.tobytes()).hexdigest(),
            "dtype": "float16",
        }
        self.folder.mkdir(parents=True, exist_ok=True)
        meta_path = self.folder / "cache.json"
        values, done = self.folder / "values.f16", self.folder / "done.u8"
        fresh = not (meta_path.is_file() and values.is_file() and done.is_file())
        if not fresh and json.loads(meta_path.read_text(encoding="utf-8")) != meta:
            logger.warning("%s holds other windows: starting it afresh", self.folder)
            fresh = True
        mode: Literal["w+", "r+"] = "w+" if fresh else "r+"
        if fresh:
            meta_path.unlink(missing_ok=True)
        self.values = np.memmap(values, dtype=np.float16, mode=mode, shape=(tokens, hidden))
        self.done = np.memmap(done, dtype=np.uint8, mode=mode, shape=(len(self.lengths),))
        if fresh:
            self.flush()
            meta_path.write_text(json.dumps(meta, indent=1), encoding="utf-8")

    def __len__(self) -> int:
        return len(self.lengths)

    @property
    def filled(self) -> int:
        """How many windows are stored."""
        return int(np.count_nonzero(self.done))

    def have(self, idx: Sequence[int] | np.ndarray) -> np.ndarray:
        """Whether each window of `idx` is stored (bool array)."""
        return np.asarray(self.done[np.asarray(idx, dtype=np.int64)] != 0)

    def get(self, idx: Sequence[int] | np.ndarray, width: int) -> np.ndarray:
        """The stored states of windows `idx` as float32 (len(idx), width, hidden), zero past each window."""
        out = np.zeros((len(idx), width, self.hidden), dtype=np.float32)
        for row, i in enumerate(np.asarray(idx, dtype=np.int64)):
            if not self.done[i]:
                raise KeyError(f"window {i} is not in the cache yet")
            a, b = self.offsets[i], self.offsets[i + 1]
            out[row, : b - a] = self.values[a:b]
        return out

    def put(self, idx: Sequence[int] | np.ndarray, states: np.ndarray) -> None:
        """Store `states` (len(idx), >= each window's length, hidden) for windows `idx`."""
        if states.shape[0] != len(idx) or states.shape[-1] != self.hidden:
            raise ValueError(f"states of shape {states.shape} do not fit {len(idx)} windows x {self.hidden}")
        for row, i in enumerate(np.asarray(idx, dtype=np.int64)):
            a, b = self.offsets[i], self.offsets[i + 1]
            if states.shape[1] < b - a:
                raise ValueError(f"window {i} has {b - a} tokens, states only {states.shape[1]}")
            self.values[a:b] = states[row, : b - a]
        # values first, then the flags that vouch for them (the flags are flushed after the values)
        self.done[np.asarray(idx, dtype=np.int64)] = 1

    def flush(self) -> None:
        """Write what is stored to disk (the values, then the flags)."""
        self.values.flush()
        self.done.flush()


def cache_key(*parts: object) -> str:
    """A short hex key of `parts` (their JSON), for the cache's folder name."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
