"""Graph nodes: small functions `(state, runtime) -> dict` returning only the fields they change.

Path and timing bookkeeping is added around every node by `haygraph.control.graph.builder`; the
decisions live in pure helpers (`haygraph.control.planning`, `haygraph.control.window`); every
user-facing message comes from `haygraph.control.texts`.
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import AnyMessage, HumanMessage
from langgraph.runtime import Runtime
from langgraph.types import Overwrite, interrupt
from pydantic import ValidationError

from haygraph.control.errors import ConfigError, ContextError
from haygraph.control.evidence import OTHER_LANGUAGE, Evidence, evidence_key, merge_evidence
from haygraph.control.graph.consent import approval, calls_needing_consent, confirmation_request
from haygraph.control.graph.context import Context
from haygraph.control.graph.deadlines import call_with_deadline, describe_failure
from haygraph.control.graph.state import State, Status
from haygraph.control.graph.turn_prompt import build_turn_prompt, result_key_fields, results_for_state
from haygraph.control.language import CJK, is_chinese, words_only
from haygraph.control.planning.chitchat import chitchat_reply
from haygraph.control.planning.decision.signals import TOP_EVIDENCE
from haygraph.control.planning.extractive import extractive_answer, insufficient_message
from haygraph.control.planning.injection import is_instruction_like, relays_instruction
from haygraph.control.planning.input_check import check_question
from haygraph.control.planning.model_calls import model_generate, model_rewrite
from haygraph.control.planning.readable import without_hidden_controls
from haygraph.control.planning.reader_answer import answers_across, combined_answer, reader_answer
from haygraph.control.planning.relevance import best_relevance, usable_evidence
from haygraph.control.planning.rewrite import rewrite_query
from haygraph.control.planning.tool_choice import TurnPlan, plan_turn
from haygraph.control.planning.tool_reply import summarize_tool_results
from haygraph.control.reading import Reading
from haygraph.control.texts import KNOWLEDGE_BASE_UNAVAILABLE, NEED_DETAILS, WINDOW_EXCEEDED
from haygraph.control.tools.types import ToolCall, ToolResult
from haygraph.control.window.history import Summarizer
from haygraph.control.window.memory import fold_turn, model_summarizer, remember_entities
from haygraph.control.window.prompt_assembly import AssembledPrompt

logger = logging.getLogger(__name__)

HISTORY_MESSAGES = 6
"""Messages of earlier turns shown to the model for routing and rewriting."""


def _history(state: State) -> list[AnyMessage]:
    return list(state.get("messages") or [])[-HISTORY_MESSAGES:]


def analyze(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Start a turn: reset per-turn fields, check the input, extract entities, route and rewrite."""
    ctx = runtime.context
    check = check_question(state.get("question"), ctx.max_question_chars)
    update: dict[str, Any] = {
        "question": check.text,
        "query": "",
        "queries": [],
        "evidence": Overwrite([]),
        "candidates": [],
        "tool_calls": [],
        "tool_results": Overwrite([]),
        "intent": None,
        "turn": int(state.get("turn") or 0) + 1,
        "context_budget": {},
        "input_problem": check.problem,
        "clarification": None,
        "retry_count": 0,
        "quality": None,
        "answerable": None,
        "decision": None,
        "reading": None,
        "retrieval_error": None,
        "status": "completed",
        "answer": None,
        "evidence_ids": [],
        "notes": Overwrite([]),
        "top_k": ctx.top_k,
        "entities": dict(state.get("entities") or {}),
    }
    if check.problem:
        return {**update, "route": "clarify", "clarification": check.problem}
    text = check.text
    if not state.get("title"):
        update["title"] = text
    entities = remember_entities(state.get("entities"), text, ctx.history)
    notes: list[str] = []
    plan = _plan(ctx, text, _history(state), entities, update["turn"], notes)
    decision = plan.decision
    update.update(
        entities=entities,
        route=decision.route,
        messages=[HumanMessage(content=text)],
        tool_calls=plan.calls,
        intent=plan.intent,
        clarification=decision.clarification if decision.route == "clarify" else None,
    )
    if decision.route == "clarify" and not decision.clarification:
        update["clarification"] = NEED_DETAILS.for_question(text)
    if decision.route == "retrieve":
        queries = _rewrite(ctx, text, _history(state), entities, notes)
        update.update(queries=queries, query=queries[0])
    if notes:
        update["notes"] = Overwrite(notes)
    return update


