"""The serve process's allocator settings: each applies where glibc is, yields to the operator's own."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from haygraph.adapters.service.allocator import MemoryTrimmer

glibc = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="glibc on Linux")


@glibc
def test_the_trimmer_trims_until_stopped():
    trimmer = MemoryTrimmer(interval_s=0.02)
    assert trimmer.start()
    deadline = time.monotonic() + 10
    while trimmer.trims < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    trimmer.stop()
    assert trimmer.trims >= 3
    stopped_at = trimmer.trims
    time.sleep(0.1)
    assert trimmer.trims == stopped_at
    trimmer.stop()  # idempotent


def test_a_trimmer_needs_a_positive_interval():
    with pytest.raises(ValueError, match="interval_s"):
        MemoryTrimmer(interval_s=0)


@glibc
@pytest.mark.parametrize(("env", "applied"), [({}, "True True"), ({"MALLOC_ARENA_MAX": "4"}, "True False")])
def test_arenas_are_limited_unless_the_operator_set_them(env, applied):
    code = (
        "from haygraph.adapters.service.allocator import give_back_large_blocks, limit_arenas; "
        "print(give_back_large_blocks(), limit_arenas())"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    done = subprocess.run([sys.executable, "-c", code], env=clean | env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == applied
