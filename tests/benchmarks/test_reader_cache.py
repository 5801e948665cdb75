"""`benchmarks.reader_cache.LowerCache`: per-window frozen states stored, read back, kept across opens."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.reader_cache import LowerCache, cache_key


class TestLowerCache:
    def test_a_window_reads_back_what_was_put_padded_with_zeros(self, tmp_path):
        cache = LowerCache(tmp_path, [2, 3, 1], hidden=4)
        states = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4) / 8  # exact in float16
        cache.put([2, 1], states)
        assert cache.have([0, 1, 2]).tolist() == [False, True, True]
        got = cache.get([1, 2], width=5)
        assert got.shape == (2, 5, 4) and got.dtype == np.float32
        np.testing.assert_array_equal(got[0, :3], states[1, :3])  # window 1: 3 tokens
        np.testing.assert_array_equal(got[1, :1], states[0, :1])  # window 2: 1 token
        assert not got[0, 3:].any() and not got[1, 1:].any()
        assert cache.filled == 2

    def test_what_was_flushed_is_there_when_opened_again(self, tmp_path):
        cache = LowerCache(tmp_path, [2, 2], hidden=3)
        cache.put([0], np.full((1, 2, 3), 1.5, dtype=np.float32))
        cache.flush()
        again = LowerCache(tmp_path, [2, 2], hidden=3)
        assert again.have([0, 1]).tolist() == [True, False]
        np.testing.assert_array_equal(again.get([0], 2)[0], np.full((2, 3), 1.5))

    def test_other_windows_start_the_folder_afresh(self, tmp_path):
        LowerCache(tmp_path, [2, 2], hidden=3).put([0], np.ones((1, 2, 3), dtype=np.float32))
        other = LowerCache(tmp_path, [2, 3], hidden=3)
        assert other.filled == 0

    def test_a_window_not_stored_is_refused(self, tmp_path):
        cache = LowerCache(tmp_path, [2], hidden=3)
        with pytest.raises(KeyError, match="window 0"):
            cache.get([0], 2)

    def test_states_narrower_than_a_window_are_refused(self, tmp_path):
        cache = LowerCache(tmp_path, [3], hidden=2)
        with pytest.raises(ValueError, match="3 tokens"):
            cache.put([0], np.zeros((1, 2, 2), dtype=np.float32))

    def test_bad_settings_are_refused(self, tmp_path):
        with pytest.raises(ValueError, match="hidden must be > 0, but got 0"):
            LowerCache(tmp_path, [1], hidden=0)
        with pytest.raises(ValueError, match="at least one token"):
            LowerCache(tmp_path, [1, 0], hidden=2)


def test_cache_key_depends_on_every_part():
    assert cache_key("a", 4) == cache_key("a", 4)
    assert len({cache_key("a", 4), cache_key("a", 5), cache_key("b", 4)}) == 3