def _model_call(ctx: Context, fn: Callable[[], Any], name: str) -> Any:
    """Call the chat model through `fn` within `ctx.model_timeout_s`, retrying transient failures."""
    return call_with_deadline(fn, ctx.model_timeout_s, name=name, retries=ctx.model_retries)


def _plan(
    ctx: Context,
    text: str,
    history: list[AnyMessage],
    entities: dict[str, list[str]],
    turn: int,
    notes: list[str],
) -> TurnPlan:
    """Plan the turn (`plan_turn`); a model past its deadline falls back to the rules, with a note."""
    model = ctx.chat_model

    def plan(with_model: Any) -> TurnPlan:
        return plan_turn(
            text,
            model=with_model,
            registry=ctx.tool_registry,
            allow_list=ctx.offered_allow_list,
            history=history,
            entities=entities,
            turn=turn,
            mode=ctx.structured_mode,
        )

    if model is None:
        return plan(None)
    try:
        result: TurnPlan = _model_call(ctx, lambda: plan(model), "the chat model (routing)")
    except Exception as exc:
        logger.warning("model routing failed, using the rules: %s", exc)
        notes.append(f"model routing failed ({describe_failure(exc)}); routed by the offline rules")
        return plan(None)
    if result.fallback_reason:
        notes.append(f"model routing failed ({result.fallback_reason}); routed by the offline rules")
    notes.extend(result.notes)
    return result


def _rewrite(
    ctx: Context,
    text: str,
    history: list[AnyMessage],
    entities: dict[str, list[str]],
    notes: list[str] | None = None,
) -> list[str]:
    model = ctx.chat_model
    if model is not None:
        try:
            queries: list[str] = _model_call(
                ctx,
                lambda: model_rewrite(
                    model, text, history=history, entities=entities, mode=ctx.structured_mode
                ),
                "the chat model (rewriting)",
            )
            return queries
        except Exception as exc:
            logger.warning("model rewriting failed, using the rules: %s", exc)
            if notes is not None:
                notes.append(f"model rewriting failed ({describe_failure(exc)}); rewritten by the rules")
    return rewrite_query(text)


def search(
    ctx: Context, queries: Sequence[str], top_k: int, *, spare: list[Evidence] | None = None
) -> tuple[list[Evidence], str | None]:
    """Run every query against the retriever; return merged evidence and the error, if all failed.

    With `spare`, each query asks for `Context.answer_top_k` (if larger) and only its first `top_k`
    items, in the retriever's order, are evidence; the rest are appended to `spare`, with the items the
    retriever marked `OTHER_LANGUAGE` (never evidence: without `spare` they are dropped).

    The retriever is warmed up first (`Context.warm_retriever`: model loading, once, outside the
    deadline). All queries share one deadline, `ctx.retrieve_timeout_s`: a query that would wait past it fails
    with a `TimeoutError` (the retriever call is abandoned, not killed), so the step never hangs.
    """
    retriever = ctx.retriever
    if retriever is None:
        return [], "no retriever configured"
    try:
        ctx.warm_retriever()
    except Exception as exc:
        logger.warning("retriever warm-up failed: %s", exc)
        return [], describe_failure(exc)
    found: list[Evidence] = []
    errors: list[str] = []
    ask = ctx.retrieval_depth(top_k) if spare is not None else top_k
    deadline = time.monotonic() + ctx.retrieve_timeout_s
    for query in queries:
        remaining = deadline - time.monotonic()
        try:
            if remaining <= 0:
                raise TimeoutError(f"the retriever did not answer within {ctx.retrieve_timeout_s:g} s")
            items = call_with_deadline(
                lambda q=query: retriever.retrieve(q, top_k=ask, filters=ctx.filters),  # type: ignore[misc]
                remaining,
                name="the retriever",
            )
            got = [Evidence.model_validate(i) for i in items]
            ranked = [e for e in got if not e.meta.get(OTHER_LANGUAGE)]
            found = merge_evidence(found, ranked[:top_k])
            if spare is not None:  # appended other-language items are candidates, never evidence
                spare.extend(ranked[top_k:] + [e for e in got if e.meta.get(OTHER_LANGUAGE)])
        except (Exception, ValidationError) as exc:
            if isinstance(exc, TimeoutError):
                exc = TimeoutError(f"the retriever did not answer within {ctx.retrieve_timeout_s:g} s")
            logger.warning("retrieval failed for %r: %s", query, exc)
            errors.append(describe_failure(exc))
    return found, (errors[0] if errors and len(errors) == len(queries) else None)


