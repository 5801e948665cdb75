"""Would a cross-encoder fine-tuned from the bundled multilingual-e5-small help? Trained, then measured.

Run as ``python -m benchmarks.e5_cross_encoder --work DIR [--docs DIR] [--cmrc-train 900]
[--layers 4] [--threads 2]`` (about 35 minutes on two cores; a rerun with the same ``--work`` reuses
the mined rows and the trained weights and only measures).

Issue 19 allows a trainable multilingual scorer over (question, passage) if it wins on held-out rows.
This script builds one and measures it; the figures are in the README ("A cross-encoder from the
bundled e5 weights").

1. **Mine.** For every question of the handbook and handbook-paraphrase protocols (and of a
   documentation protocol with ``--docs``), tune and test parts, and for CMRC 2018 questions (tune
   part: ``--cmrc-train`` for training; test part: 150 held out), the hybrid top 15 of a store that
   holds the part's documents, without the score-cliff cut. A candidate is positive when it is a chunk
   of a gold source that holds a gold answer string.
2. **Train on tune rows only.** The bundled weights rebuilt as a PyTorch BERT
   (`haygraph.retrieval.e5_torch`) read ``<s> query: Q </s></s> passage: P </s>`` (at most 320
   tokens); a one-logit head on the mean-pooled output; binary cross-entropy, AdamW, one epoch. Only
   the top ``--layers`` layers and the head are trained: the vocabulary and the lower layers stay the
   bundled ones, so their outputs are computed once per row and reused. Rows per question: CMRC, the
   first positive, the two best-ranked negatives and one random one; the small in-domain sets, every
   candidate, positives twice.
3. **Held out (test parts).** As a reranker: the share of questions whose first positive is in the
   top 3 and the MRR over the top 10, in the fused order, by the cross-encoder alone and by the
   reranker blend (``w * minmax(fused) + (1 - w) * probability``). As a decision signal: the AUC
   (answerable against unanswerable questions) of the cross-encoder's best probability over the
   agent's top three evidence items, against the shipped decision's probability. And the time to
   score one (question, chunk) pair.

This is a script that prints figures, not a test; it never reads a test part while training.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from haygraph.eval.agent_cases import (
    AgentCase,
    AgentProtocol,
    docs_protocol,
    handbook_paraphrase_protocol,
    handbook_protocol,
    passage_part,
)
from haygraph.eval.agent_harness import answer_form, build_store
from haygraph.eval.index_prep import resolve_dataset
from haygraph.retrieval import sample_handbook_path
from haygraph.retrieval.converters import read_beir_corpus
from haygraph.retrieval.cross_encoder_ranker import blend_scores
from haygraph.retrieval.e5_torch import padded_batch, prefixed_ids
from haygraph.retrieval.knowledge_base import KnowledgeBase

DEPTH = 15
"""Candidates mined per question (hybrid, no cut)."""
RERANKED = 10
"""Candidates a reranker reads at query time (the config's ``reranker.top_k_in``)."""
MAX_QUERY, MAX_LENGTH = 64, 320
"""Token budget of a pair: the question's first 64 tokens, the passage fills the rest."""
BATCH = 16
BLENDS = (0.3, 0.5, 0.7)


def _positive(case: AgentCase, source: str, text: str) -> bool:
    if case.absent or source not in case.gold_sources:
        return False
    return not case.answers or any(answer_form(a) in answer_form(text) for a in case.answers)


def mine(store: Path, group: str, part: str, cases: Sequence[AgentCase]) -> list[dict[str, Any]]:
    """The hybrid top `DEPTH` candidates of each case, without the cut, labelled."""
    kb = KnowledgeBase.open(store)
    query = kb.config.query
    query = query.model_copy(update={"cut": query.cut.model_copy(update={"enabled": False}), "top_k": DEPTH})
    rows = []
    for case in cases:
        for rank, hit in enumerate(kb.search(case.question, top_k=DEPTH, config=query).hits):
            rows.append(
                {
                    "group": group, "part": part, "case": case.id, "lang": case.lang,
                    "absent": case.absent, "q": case.question, "chunk": hit.id, "rank": rank,
                    "fused": hit.score, "text": hit.content,
                    "y": int(_positive(case, hit.source, hit.content)),
                }
            )  # fmt: skip
    return rows


def _cmrc_cases(dataset: Path, part: str, n: int) -> AgentProtocol:
    """`n` CMRC questions (seeded, of every passage's questions) of `part`, over all its passages."""
    every = read_beir_corpus(dataset / "corpus.jsonl")
    corpus = [d for d in every if passage_part(str(d.meta["source_id"])) == part]
    passages = {str(d.meta["source_id"]) for d in corpus}
    lines = (dataset / "queries.jsonl").read_text("utf-8").splitlines()
    queries = {str(q["_id"]): str(q["text"]) for q in map(json.loads, filter(None, lines))}
    lines = (dataset / "answers.jsonl").read_text("utf-8").splitlines()
    answers = {str(a["_id"]): tuple(map(str, a["answers"])) for a in map(json.loads, filter(None, lines))}
    gold: dict[str, set[str]] = defaultdict(set)
    for line in (dataset / "qrels" / "test.tsv").read_text("utf-8").splitlines()[1:]:
        qid, did, _score = line.split("\t")
        gold[qid].add(did)
    cases = [
        AgentCase(id=q, question=queries[q], lang="zh", absent=False, gold_sources=tuple(sorted(g)),
                  answers=answers.get(q, ()))
        for q, g in sorted(gold.items())
        if g & passages and q in queries
    ]  # fmt: skip
    random.Random(0).shuffle(cases)
    return AgentProtocol("cmrc", cases[:n], documents=corpus)


def protocols(work: Path, docs: Path | None, cmrc_train: int) -> list[tuple[str, str, AgentProtocol, Path]]:
    """(group, part, protocol, store) for every set the script mines."""
    handbook = sample_handbook_path()
    out: list[tuple[str, str, AgentProtocol, Path]] = []
    for part in ("tune", "test"):
        out.append(("handbook", part, handbook_protocol(handbook, part), work / "store-handbook"))  # type: ignore[arg-type]
        out.append(
            ("paraphrase", part, handbook_paraphrase_protocol(handbook, part), work / "store-handbook")  # type: ignore[arg-type]
        )
        if docs is not None:
            out.append(("docs", part, docs_protocol(docs, part), work / "store-docs"))  # type: ignore[arg-type]
    cmrc = resolve_dataset("cmrc2018")
    out.append(("cmrc", "tune", _cmrc_cases(cmrc, "tune", cmrc_train), work / "store-cmrc-tune"))
    out.append(("cmrc", "test", _cmrc_cases(cmrc, "test", 150), work / "store-cmrc-test"))
    return out


class CrossEncoder:
    """The rebuilt e5 with a one-logit head on its mean-pooled output, top `layers` layers trainable."""

    def __init__(self, layers: int) -> None:
        import torch
        from torch import nn

        from haygraph.retrieval.e5_torch import PackedE5, build_model, build_tokenizer, packed_model_path

        self.packed = PackedE5.read(packed_model_path())
        self.tokenizer = build_tokenizer(self.packed)
        self.bert = build_model(self.packed)
        self.head = nn.Linear(self.bert.config.hidden_size, 1)
        nn.init.normal_(self.head.weight, std=0.02)
        nn.init.zeros_(self.head.bias)
        self.split = self.bert.config.num_hidden_layers - layers
        for p in self.bert.parameters():
            p.requires_grad = False
        for layer in self.bert.encoder.layer[self.split :]:
            for p in layer.parameters():
                p.requires_grad = True
        self.torch = torch

    def pair(self, question: str, passage: str) -> list[int]:
        """``<s> query: Q </s></s> passage: P </s>`` in at most `MAX_LENGTH` tokens."""
        table = self.packed.normalisation
        q = prefixed_ids(self.tokenizer, table, question, query=True)[:MAX_QUERY]
        p = prefixed_ids(self.tokenizer, table, passage, query=False)[: MAX_LENGTH - len(q) - 4]
        eos = self.packed.eos
        return [self.packed.bos, *q, eos, eos, *p, eos]

    def _padded(self, states: Sequence[Any]) -> tuple[Any, Any]:
        torch = self.torch
        width = max(s.shape[0] for s in states)
        h = torch.zeros((len(states), width, states[0].shape[1]))
        m = torch.zeros((len(states), width), dtype=torch.long)
        for i, s in enumerate(states):
            h[i, : s.shape[0]] = s.float()
            m[i, : s.shape[0]] = 1
        return h, m

    def _layers(self, h: Any, m: Any, layers: Sequence[Any]) -> Any:
        from transformers.masking_utils import create_bidirectional_mask

        mask = create_bidirectional_mask(config=self.bert.config, inputs_embeds=h, attention_mask=m)
        for layer in layers:
            out = layer(h, attention_mask=mask)
            h = out[0] if isinstance(out, tuple) else out
        return h

    def lower(self, pairs: Sequence[list[int]]) -> list[Any]:
        """Each pair's hidden states below the trained layers (fp16, unpadded), computed once."""
        torch = self.torch
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i]))
        out: list[Any] = [None] * len(pairs)
        self.bert.eval()
        with torch.inference_mode():
            for start in range(0, len(order), BATCH):
                group = order[start : start + BATCH]
                x, m = padded_batch([pairs[i] for i in group], self.packed.pad)
                h = self._layers(self.bert.embeddings(input_ids=x), m, self.bert.encoder.layer[: self.split])
                for row, i in enumerate(group):
                    out[i] = h[row, : len(pairs[i])].to(torch.float16).clone()
        return out

    def upper(self, states: Sequence[Any]) -> Any:
        """Logits of a batch of `lower` states."""
        h, m = self._padded(states)
        h = self._layers(h, m, self.bert.encoder.layer[self.split :])
        pooled = (h * m.unsqueeze(-1)).sum(1) / m.sum(1, keepdim=True)
        return self.head(pooled).squeeze(-1)

    def train(self, rows: Sequence[dict[str, Any]], learning_rate: float = 5e-5) -> None:
        """One epoch of binary cross-entropy over `rows`, in length-bucketed shuffled batches."""
        torch = self.torch
        states = self.lower([self.pair(r["q"], r["text"]) for r in rows])
        labels = [float(r["y"]) for r in rows]
        trained = [p for p in self.bert.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(
            [{"params": trained, "lr": learning_rate}, {"params": self.head.parameters(), "lr": 1e-3}],
            weight_decay=0.01,
        )
        steps = math.ceil(len(rows) / BATCH)
        warm = max(1, steps // 10)
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (steps - s) / max(1, steps - warm))
        )
        loss_fn = torch.nn.BCEWithLogitsLoss()
        rng = random.Random(0)
        order = list(range(len(rows)))
        rng.shuffle(order)
        batches = []
        for start in range(0, len(order), BATCH * 20):
            bucket = sorted(order[start : start + BATCH * 20], key=lambda i: states[i].shape[0])
            batches += [bucket[k : k + BATCH] for k in range(0, len(bucket), BATCH)]
        rng.shuffle(batches)
        self.bert.train()
        began = time.monotonic()
        for step, batch in enumerate(batches, start=1):
            loss = loss_fn(self.upper([states[i] for i in batch]), torch.tensor([labels[i] for i in batch]))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            if step % 50 == 0:
                spent = time.monotonic() - began
                print(f"  step {step}/{steps}  loss {loss.item():.3f}  {spent:.0f} s", flush=True)
        self.bert.eval()

    def state(self) -> dict[str, Any]:
        """The trained tensors (the upper layers and the head)."""
        prefixes = tuple(f"encoder.layer.{i}." for i in range(self.split, self.bert.config.num_hidden_layers))
        out = {f"bert.{k}": v for k, v in self.bert.state_dict().items() if k.startswith(prefixes)}
        out.update({f"head.{k}": v for k, v in self.head.state_dict().items()})
        return out

    def load(self, state: dict[str, Any]) -> None:
        """Load `state` as written by `state`."""
        self.bert.load_state_dict({k[5:]: v for k, v in state.items() if k.startswith("bert.")}, strict=False)
        self.head.load_state_dict({k[5:]: v for k, v in state.items() if k.startswith("head.")})

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """The probability of each (question, passage) pair."""
        torch = self.torch
        if not pairs:
            return []
        with torch.inference_mode():
            states = self.lower([self.pair(q, p) for q, p in pairs])
            logits: list[float] = []
            for start in range(0, len(states), BATCH):
                logits += self.upper(states[start : start + BATCH]).tolist()
        return [1 / (1 + math.exp(-v)) for v in logits]


