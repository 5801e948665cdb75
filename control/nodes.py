"""Graph nodes: small functions `(state, runtime) -> dict` returning only the fields they change.

Path and timing bookkeeping is added around every node by `control.graph`; the decisions live in
pure helpers (`control.rules`, `control.extractive`, `control.model_mode`, the helpers below).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.runtime import Runtime
from langgraph.types import Overwrite
from pydantic import ValidationError

from control.context import Context
from control.evidence import Evidence
from control.extractive import extractive_answer, insufficient_message
from control.generation import build_generation_messages
from control.model_mode import model_generate, model_rewrite, model_route
from control.rules import (
    RouteDecision,
    check_question,
    chitchat_reply,
    extract_entities,
    is_chinese,
    rewrite_query,
    route_question,
)
from control.state import State, Status, evidence_key, merge_evidence
from control.tool_types import ToolCall, ToolResult

logger = logging.getLogger(__name__)

HISTORY_MESSAGES = 6
"""Messages of earlier turns shown to the model (until the history module windows them)."""


def merge_entities(old: dict[str, list[str]] | None, new: dict[str, list[str]]) -> dict[str, list[str]]:
    """Union of entity lists per key, first-seen order, newest last (so `[-1]` is the latest)."""
    out = {key: list(values) for key, values in (old or {}).items()}
    for key, values in new.items():
        kept = [v for v in out.get(key, []) if v not in values]
        out[key] = [*kept, *values]
    return out


def best_relevance(evidence: Sequence[Evidence]) -> float | None:
    """Absolute quality of a result list: max `relevance`, or max `score` if no item has a relevance."""
    if not evidence:
        return None
    known = [e.relevance for e in evidence if e.relevance is not None]
    return max(known) if known else max(e.score for e in evidence)


def usable_evidence(evidence: Sequence[Evidence], min_relevance: float) -> list[Evidence]:
    """Evidence good enough to answer from (relevance, or score when unknown, >= `min_relevance`)."""
    return [e for e in evidence if evidence_key(e) >= min_relevance]


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
        "tool_calls": [],
        "tool_results": Overwrite([]),
        "context_budget": {},
        "input_problem": check.problem,
        "clarification": None,
        "retry_count": 0,
        "quality": None,
        "retrieval_error": None,
        "status": "completed",
        "answer": None,
        "evidence_ids": [],
        "top_k": ctx.top_k,
        "entities": dict(state.get("entities") or {}),
    }
    if check.problem:
        return {**update, "route": "clarify", "clarification": check.problem}
    text = check.text
    entities = merge_entities(state.get("entities"), extract_entities(text))
    decision = _decide(ctx, text, _history(state), entities)
    update.update(
        entities=entities,
        route=decision.route,
        messages=[HumanMessage(content=text)],
        tool_calls=[decision.tool_call] if decision.tool_call else [],
        clarification=decision.clarification if decision.route == "clarify" else None,
    )
    if decision.route == "clarify" and not decision.clarification:
        update["clarification"] = (
            "请补充更多信息，以便我帮您处理。"
            if is_chinese(text)
            else "Could you give me a few more details?"
        )
    if decision.route == "retrieve":
        queries = _rewrite(ctx, text, _history(state), entities)
        update.update(queries=queries, query=queries[0])
    return update


def _decide(
    ctx: Context, text: str, history: list[AnyMessage], entities: dict[str, list[str]]
) -> RouteDecision:
    model = ctx.chat_model
    if model is not None:
        try:
            return model_route(model, text, history=history, entities=entities)
        except Exception as exc:
            logger.warning("model routing failed, using the rules: %s", exc)
    return route_question(text, entities)


def _rewrite(ctx: Context, text: str, history: list[AnyMessage], entities: dict[str, list[str]]) -> list[str]:
    model = ctx.chat_model
    if model is not None:
        try:
            return model_rewrite(model, text, history=history, entities=entities)
        except Exception as exc:
            logger.warning("model rewriting failed, using the rules: %s", exc)
    return rewrite_query(text)


def search(ctx: Context, queries: Sequence[str], top_k: int) -> tuple[list[Evidence], str | None]:
    """Run every query against the retriever; return merged evidence and the error, if all failed."""
    if ctx.retriever is None:
        return [], "no retriever configured"
    found: list[Evidence] = []
    errors: list[str] = []
    for query in queries:
        try:
            items = ctx.retriever.retrieve(query, top_k=top_k, filters=ctx.filters)
            found = merge_evidence(found, [Evidence.model_validate(i) for i in items])
        except (Exception, ValidationError) as exc:
            logger.warning("retrieval failed for %r: %s", query, exc)
            errors.append(f"{type(exc).__name__}: {exc}")
    return found, (errors[0] if errors and len(errors) == len(queries) else None)


def retrieve(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Retrieve `top_k` chunks for each rewritten query."""
    ctx = runtime.context
    evidence, error = search(ctx, state.get("queries") or [state["question"]], state.get("top_k", ctx.top_k))
    return {"evidence": evidence, "retrieval_error": error}


