import random

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from haygraph.control.errors import BudgetExceededError, PromptInputError, WindowTooSmallError
from haygraph.control.evidence import Evidence
from haygraph.control.tools.types import ToolResult
from haygraph.control.window.budget import BudgetConfig
from haygraph.control.window.prompt_assembly import assemble_prompt
from haygraph.control.window.tokens import TokenCounter


class WordCounter(TokenCounter):
    """Deterministic test counter: one token per whitespace-separated word."""

    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())


class InflatingCounter(WordCounter):
    """Counts whole prompts higher than the sum of their parts (a non-additive tokenizer)."""

    def __init__(self, extra: int) -> None:
        self.extra = extra

    def count_messages(self, messages):
        return super().count_messages(messages) + (self.extra if len(messages) > 1 else 0)


def ev(i: int, words: int) -> Evidence:
    return Evidence(
        id=f"doc{i}#c{i}", text=" ".join(f"w{i}" for _ in range(words)) + ".", score=1.0 / (i + 1)
    )


SCHEMA = {"name": "query_order", "description": "Look up an order.", "parameters": {"order_id": "string"}}


class TestAssemblePrompt:
    def test_layout_and_contents(self):
        prompt = assemble_prompt(
            system="Answer from evidence only.",
            question="Where is my order?",
            counter=WordCounter(),
            config=BudgetConfig(context_window=1000),
            tool_schemas=[SCHEMA],
            history_summary="User: asked about leave.",
            history_turns=[("user", "hello there"), ("assistant", "hi, how can I help?")],
            entities={"order_ids": ["123456789012"], "dates": []},
            evidence=[ev(0, 5), ev(1, 5)],
            tool_results=[
                ToolResult(call_id="c1", name="query_order", status="ok", content={"status": "shipped"})
            ],
        )
        roles = [role for role, _ in prompt.messages]
        assert roles == ["system", "human", "ai", "human"]
        system = prompt.messages[0][1]
        assert system.startswith("Answer from evidence only.")
        assert "Known facts from this conversation:\norder_ids: 123456789012" in system
        assert "Summary of earlier conversation:\nUser: asked about leave." in system
        final = prompt.messages[-1][1]
        assert final.startswith("Evidence:\n[doc0#c0] w0")
        assert 'Tool results:\n[tool query_order call c1 status ok]\n{"status":"shipped"}' in final
        assert final.endswith("Question: Where is my order?")
        assert prompt.evidence_ids == ["doc0#c0", "doc1#c1"]
        assert prompt.tool_schemas == [SCHEMA]
        assert prompt.budget["measured_total"] == prompt.total_tokens
        assert prompt.budget["counter"] == "words"
        lc = prompt.to_langchain()
        assert [type(m) for m in lc] == [SystemMessage, HumanMessage, AIMessage, HumanMessage]

    def test_low_ranked_chunks_dropped_and_reported(self):
        # window 200: limit 190; 10 chunks of ~22 tokens cannot all fit.
        evidence = [ev(i, 20) for i in range(10)]
        prompt = assemble_prompt(
            system="s",
            question="q",
            counter=WordCounter(),
            config=BudgetConfig(context_window=200),
            evidence=evidence,
        )
        kept = len(prompt.evidence_ids)
        assert 0 < kept < 10
        assert prompt.evidence_ids == [e.id for e in evidence[:kept]]
        assert prompt.budget["dropped_evidence_ids"] == [e.id for e in evidence[kept:]]
        assert prompt.budget["parts"]["chunks"]["kept"] == kept
        assert prompt.total_tokens <= 190

    def test_single_huge_chunk_cut_at_sentence_boundary(self):
        text = " ".join(f"Sentence number {i} is here." for i in range(200))
        huge = Evidence(id="big", text=text, score=1.0)
        prompt = assemble_prompt(
            system="s",
            question="q",
            counter=WordCounter(),
            config=BudgetConfig(context_window=300),
            evidence=[huge],
        )
        assert prompt.evidence_ids == ["big"]
        body = prompt.messages[-1][1]
        evidence_text = body.split("[big] ", 1)[1].split("\n\nQuestion:")[0]
        assert evidence_text.endswith("is here.")
        assert text.startswith(evidence_text)
        assert prompt.total_tokens <= 300 - 15

    def test_history_keeps_newest_turns_first(self):
        turns = [("human", f"question {i} " + "x " * 30) for i in range(6)]
        prompt = assemble_prompt(
            system="s",
            question="q",
            counter=WordCounter(),
            config=BudgetConfig(context_window=400),  # history share 80 tokens: two 36-token turns
            history_summary="old summary",
            history_turns=turns,
        )
        contents = [content for role, content in prompt.messages[1:-1]]
        assert [c.split()[1] for c in contents] == ["4", "5"]
        assert "old summary" not in prompt.messages[0][1]  # summary comes after the dropped turns
        assert prompt.budget["parts"]["history"]["dropped"] == 5

    def test_non_additive_counter_triggers_repair_then_error(self):
        evidence = [ev(i, 10) for i in range(20)]
        config = BudgetConfig(context_window=200)
        prompt = assemble_prompt(
            system="s", question="q", counter=InflatingCounter(25), config=config, evidence=evidence
        )
        assert prompt.total_tokens <= config.limit
        plain = assemble_prompt(
            system="s", question="q", counter=WordCounter(), config=config, evidence=evidence
        )
        assert len(prompt.evidence_ids) < len(plain.evidence_ids)
        with pytest.raises(BudgetExceededError, match="limit"):
            assemble_prompt(
                system="s", question="q", counter=InflatingCounter(10_000), config=config, evidence=evidence
            )

    def test_window_smaller_than_fixed_costs(self):
        with pytest.raises(WindowTooSmallError):
            assemble_prompt(
                system="word " * 100,
                question="q",
                counter=WordCounter(),
                config=BudgetConfig(context_window=50),
            )

    def test_unknown_role_rejected(self):
        with pytest.raises(PromptInputError, match="unknown history role"):
            assemble_prompt(
                system="s",
                question="q",
                counter=WordCounter(),
                config=BudgetConfig(),
                history_turns=[("bot", "x")],
            )

    def test_randomized_sweep_never_exceeds_window_minus_reserve(self):
        rng = random.Random(20240512)
        counter = WordCounter()
        for _ in range(300):
            window = rng.randint(60, 3000)
            shares = [rng.random() for _ in range(6)]
            scale = rng.uniform(0.3, 1.0) / sum(shares)
            config = BudgetConfig(
                context_window=window,
                system=shares[0] * scale,
                tool_schemas=shares[1] * scale,
                history=shares[2] * scale,
                chunks=shares[3] * scale,
                tool_results=shares[4] * scale,
                output_reserve=shares[5] * scale,
            )
            kwargs = {
                "system": "sys " * rng.randint(1, 30),
                "question": "q " * rng.randint(1, 20),
                "counter": counter,
                "config": config,
                "tool_schemas": [SCHEMA] * rng.randint(0, 5),
                "history_summary": "summary words. " * rng.randint(0, 20),
                "history_turns": [
                    ("human" if t % 2 == 0 else "ai", "t " * rng.randint(1, 80))
                    for t in range(rng.randint(0, 6))
                ],
                "entities": {
                    "order_ids": [f"{rng.randint(0, 10**12 - 1):012d}" for _ in range(rng.randint(0, 3))]
                },
                "evidence": [ev(i, rng.randint(1, 600)) for i in range(rng.randint(0, 15))],
                "tool_results": [
                    ToolResult(
                        call_id=f"c{i}",
                        name="track",
                        status="ok",
                        content={"events": list(range(rng.randint(0, 300)))},
                    )
                    for i in range(rng.randint(0, 3))
                ],
                "result_key_fields": {"track": ["count(events)", "events[-1]"]},
            }
            try:
                prompt = assemble_prompt(**kwargs)
            except WindowTooSmallError:
                continue
            measured = counter.count_messages(prompt.messages) + sum(
                counter.count_json(s) for s in prompt.tool_schemas
            )
            assert measured == prompt.total_tokens
            assert measured <= window - config.nominal("output_reserve")
            kept = len(prompt.evidence_ids)
            assert prompt.evidence_ids == [e.id for e in kwargs["evidence"][:kept]]

    def test_sweep_with_real_bpe_tokenizer_never_exceeds(self):
        from haygraph.control.window.tokens import TiktokenCounter

        rng = random.Random(7)
        counter = TiktokenCounter("cl100k_base")
        vocab = ["order", "123456789012", "delivery", "年假", "申请", "审批。", "policy.", "e.g.", "—", "\n"]
        for _ in range(40):
            config = BudgetConfig(context_window=rng.randint(150, 1500))
            evidence = [
                Evidence(id=f"d{i}", text=" ".join(rng.choices(vocab, k=rng.randint(5, 400))), score=1.0)
                for i in range(rng.randint(1, 12))
            ]
            try:
                prompt = assemble_prompt(
                    system="Answer from evidence only.",
                    question="年假怎么申请？ How many days?",
                    counter=counter,
                    config=config,
                    history_turns=[("human", " ".join(rng.choices(vocab, k=50)))],
                    evidence=evidence,
                )
            except WindowTooSmallError:
                continue
            assert counter.count_messages(prompt.messages) <= config.limit
            assert prompt.evidence_ids  # leftover always leaves room for at least the top chunk here

    @pytest.mark.integration
    def test_bundled_minilm_counter_keeps_mixed_text_within_limit(self):
        from haygraph.control.window.tokens import MiniLMCounter

        counter = MiniLMCounter()
        config = BudgetConfig(context_window=512)
        evidence = [
            Evidence(id=f"d{i}", text="年假申请需要经理审批。Annual leave needs approval. " * 8, score=1.0)
            for i in range(6)
        ]
        prompt = assemble_prompt(
            system="Answer from evidence only.",
            question="年假怎么申请？",
            counter=counter,
            config=config,
            evidence=evidence,
        )
        assert 0 < len(prompt.evidence_ids) < 6
        assert counter.count_messages(prompt.messages) == prompt.total_tokens <= config.limit
