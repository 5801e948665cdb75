"""Thread ids a checkpointer cannot store are refused with `ConfigError` before the turn runs."""

from __future__ import annotations

import pytest

from haygraph.control.api import MAX_THREAD_ID_CHARS, Agent, check_thread_id
from haygraph.control.errors import ConfigError
from haygraph.control.graph.checkpointers import sqlite_checkpointer
from tests.control.graph_helpers import handbook_retriever

QUESTION = "How many days of annual leave do I get?"
BAD = {
    "lone surrogate": "bad \udcff utf-8 \ud800",
    "empty": "",
    "nul": "a\x00b",
    "newline": "a\nb",
    "too long": "t" * (MAX_THREAD_ID_CHARS + 1),
}


@pytest.mark.parametrize("thread_id", BAD.values(), ids=BAD.keys())
def test_an_unstorable_thread_id_is_refused_before_the_run(thread_id, tmp_path):
    retriever = handbook_retriever()
    saver = sqlite_checkpointer(tmp_path / "threads.sqlite")
    agent = Agent(retriever=retriever, checkpointer=saver)
    with pytest.raises(ConfigError, match="thread id"):
        agent.ask(QUESTION, thread_id=thread_id)
    with pytest.raises(ConfigError, match="thread id"):
        agent.resume(thread_id, approve=True)
    saver.conn.close()
    assert not retriever.calls  # nothing ran


def test_ordinary_ids_pass_unchanged():
    for thread_id in ("default", "acme::support-42", "用户 7", "t" * MAX_THREAD_ID_CHARS):
        assert check_thread_id(thread_id) == thread_id


def test_the_refusal_names_the_id_readably():
    with pytest.raises(ConfigError) as caught:
        check_thread_id("bad \udcff")
    assert "\\udcff" in str(caught.value)
    str(caught.value).encode("utf-8")  # the message itself can be printed