def evaluate(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Measure the best absolute relevance of the evidence so far."""
    return {"quality": best_relevance(state.get("evidence") or [])}


def expand(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Search again with the original question and the larger `expand_top_k`; merged by the reducer."""
    ctx = runtime.context
    evidence, error = search(ctx, [state["question"]], ctx.expand_top_k)
    update: dict[str, Any] = {"evidence": evidence, "retry_count": state.get("retry_count", 0) + 1}
    if not (state.get("evidence") or evidence):
        update["retrieval_error"] = error or state.get("retrieval_error")
    else:
        update["retrieval_error"] = None
    return update


def _thread_id(runtime: Runtime[Context]) -> str:
    info = runtime.execution_info
    return (info.thread_id if info is not None else None) or "default"


def _error_results(calls: Sequence[ToolCall], message: str) -> list[ToolResult]:
    return [ToolResult(call_id=c.id, name=c.name, status="error", error=message) for c in calls]


def tool_exec(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Run the turn's tool calls with the configured executor; failures become error results."""
    calls = list(state.get("tool_calls") or [])
    executor = runtime.context.tool_executor
    if executor is None:
        return {"tool_results": _error_results(calls, "no tool executor configured")}
    try:
        results = list(executor.execute(calls, thread_id=_thread_id(runtime)))
    except Exception as exc:
        logger.warning("tool executor raised: %s", exc)
        results = _error_results(calls, f"tool executor failed: {type(exc).__name__}: {exc}")
    return {"tool_results": results}


def _flatten(content: Any) -> str:
    if hasattr(content, "model_dump"):
        content = content.model_dump()
    if isinstance(content, dict):
        parts = [
            f"{key}: {value}"
            for key, value in content.items()
            if value is not None and not isinstance(value, dict | list)
        ][:8]
        return "; ".join(parts)
    return str(content)[:500]


def summarize_tool_results(results: Sequence[ToolResult], question: str) -> tuple[str, Status]:
    """Turn tool results into a reply and a status.

    ok -> the result's key fields as text (completed); invalid_arguments -> explain and ask the user
    (needs_clarification); any other failure -> explain, try later (degraded).
    """
    zh = is_chinese(question)
    lines: list[str] = []
    statuses: set[Status] = set()
    for result in results:
        if result.status == "ok":
            lines.append(f"{result.name}: {_flatten(result.content)}")
            statuses.add("completed")
        elif result.status == "invalid_arguments":
            ask = "请提供正确的 12 位订单号。" if zh else "Please give me the 12-digit order number."
            if result.name != "query_order":
                ask = "请检查信息后再试。" if zh else "Please check the details you gave."
            lines.append(f"{result.name}: {result.error or 'invalid arguments'}. {ask}")
            statuses.add("needs_clarification")
        else:
            later = "请稍后再试。" if zh else "Please try again later."
            lines.append(f"{result.name} failed ({result.status}: {result.error or 'no details'}). {later}")
            statuses.add("degraded")
    if not lines:
        return ("没有可执行的工具调用。" if zh else "No tool call was made."), "degraded"
    for status in ("needs_clarification", "degraded"):
        if status in statuses:
            return "\n".join(lines), status  # type: ignore[return-value]
    return "\n".join(lines), "completed"


def answer_from_evidence(
    ctx: Context, state: State, evidence: list[Evidence]
) -> tuple[str | None, list[str], Status]:
    """Answer from usable evidence: the model's grounded answer (validated) or the extractive one."""
    question = state["question"]
    model = ctx.chat_model
    if model is not None:
        messages = build_generation_messages(
            question, evidence, history=_history(state)[:-1], entities=state.get("entities")
        )
        try:
            grounded = model_generate(model, messages)
        except Exception as exc:
            logger.warning("model generation failed, falling back to the extractive answer: %s", exc)
        else:
            allowed = {e.id for e in evidence}
            cited = list(dict.fromkeys(grounded.evidence_ids))
            if not grounded.answer.strip():
                return insufficient_message(question), [], "insufficient_evidence"
            if not cited or any(i not in allowed for i in cited):
                logger.warning("model answer rejected: cited %s, allowed %s", cited, sorted(allowed))
                return None, [], "rejected"
            return grounded.answer.strip(), cited, "completed"
    extracted = extractive_answer(state.get("query") or question, evidence)
    if extracted is None:
        return insufficient_message(question), [], "insufficient_evidence"
    return extracted.answer, extracted.evidence_ids, ("degraded" if model is not None else "completed")


def generate(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Write the turn's answer, status and cited evidence ids, according to the route."""
    ctx = runtime.context
    question = state.get("question", "")
    route = state.get("route", "clarify")
    evidence_ids: list[str] = []
    answer: str | None
    status: Status
    if route == "answer":
        answer, status = chitchat_reply(question), "completed"
    elif route == "clarify":
        answer, status = state.get("clarification") or "", "needs_clarification"
    elif route == "tool":
        answer, status = summarize_tool_results(state.get("tool_results") or [], question)
    else:
        usable = usable_evidence(state.get("evidence") or [], ctx.usable_relevance)
        if usable:
            answer, evidence_ids, status = answer_from_evidence(ctx, state, usable)
        elif state.get("retrieval_error"):
            answer = (
                "知识库暂时不可用，请稍后再试。"
                if is_chinese(question)
                else "The knowledge base is not available right now. Please try again later."
            )
            status = "degraded"
        else:
            answer, status = insufficient_message(question), "insufficient_evidence"
    update: dict[str, Any] = {"answer": answer, "status": status, "evidence_ids": evidence_ids}
    if answer and not state.get("input_problem"):
        update["messages"] = [AIMessage(content=answer)]  # the question itself was added by analyze
    return update
