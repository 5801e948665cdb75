from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from haygraph.adapters.meaning_encoder import E5MeaningEncoder
from haygraph.control.planning.meaning import MeaningEncoder


class FakeE5:
    """Stands in for the engine: counts the texts it embeds; a vector per text and prefix."""

    def __init__(self) -> None:
        self.embedded: list[tuple[str, bool]] = []
        self.lock = threading.Lock()

    def encode(self, texts: list[str], batch_size: int = 32, *, query: bool = False) -> np.ndarray:
        with self.lock:
            self.embedded.extend((t, query) for t in texts)
        return np.array([[float(len(t)), 1.0 if query else 0.0] for t in texts], dtype=np.float32)


@pytest.fixture
def encoder() -> tuple[E5MeaningEncoder, FakeE5]:
    meaning = E5MeaningEncoder(memo_size=4)
    fake = FakeE5()
    meaning._encoder = fake  # type: ignore[assignment]
    return meaning, fake


class TestE5MeaningEncoder:
    def test_is_a_meaning_encoder_and_memoises(self, encoder) -> None:
        meaning, fake = encoder
        assert isinstance(meaning, MeaningEncoder)
        assert meaning.embed(["ab", "abc"], query=False) == [[2.0, 0.0], [3.0, 0.0]]
        assert meaning.embed(["abc", "ab"], query=False) == [[3.0, 0.0], [2.0, 0.0]]
        assert meaning.embed(["ab"], query=True) == [[2.0, 1.0]]  # a question is embedded apart
        assert fake.embedded == [("ab", False), ("abc", False), ("ab", True)]

    def test_memo_is_bounded(self, encoder) -> None:
        meaning, fake = encoder
        meaning.embed([f"t{i}" for i in range(6)], query=False)
        assert len(meaning._memo) == 4
        assert meaning.embed(["t0"], query=False) == [[2.0, 0.0]]  # pushed out: embedded again, still right
        assert fake.embedded.count(("t0", False)) == 2

    def test_threads_share_it(self, encoder) -> None:
        meaning, _fake = encoder
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(lambda i: meaning.embed([f"x{i % 7}", "y"], query=False), range(40)))
        assert all(r[1] == [1.0, 0.0] and r[0][0] == 2.0 for r in results)

    def test_bad_memo_size(self) -> None:
        with pytest.raises(ValueError, match="memo_size must be >= 0"):
            E5MeaningEncoder(memo_size=-1)