def training_rows(rows: Sequence[dict[str, Any]], seed: int = 0) -> list[dict[str, Any]]:
    """The tune rows the model learns from (see the module docstring)."""
    rng = random.Random(seed)
    by_case: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r["part"] == "tune":
            by_case[(r["group"], r["case"])].append(r)
    out: list[dict[str, Any]] = []
    for (group, _case), found in by_case.items():
        positives = [r for r in found if r["y"]]
        if group == "cmrc":
            negatives = [r for r in found if not r["y"]]
            if positives:
                out += positives[:1] + negatives[:2] + rng.sample(negatives[2:], min(1, len(negatives[2:])))
        else:
            out += found + positives
    rng.shuffle(out)
    return out


def reranking_figures(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per (group, language) of the test rows: top-3 share and MRR@10 of each ordering."""
    by_case: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r["part"] == "test" and r["rank"] < RERANKED and not r["absent"]:
            by_case[(r["group"], r["lang"], r["case"])].append(r)
    found: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (group, lang, _case), cands in by_case.items():
        if not any(r["y"] for r in cands):
            continue
        cands.sort(key=lambda r: r["rank"])
        fused = [r["fused"] for r in cands]
        prob = [r["p"] for r in cands]
        orders = {"fused": [-r["rank"] for r in cands], "cross-encoder": prob}
        for w in BLENDS:
            orders[f"blend w={w}"] = blend_scores(fused, prob, w)
        for name, score in orders.items():
            ranked = sorted(range(len(cands)), key=lambda i: -score[i])
            first = next(k for k, i in enumerate(ranked) if cands[i]["y"])
            found[f"{group}/{lang}"][f"{name} top3"].append(float(first < 3))
            found[f"{group}/{lang}"][f"{name} mrr"].append(1 / (first + 1))
    return {key: {n: statistics.mean(v) for n, v in fig.items()} for key, fig in sorted(found.items())}


def auc(positive: Sequence[float], negative: Sequence[float]) -> float:
    """Probability that a random positive scores above a random negative (ties count half)."""
    if not positive or not negative:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in positive for n in negative)
    return wins / (len(positive) * len(negative))


def decision_figures(
    model: CrossEncoder, sets: Sequence[tuple[str, str, AgentProtocol, Path]]
) -> dict[str, dict[str, float]]:
    """AUC of the shipped decision and of the cross-encoder's best top-3 probability, test parts."""
    from haygraph.adapters.agent import build_agent

    scores: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    agents: dict[Path, Any] = {}
    for group, part, protocol, store in sets:
        if part != "test" or group == "cmrc":
            continue
        if store not in agents:
            agents[store] = build_agent(store)
        for case in protocol.cases:
            result = agents[store].ask(case.question, thread_id=f"ce-{group}-{case.id}")
            decision = result.get("decision") or {}
            p = 0.0 if decision.get("rule") else float(decision.get("probability") or 0.0)
            top = [e["text"] for e in result["evidence"][:3]]
            best = max(model.probabilities([(case.question, t) for t in top]), default=0.0)
            side = "absent" if case.absent else "present"
            scores[f"{group}/{case.lang}"][f"decision {side}"].append(p)
            scores[f"{group}/{case.lang}"][f"cross-encoder {side}"].append(best)
    return {
        key: {name: auc(s[f"{name} present"], s[f"{name} absent"]) for name in ("decision", "cross-encoder")}
        for key, s in sorted(scores.items())
    }


def main(argv: list[str] | None = None) -> int:
    """Mine, train (once per work folder), measure and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True, help="folder for stores, mined rows and weights")
    parser.add_argument("--docs", type=Path, help="a documentation dataset (README.md, LICENSE, pages/)")
    parser.add_argument("--cmrc-train", type=int, default=900, help="CMRC tune questions to train on (900)")
    parser.add_argument("--layers", type=int, default=4, help="top layers trained (default 4 of 12)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    args.work.mkdir(parents=True, exist_ok=True)
    sets = protocols(args.work, args.docs, args.cmrc_train)
    mined_file = args.work / "mined.json"
    if mined_file.is_file():
        rows = json.loads(mined_file.read_text("utf-8"))
    else:
        rows = []
        for group, part, protocol, store in sets:
            build_store(protocol, store)
            print(f"mining {group} {part}: {len(protocol.cases)} questions", flush=True)
            rows += mine(store, group, part, protocol.cases)
        mined_file.write_text(json.dumps(rows, ensure_ascii=False), "utf-8")
    model = CrossEncoder(args.layers)
    weights = args.work / f"cross-encoder-{args.layers}.pt"
    if weights.is_file():
        model.load(torch.load(weights))
    else:
        train = training_rows(rows)
        print(f"training on {len(train)} tune rows ({sum(r['y'] for r in train)} positive)", flush=True)
        began = time.monotonic()
        model.train(train)
        print(f"trained in {time.monotonic() - began:.0f} s", flush=True)
        torch.save(model.state(), weights)
    test = [r for r in rows if r["part"] == "test" and r["rank"] < RERANKED and not r["absent"]]
    began = time.monotonic()
    for r, p in zip(test, model.probabilities([(r["q"], r["text"]) for r in test]), strict=True):
        r["p"] = p
    per_pair = 1000 * (time.monotonic() - began) / max(1, len(test))
    reranking, decisions = reranking_figures(test), decision_figures(model, sets)
    figures = {"reranking": reranking, "decision_auc": decisions, "ms_per_pair": per_pair}
    (args.work / "results.json").write_text(json.dumps(figures, indent=2), "utf-8")
    print("\nheld out (test parts), first positive among the top 10:")
    for key, values in reranking.items():
        print(f"  {key:16}" + "  ".join(f"{n} {v:.3f}" for n, v in values.items()))
    print("\nanswerable vs unanswerable, AUC (test parts):")
    for key, values in decisions.items():
        print(f"  {key:16}" + "  ".join(f"{n} {v:.3f}" for n, v in values.items()))
    print(f"\nscoring: {per_pair:.0f} ms per (question, chunk) pair on {args.threads} threads")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
