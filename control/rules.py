"""Offline rules for English and Chinese: input checks, routing and query rewriting.

Pure functions with no model: they drive the graph when `Context.model` is None and are the
fallback when a model fails. Routing is deliberately conservative: anything that is not clearly
chit-chat or a request about one specific order is treated as a knowledge question.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from haygraph.control.state import Route
from haygraph.control.tool_types import ToolCall

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
ORDER_ID = re.compile(r"(?<!\d)\d{12}(?!\d)")
_LONG_NUMBER = re.compile(r"(?<!\d)\d{5,}(?!\d)")

_CHITCHAT_EN = {
    "thanks": ["thank you very much", "thank you so much", "thanks a lot", "thank you", "thanks", "thx"],
    "identity": ["who are you", "what are you", "what is your name", "what's your name"],
    "bye": ["goodbye", "good bye", "bye", "see you"],
    "greeting": [
        "good morning", "good afternoon", "good evening", "how are you doing", "how are you",
        "how is it going", "nice to meet you", "hello", "hey", "hi", "yo",
    ],
}  # fmt: skip
_CHITCHAT_ZH = {
    "thanks": ["非常感谢", "多谢", "谢谢", "感谢"],
    "identity": ["你是谁", "您是谁", "你叫什么"],
    "bye": ["再见", "拜拜"],
    "greeting": ["早上好", "下午好", "晚上好", "你好吗", "您好", "你好", "哈喽", "在吗", "嗨"],
}
_CHITCHAT_FILLER = {"there", "again", "so", "much", "very", "bot", "assistant", "ok", "okay", "and"}
_ZH_FILLER_CHARS = set("啊呀呢吧吗嘛哦哈你您的了们")

_ORDER_KW_EN = re.compile(
    r"\b(orders?|shipping|shipment|shipped|deliver(?:y|ed|ies)?|packages?|parcels?|tracking|track"
    r"|logistics|courier)\b"
)
_ORDER_KW_ZH = ("订单", "物流", "快递", "发货", "到货", "没到", "包裹", "单号", "运单")
_PERSONAL_EN = re.compile(
    r"\b(my|mine|where(?:'s| is)|status|track|hasn'?t|has not|not arrived|didn'?t|did not|still|yet|late)\b"
)
_PERSONAL_ZH = (
    "我的", "我买", "我下", "没到", "到哪", "还没", "状态", "查一下", "查下", "查查", "帮我查",
    "查询", "在哪", "怎么还",
)  # fmt: skip
_POLICY_EN = re.compile(
    r"\b(polic(?:y|ies)|how long|how much|cost|fees?|free|usually|typically|normally|options?|methods?"
    r"|international|countries|rules?)\b"
)
_POLICY_ZH = ("政策", "规定", "规则", "一般", "多久", "多少钱", "费用", "运费", "几天", "通常", "哪些")

_FILLER_EN = [
    r"^(?:hi|hello|hey|and|also|so)\b[\s,!.]*",
    r"^(?:could|can|would|will) you (?:please )?(?:tell me|let me know|explain|help me(?: to)?"
    r"(?: (?:find|understand|check))?)?\b",
    r"^i(?:'d| would) like to know\b",
    r"^i (?:want|need) to know\b",
    r"^i(?:'m| am) wondering\b",
    r"^(?:do you know|tell me)\b",
    r"\b(?:please|kindly)\b",
    r"\b(?:thanks|thank you)\b[.!]*$",
]
_FILLER_ZH = [
    "能不能告诉我", "可不可以告诉我", "可以告诉我", "帮我看看", "帮我查一下", "帮我查查", "我想问一下",
    "我想知道", "想了解一下", "请问一下", "请问", "麻烦你", "麻烦您", "麻烦", "告诉我", "我想问", "一下",
    "你好", "您好", "帮我",
]  # fmt: skip
_TRAILING_ZH = re.compile(r"[啊吧呢吗呀嘛哦]+[\s?？!！。.~～]*$")


class RouteDecision(BaseModel):
    """A routing decision, from the rules or (as structured output) from a chat model."""

    model_config = ConfigDict(extra="forbid")

    route: Route = Field(
        description=(
            "retrieve: a question answerable from the knowledge base; tool: needs a live lookup such as "
            "an order status; answer: greeting, thanks or chit-chat; clarify: required information "
            "(e.g. the order number) is missing, ask the user for it."
        )
    )
    reason: str = Field(default="", description="One short sentence explaining the choice.")
    intent: str | None = Field(
        default=None,
        description="For route=tool (or clarify about a tool request): the intent whose tools are "
        "needed, one of the intents listed in the instructions.",
    )
    tool_name: str | None = Field(default=None, description="For route=tool: the tool to call.")
    tool_args: dict[str, Any] | None = Field(default=None, description="For route=tool: its arguments.")
    clarification: str | None = Field(
        default=None, description="For route=clarify: the question to ask the user, in the user's language."
    )

    @property
    def tool_call(self) -> ToolCall | None:
        """The requested call (id "call_1"), or None when the route is not "tool"."""
        if self.route != "tool" or not self.tool_name:
            return None
        return ToolCall(id="call_1", name=self.tool_name, args=dict(self.tool_args or {}))


class QuestionCheck(BaseModel):
    """The cleaned question and, if it is unusable, what is wrong with it (in the user's language)."""

    text: str
    problem: str | None = None


def is_chinese(text: str) -> bool:
    """Whether the text contains Chinese characters (replies then use Chinese)."""
    return bool(_CJK.search(text))


def clean_text(text: str) -> str:
    """Drop control/format characters (tabs and newlines become spaces) and collapse whitespace."""
    chars = []
    for ch in text:
        if ch in "\t\n\r\x0b\x0c":
            chars.append(" ")
        elif unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Co"):
            chars.append(ch)
    return " ".join("".join(chars).split())


def check_question(raw: object, max_chars: int) -> QuestionCheck:
    """Clean the raw question and say what is wrong with it, if anything.

    Problems: not text, empty or whitespace/control characters only, longer than `max_chars` (after
    cleaning), or no letter/digit at all (only symbols, punctuation or emoji). Mixed scripts are fine.
    """
    text = clean_text(raw) if isinstance(raw, str) else ""
    zh = is_chinese(text)
    if not text:
        return QuestionCheck(text="", problem="Your message is empty. Please type a question.")
    if len(text) > max_chars:
        problem = (
            f"您的问题太长（{len(text)} 个字符，上限 {max_chars}）。请缩短后再问。"
            if zh
            else f"Your question is too long ({len(text)} characters; the limit is {max_chars}). "
            "Please shorten it."
        )
        return QuestionCheck(text=text[:max_chars], problem=problem)
    if not any(unicodedata.category(ch)[0] in "LN" for ch in text):
        return QuestionCheck(
            text=text,
            problem="Your message contains no words, only symbols or punctuation. Please ask in words.",
        )
    return QuestionCheck(text=text)


def _words_only(text: str) -> str:
    return " ".join("".join(ch if unicodedata.category(ch)[0] in "LN" else " " for ch in text).split())


def chitchat_kind(text: str) -> Literal["greeting", "thanks", "identity", "bye"] | None:
    """Return the kind of chit-chat if the whole message is greeting/thanks/small talk, else None.

    "Hi, what is the refund policy?" is not chit-chat: something beyond the phrases must remain empty.
    """
    rest = " " + _words_only(text.lower()) + " "
    found: list[str] = []
    for kind, phrases in _CHITCHAT_EN.items():
        for phrase in phrases:
            if f" {phrase} " in rest:
                rest = rest.replace(f" {phrase} ", " ")
                found.append(kind)
    for kind, phrases in _CHITCHAT_ZH.items():
        for phrase in phrases:
            if phrase in rest:
                rest = rest.replace(phrase, " ")
                found.append(kind)
    leftover = [w for w in rest.split() if w not in _CHITCHAT_FILLER and set(w) - _ZH_FILLER_CHARS]
    if not found or leftover:
        return None
    for kind in ("identity", "thanks", "bye", "greeting"):
        if kind in found:
            return kind  # type: ignore[return-value]
    return None


def chitchat_reply(text: str) -> str:
    """Return a short friendly reply to chit-chat, in the user's language; it makes no factual claim."""
    kind = chitchat_kind(text) or "greeting"
    zh = is_chinese(text)
    replies = {
        "greeting": ("您好！请问有什么可以帮您？", "Hello! Ask me anything about the knowledge base."),
        "thanks": ("不客气！还有什么可以帮您？", "You're welcome! Anything else I can help with?"),
        "identity": (
            "我是知识库助手：我根据检索到的文档回答，并注明出处。",
            "I am a knowledge-base assistant: I answer from the documents I retrieve and cite them.",
        ),
        "bye": ("再见！", "Goodbye!"),
    }
    return replies[kind][0 if zh else 1]


def order_number_request(text: str, wrong: str | None = None) -> str:
    """Return the clarification question asking for the 12-digit order number."""
    if is_chinese(text):
        prefix = f"“{wrong}”不是有效的订单号。" if wrong else ""
        return prefix + "请提供您的 12 位订单号，我来帮您查询。"
    prefix = f"'{wrong}' is not a valid order number. " if wrong else ""
    return prefix + "Please give me your 12-digit order number so I can look it up."


def _has_any(text: str, needles: tuple[str, ...]) -> bool:
    return any(n in text for n in needles)


def route_question(text: str, entities: dict[str, list[str]] | None = None) -> RouteDecision:
    """Route a cleaned question: chit-chat -> answer, order lookups -> tool/clarify, the rest -> retrieve.

    An order question is one with an order keyword (order, delivery, 订单, 快递, 没到, ...) that is
    about a specific order (my, where is, 我的, 还没, ...) rather than the policy in general
    (how long, policy, 一般, 多久, ...). With a 12-digit number (in the text, or remembered in
    `entities["order_ids"]` from earlier turns) it becomes a `query_order` call; without one, a
    request for the number. A bare 12-digit number is taken as an order number.
    """
    low = text.lower()
    if chitchat_kind(text):
        return RouteDecision(route="answer", reason="greeting or chit-chat")
    ids = ORDER_ID.findall(text)
    has_kw = bool(_ORDER_KW_EN.search(low)) or _has_any(text, _ORDER_KW_ZH)
    if ids and (has_kw or not _words_only(ORDER_ID.sub(" ", text))):
        return _order_call(ids[0], "12-digit order number in an order question")
    personal = bool(_PERSONAL_EN.search(low)) or _has_any(text, _PERSONAL_ZH)
    policy = bool(_POLICY_EN.search(low)) or _has_any(text, _POLICY_ZH)
    if has_kw and personal and not policy:
        known = (entities or {}).get("order_ids") or []
        if known:
            return _order_call(known[-1], "order question about the order mentioned earlier")
        wrong = _LONG_NUMBER.search(text)
        return RouteDecision(
            route="clarify",
            intent="order",
            reason="order question without a valid 12-digit order number",
            clarification=order_number_request(text, wrong.group(0) if wrong else None),
        )
    return RouteDecision(route="retrieve", reason="knowledge question")


def _order_call(order_id: str, reason: str) -> RouteDecision:
    return RouteDecision(
        route="tool",
        intent="order",
        reason=reason,
        tool_name="query_order",
        tool_args={"order_id": order_id, "detail_level": "summary"},
    )


def extract_entities(text: str) -> dict[str, list[str]]:
    """Rule-extracted key facts of one message (currently 12-digit order numbers as "order_ids")."""
    ids = ORDER_ID.findall(text)
    return {"order_ids": ids} if ids else {}


def _strip_fillers(text: str) -> str:
    out = text
    for _ in range(3):  # fillers can be stacked: "Hi, could you please tell me ..."
        before = out
        for pattern in _FILLER_EN:
            out = re.sub(pattern, " ", out, flags=re.IGNORECASE).strip(" ,")
        for phrase in _FILLER_ZH:
            out = out.replace(phrase, "")
        out = _TRAILING_ZH.sub("", out).strip(" ,，、")
        if out == before:
            break
    return " ".join(out.split()).strip(" ,，、?？!！。.~～")


def rewrite_query(text: str) -> list[str]:
    """1–3 retrieval queries: filler and politeness stripped, entities (numbers, ids, names) kept.

    The first query is the whole rewritten question; each further one is a separate sub-question
    when the message asks several. Never empty: falls back to the cleaned original text.
    """
    cleaned = clean_text(text)
    main = _strip_fillers(cleaned)
    queries = [main] if _words_only(main) else []
    parts = [p for p in re.split(r"[?？]+", cleaned) if _words_only(p)]
    if len(parts) > 1:
        for part in parts:
            sub = _strip_fillers(part)
            if _words_only(sub) and sub not in queries and len(queries) < 3:
                queries.append(sub)
    return queries or [cleaned]
