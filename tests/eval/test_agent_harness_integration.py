"""CI-sized slices of the answerability protocols through the real offline agent (bundled model, real data).

Small slices of CMRC 2018 and SciFact (when the shared datasets are present) and the handbook test
cases, with hard floors a little under the measured full-run figures; and bad input — no content
words, a third language, an entity the corpus never mentions — which must never get a confident answer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from haygraph.adapters.agent import build_agent
from haygraph.control.planning.decision.model import shipped_model
from haygraph.eval.agent_cases import cmrc_protocol, handbook_protocol, scifact_protocol
from haygraph.eval.agent_harness import run_protocol
from haygraph.eval.index_prep import datasets_root
from haygraph.retrieval import sample_handbook_path

pytestmark = pytest.mark.integration

REFUSED = {"insufficient_evidence", "needs_clarification"}
DECISION = {"answerability": shipped_model()}


def _dataset(name: str) -> Path:
    path = datasets_root() / name
    if not (path / "corpus.jsonl").is_file():
        pytest.skip(f"shared dataset {name} not found in {datasets_root()}")
    return path


def test_handbook_test_cases(handbook_store: Path) -> None:
    protocol = handbook_protocol(sample_handbook_path(), "test")
    report = run_protocol(protocol, handbook_store, modes=["hybrid"], settings=DECISION)
    figures = report["modes"]["hybrid"]["figures"]["all"]
    # Floors under the measured figures (answered-correct 0.37 on this part): a regression guard,
    # far from the 0.95 target — the shipped weights over-refuse paraphrased handbook questions.
    assert figures["answered_correct"] >= 0.3, report["modes"]["hybrid"]["failures"]
    assert figures["refused_when_absent"] >= 0.7, report["modes"]["hybrid"]["failures"]


def test_cmrc_slice(tmp_path: Path) -> None:
    protocol = cmrc_protocol(_dataset("cmrc2018"), "test", n=16, seed=1, distractors=24)
    report = run_protocol(protocol, tmp_path / "cmrc", modes=["bm25"], settings=DECISION)
    figures = report["modes"]["bm25"]["figures"]["zh"]
    assert figures["refused_when_absent"] >= 0.75, report["modes"]["bm25"]["failures"]
    assert figures["cited_gold"] >= 0.75, report["modes"]["bm25"]["failures"]
    assert figures["answered_correct"] >= 0.6, report["modes"]["bm25"]["failures"]


def test_scifact_slice(tmp_path: Path) -> None:
    protocol = scifact_protocol(_dataset("scifact"), "test", n=12, distractors=20, seed=1)
    report = run_protocol(protocol, tmp_path / "scifact", modes=["bm25"], settings=DECISION)
    figures = report["modes"]["bm25"]["figures"]["en"]
    assert figures["answered_correct"] is None  # SciFact has no answer strings
    assert figures["refused_when_absent"] >= 0.5, report["modes"]["bm25"]["failures"]


class TestBadInput:
    @pytest.mark.parametrize(
        "question",
        [
            "what is it?",  # no content words
            "can you tell me about that?",
            "Quelle est la politique de remboursement des frais de taxi ?",  # French
            "Сколько дней ежегодного отпуска мне положено?",  # Russian
            "年次有給休暇は何日もらえますか？",  # Japanese (kana)
            "Wie viele Tage Jahresurlaub bekomme ich?",  # German (Latin script, no English content words)
            "How many vacation days does Contoso Pharmaceuticals give its interns?",  # absent entity
            "《红楼梦》的作者是谁？",  # a title the handbook never mentions
        ],
    )
    def test_never_a_confident_answer(self, handbook_store: Path, question: str) -> None:
        agent = build_agent(handbook_store)  # the default agent: the shipped decision is on
        result = agent.ask(question, thread_id="bad-input")
        assert result["status"] in REFUSED, (result["status"], result["answer"])
        assert result["evidence_ids"] == []

    def test_the_headline_question_gets_the_entitlement(self, handbook_store: Path) -> None:
        agent = build_agent(handbook_store)  # the default agent, as the README shows it
        result = agent.ask("How many days of annual leave do I get?")
        assert result["status"] == "completed"
        first = result["answer"].split(" [")[0]
        assert "12 working days" in first and "20 working days" in first, result["answer"]