def retrieve(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Retrieve `top_k` chunks per rewritten query as evidence, the next to `answer_top_k` as candidates."""
    ctx = runtime.context
    spare: list[Evidence] = []
    queries = state.get("queries") or [state["question"]]
    evidence, error = search(ctx, queries, state.get("top_k", ctx.top_k), spare=spare)
    known = {e.id for e in evidence}
    candidates = merge_evidence([], [e for e in spare if e.id not in known])
    update: dict[str, Any] = {"evidence": evidence, "candidates": candidates, "retrieval_error": error}
    if error:
        update["notes"] = [f"retrieval failed: {error}"]
    return update


def evaluate(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Measure the best absolute relevance of the evidence so far and whether it answers the question.

    With a reader, it first reads the question against the top `TOP_EVIDENCE` items (`read_evidence`):
    the decision weighs its margin, and the answer quotes its best span.
    """
    evidence = state.get("evidence") or []
    ctx = runtime.context
    question = state.get("question", "")
    candidates = state.get("candidates") or []
    reading = read_evidence(ctx, question, state.get("query") or question, evidence, candidates)
    model = ctx.answerability
    update: dict[str, Any] = {
        "quality": best_relevance(evidence),
        "reading": reading.model_dump() if reading is not None else None,
    }
    if model is None:
        return {**update, "answerable": None, "decision": None}
    decision = model.decide(
        state.get("query") or question,
        evidence,
        asked=question,
        reading=reading,
        read_items=candidates,
    )
    return {
        **update,
        "answerable": decision.probability if decision.rule is None else 0.0,
        "decision": decision.to_dict(),
    }


CROSS_READ = 2
"""Items in the other language than the question the reader reads beyond the top `TOP_EVIDENCE`."""


def read_evidence(
    ctx: Context,
    question: str,
    query: str,
    evidence: Sequence[Evidence],
    candidates: Sequence[Evidence] = (),
) -> Reading | None:
    """The reader's reading of the top `TOP_EVIDENCE` items and the best other-language ones, in one call.

    Besides the top items, it reads the best `CROSS_READ` items of the evidence and candidates written
    in the other language than the question (a Chinese question over the English page that states the
    fact: retrieval ranks a question's own language first, the multilingual reader reads both). It
    reads the user's own question (the words it was trained on), or the rewritten query when the
    rewrite brought in words the question lacks (a follow-up resolved against the conversation).
    None without a reader or evidence.

    One call, not the top items first and the others only when the top holds no span: that staged read
    saved about 30% of a bilingual store's reading, but the int8 reader's spans depend a little on the
    windows it runs beside, so reading the top alone moved margins the decision was fitted on (it
    answered the web page's near miss "How much does a staff parking permit cost?"; docs/evaluation.md).
    """
    if ctx.reader is None or not evidence:
        return None
    asked, top, others = reading_input(question, query, evidence, candidates)
    return ctx.reader.read(asked, [*top, *others])


def reading_input(
    question: str, query: str, evidence: Sequence[Evidence], candidates: Sequence[Evidence] = ()
) -> tuple[str, list[Evidence], list[Evidence]]:
    """What `read_evidence` gives the reader: the words it reads, the top items, the other-language ones."""
    top = sorted(evidence, key=evidence_key, reverse=True)[:TOP_EVIDENCE]
    asked_chinese = is_chinese(question)
    others = [
        e
        for e in merge_evidence(list(evidence), list(candidates))
        if e not in top and is_chinese(e.text) != asked_chinese
    ][:CROSS_READ]
    asked = query if _adds_words(question, query) else question
    return asked, top, others


def _adds_words(question: str, query: str) -> bool:
    """Whether `query` holds a word (a Chinese character, for Chinese) that `question` does not."""

    def units(text: str) -> set[str]:
        return set(words_only(CJK.sub(" ", text)).lower().split()) | set(CJK.findall(text))

    return bool(units(query) - units(question))


def answerable_evidence(ctx: Context, state: State) -> list[Evidence]:
    """The evidence an answer may use (empty when the answerability decision says no).

    Otherwise the items above `Context.usable_relevance` — of the evidence and, when the decision
    said yes, of the `candidates` too, with the item the reader's best span lies in — or, when the
    decision said yes but none is, the best `TOP_EVIDENCE` items of the evidence.
    """
    evidence = list(state.get("evidence") or [])
    model = ctx.answerability
    answerable = state.get("answerable")
    if model is not None and answerable is not None and answerable < model.threshold:
        return []
    if model is not None and answerable is not None:
        known = {e.id for e in evidence}
        evidence = merge_evidence(evidence, [c for c in state.get("candidates") or [] if c.id not in known])
    usable = usable_evidence(evidence, ctx.usable_relevance)
    reading = state.get("reading")
    if model is not None and answerable is not None and reading and reading.get("spans"):
        # the decision said yes on what the reader read: the item its best span is in may be used, even
        # below the relevance floor (an other-language page: cross-language relevance is lower)
        best = reading["spans"][0]["evidence_id"]
        usable += [e for e in evidence if e.id == best and e not in usable]
    if usable or model is None or answerable is None:
        return usable
    return evidence[:TOP_EVIDENCE]


def expand(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Search again with the original question and the larger `expand_top_k`; merged by the reducer."""
    ctx = runtime.context
    spare: list[Evidence] = []
    evidence, error = search(ctx, [state["question"]], ctx.expand_top_k, spare=spare)
    known = {e.id for e in evidence} | {e.id for e in state.get("evidence") or []}
    candidates = merge_evidence(list(state.get("candidates") or []), [e for e in spare if e.id not in known])
    update: dict[str, Any] = {
        "evidence": evidence,
        "candidates": candidates,
        "retry_count": state.get("retry_count", 0) + 1,
    }
    if not (state.get("evidence") or evidence):
        update["retrieval_error"] = error or state.get("retrieval_error")
    else:
        update["retrieval_error"] = None
    if error and error != state.get("retrieval_error"):
        update["notes"] = [f"expansion retrieval failed: {error}"]
    return update


def _thread_id(runtime: Runtime[Context]) -> str:
    info = runtime.execution_info
    return (info.thread_id if info is not None else None) or "default"


def _error_results(calls: Sequence[ToolCall], message: str) -> list[ToolResult]:
    return [ToolResult(call_id=c.id, name=c.name, status="error", error=message) for c in calls]


def tool_exec(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Run the turn's tool calls with the configured executor; failures become error results.

    Calls to side-effect tools the caller did not pre-approve first pause the graph with
    `interrupt()` (`haygraph.control.graph.consent`); this node runs again from the top when the
    run is resumed, and nothing has been executed before the pause. Denied calls get `declined`
    results; the others run.
    """
    ctx = runtime.context
    calls = list(state.get("tool_calls") or [])
    executor = ctx.tool_executor
    if executor is None:
        return {"tool_results": _error_results(calls, "no tool executor configured")}
    pending = calls_needing_consent(
        calls, ctx.tool_registry, allow_list=ctx.tool_allow_list, preapproved=ctx.preapproved_tools
    )
    declined: set[str] = set()
    if pending:
        answer = interrupt(confirmation_request(pending))
        try:
            approved = approval(answer)
        except ConfigError as exc:
            logger.warning("unreadable confirmation, treated as denied: %s", exc)
            approved = False
        if not approved:
            declined = {p["call_id"] for p in pending}
    to_run = [c for c in calls if c.id not in declined]
    try:
        ran = (
            list(executor.execute(to_run, thread_id=_thread_id(runtime), filters=runtime.context.filters))
            if to_run
            else []
        )
    except Exception as exc:
        logger.warning("tool executor raised: %s", exc)
        ran = _error_results(to_run, f"tool executor failed: {type(exc).__name__}: {exc}")
    by_id = {r.call_id: r for r in ran}
    results = [
        ToolResult(call_id=c.id, name=c.name, status="declined", error="the user did not confirm this call")
        if c.id in declined
        else by_id[c.id]
        for c in calls
        if c.id in declined or c.id in by_id
    ]
    return {"tool_results": results}


def answer_from_evidence(
    ctx: Context,
    state: State,
    prompt: AssembledPrompt,
    evidence: list[Evidence],
    notes: list[str] | None = None,
) -> tuple[str | None, list[str], Status]:
    """Answer from the evidence kept in the budgeted prompt: the model's (validated) or the extractive one.

    The model may cite only evidence that is in `prompt`; the extractive answer uses the same
    evidence, so both modes answer from exactly what fitted in the window. A model answer is
    `rejected` (answer withheld, reason appended to `notes`) when it cites evidence not in the
    prompt, or when it relays instruction-like text (`haygraph.control.planning.injection.relays_instruction`:
    it contains such a span, or repeats one found in the evidence). A model that fails, is rate
    limited or passes `ctx.model_timeout_s` gives the extractive answer, status `degraded`, and
    the reason in `notes`.
    """
    notes = notes if notes is not None else []
    question = state["question"]
    allowed = set(prompt.evidence_ids)
    kept = [e for e in evidence if e.id in allowed]
    notes = notes if notes is not None else []
    flagged = [e.id for e in kept if is_instruction_like(e.text)]
    if flagged:
        notes.append(
            f"instruction-like text in evidence {', '.join(flagged)} was treated as data "
            "(not quoted, hidden from the model)"
        )
    model = ctx.chat_model
    if model is not None:
        try:
            grounded = _model_call(
                ctx,
                lambda: model_generate(model, prompt.to_langchain(), mode=ctx.structured_mode),
                "the chat model (generation)",
            )
        except Exception as exc:
            logger.warning("model generation failed, falling back to the extractive answer: %s", exc)
            notes.append(f"model unavailable ({describe_failure(exc)}); answered extractively")
        else:
            cited = list(dict.fromkeys(grounded.evidence_ids))
            if not grounded.answer.strip():
                return insufficient_message(question), [], "insufficient_evidence"
            if not cited or any(i not in allowed for i in cited):
                logger.warning("model answer rejected: cited %s, allowed %s", cited, sorted(allowed))
                notes.append("model answer rejected: it cited evidence that was not retrieved")
                return None, [], "rejected"
            relayed = relays_instruction(grounded.answer, [e.text for e in kept])
            if relayed:
                logger.warning("model answer rejected: %s", relayed)
                notes.append(f"model answer rejected: {relayed}")
                return None, [], "rejected"
            return grounded.answer.strip(), cited, "completed"
    encoder = ctx.answerability.encoder if ctx.answerability is not None else None
    reading = Reading.model_validate(state["reading"]) if state.get("reading") else None
    lead = ctx.answerability.lead_margin if ctx.answerability is not None else math.inf
    if reading is not None and answers_across(question, reading, kept):  # the picker is not needed
        extracted = reader_answer(question, reading, kept, lead)
    else:
        extracted = extractive_answer(state.get("query") or question, kept, encoder=encoder)
        if reading is not None:
            extracted = combined_answer(question, reading, kept, extracted, lead)
    if extracted is None:
        return insufficient_message(question), [], "insufficient_evidence"
    return extracted.answer, extracted.evidence_ids, ("degraded" if model is not None else "completed")


def budget_failure_message(question: str) -> str:
    """Return the reply of a turn whose prompt could not be built inside the context window."""
    return WINDOW_EXCEEDED.for_question(question)


def finish_turn(ctx: Context, state: State, answer: str | None) -> dict[str, Any]:
    """Append the answer and fold old turns into the summary (`haygraph.control.window.memory.fold_turn`)."""
    model = ctx.chat_model
    summarize: Summarizer | None = None
    if model is not None and ctx.model_summary:
        summarizer = model_summarizer(model)

        def summarize(previous: str, folded: Sequence[Any]) -> str:
            text: str = _model_call(ctx, lambda: summarizer(previous, folded), "the chat model (summary)")
            return text

    return fold_turn(
        list(state.get("messages") or []),
        answer,
        counter=ctx.counter,
        config=ctx.history,
        summary=state.get("summary") or "",
        entities=state.get("entities"),
        summarize=summarize,
    )


def _without_hidden_controls(answer: str, cited: Sequence[str]) -> str:
    """`answer` without control and bidirectional control characters, except in its ``[id]`` citations.

    So a quoted chunk, a model or a tool cannot reorder the screen, while a citation still matches its
    evidence id (which may come from a file name).
    """
    kept = sorted({f"[{i}]" for i in cited}, key=len, reverse=True)
    if not kept:
        return without_hidden_controls(answer)
    parts = re.split("(" + "|".join(map(re.escape, kept)) + ")", answer)
    return "".join(p if i % 2 else without_hidden_controls(p) for i, p in enumerate(parts))


def generate(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Write the turn's answer, status and cited evidence ids, then fold the conversation history.

    On the retrieve route (with usable evidence) and the tool route the budgeted prompt is
    assembled (`haygraph.control.graph.turn_prompt.build_turn_prompt`, offline too) and its record written to
    `context_budget`; a prompt that cannot fit the window gives status `degraded`, never an error.
    Whatever wrote the answer, its control and bidirectional control characters are removed
    (`haygraph.control.planning.readable.without_hidden_controls`), except in its citations.
    """
    ctx = runtime.context
    question = state.get("question", "")
    route = state.get("route", "clarify")
    evidence_ids: list[str] = []
    answer: str | None
    status: Status
    update: dict[str, Any] = {}
    try:
        if route == "answer":
            answer, status = chitchat_reply(question), "completed"
        elif route == "clarify":
            answer, status = state.get("clarification") or "", "needs_clarification"
        elif route == "tool":
            results = list(state.get("tool_results") or [])
            prompt = build_turn_prompt(ctx, state, tool_results=results)
            update["context_budget"] = prompt.budget
            answer, status = summarize_tool_results(
                results, question, calls=state.get("tool_calls") or [], registry=ctx.tool_registry
            )
            stored, changed = results_for_state(
                results,
                counter=ctx.counter,
                cap_tokens=ctx.full_result_cap_tokens,
                key_fields=result_key_fields(ctx),
            )
            if changed:
                update["tool_results"] = Overwrite(stored)
        else:
            usable = answerable_evidence(ctx, state)
            if usable:
                prompt = build_turn_prompt(ctx, state, evidence=usable)
                update["context_budget"] = prompt.budget
                notes: list[str] = []
                answer, evidence_ids, status = answer_from_evidence(ctx, state, prompt, usable, notes)
                if notes:
                    update["notes"] = notes
                cited_ids = set(evidence_ids)
                cited = [c for c in state.get("candidates") or [] if c.id in cited_ids]
                if cited:
                    update["evidence"] = cited
            elif state.get("retrieval_error"):
                answer, status = KNOWLEDGE_BASE_UNAVAILABLE.for_question(question), "degraded"
            else:
                answer, status = insufficient_message(question), "insufficient_evidence"
    except ContextError as exc:
        logger.error("generation prompt does not fit the context window: %s", exc)
        update["context_budget"] = {
            "error": f"{type(exc).__name__}: {exc}",
            "window": ctx.budget.context_window,
            "limit": ctx.budget.limit,
        }
        answer, evidence_ids, status = budget_failure_message(question), [], "degraded"
    if answer:
        answer = _without_hidden_controls(answer, evidence_ids)
    update.update(answer=answer, status=status, evidence_ids=evidence_ids)
    if not state.get("input_problem"):
        update.update(finish_turn(ctx, state, answer))  # the question itself was added by analyze
    return update
