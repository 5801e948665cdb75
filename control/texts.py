"""Every user-facing message of the control plane, in English and Chinese — the one file to edit them.

A `Bilingual` message picks its language from the user's question (Chinese when the question
contains Chinese characters) and fills `{placeholders}` from keyword arguments. Model prompts are in
`haygraph.control.prompts`; tool-specific messages (e.g. "please give me your order number") are
declared by each tool's contract (`haygraph.control.tools.OfflineTrigger`).
"""

from __future__ import annotations

from dataclasses import dataclass

from haygraph.control.language import is_chinese


@dataclass(frozen=True)
class Bilingual:
    """One message in English and Chinese."""

    en: str
    zh: str

    def for_question(self, question: str, **values: object) -> str:
        """Return the message in the language of `question`, `{name}` placeholders filled from `values`."""
        text = self.zh if is_chinese(question) else self.en
        return text.format(**values) if values else text


# -- input checks (analyze) ------------------------------------------------------------------------------

EMPTY_MESSAGE = Bilingual(
    en="Your message is empty. Please type a question.",
    zh="您的消息是空的，请输入问题。",
)
TOO_LONG = Bilingual(
    en="Your question is too long ({length} characters; the limit is {limit}). Please shorten it.",
    zh="您的问题太长（{length} 个字符，上限 {limit}）。请缩短后再问。",
)
NO_WORDS = Bilingual(
    en="Your message contains no words, only symbols or punctuation. Please ask in words.",
    zh="您的消息只有符号或标点，没有文字。请用文字提问。",
)
NEED_DETAILS = Bilingual(
    en="Could you give me a few more details?",
    zh="请补充更多信息，以便我帮您处理。",
)
"""The clarification when a route is `clarify` but no specific question was produced."""

# -- chit-chat (answer route) ---------------------------------------------------------------------------

CHITCHAT_REPLIES = {
    "greeting": Bilingual(
        en="Hello! Ask me anything about the knowledge base.", zh="您好！请问有什么可以帮您？"
    ),
    "thanks": Bilingual(en="You're welcome! Anything else I can help with?", zh="不客气！还有什么可以帮您？"),
    "identity": Bilingual(
        en="I am a knowledge-base assistant: I answer from the documents I retrieve and cite them.",
        zh="我是知识库助手：我根据检索到的文档回答，并注明出处。",
    ),
    "bye": Bilingual(
        en="You're welcome. Goodbye, and come back any time you have a question!",
        zh="好的，再见！有问题随时再来问我。",
    ),
    "ack": Bilingual(
        en="Okay. Ask me whenever you have another question about the knowledge base.",
        zh="好的。还有其他问题，随时问我。",
    ),
}
"""Replies to chit-chat by kind; none makes a factual claim. "bye" is the closing reply ("thanks, that's
all", "就这些，谢谢", "bye"): it ends the conversation instead of asking for more; "ack" answers an
acknowledgement alone ("ok", "got it", "好的", "收到")."""

# -- answers from evidence (retrieve route) -------------------------------------------------------------

INSUFFICIENT_EVIDENCE = Bilingual(
    en="I could not find evidence for this in the knowledge base.",
    zh="知识库中没有找到与此相关的依据。",
)
"""The fixed honest reply when there is no usable evidence."""
SOURCE_IN_ENGLISH = Bilingual(
    en="(The source is in English.)",
    zh="（来源为英文文档，以上为原文摘录。）",
)
"""After an answer quoted from an English source to a Chinese question (`reader_answer.source_note`)."""
SOURCE_IN_CHINESE = Bilingual(
    en="(The source is in Chinese; the passage is quoted as written.)",
    zh="（来源为中文文档。）",
)
"""After an answer quoted from a Chinese source to an English question."""
KNOWLEDGE_BASE_UNAVAILABLE = Bilingual(
    en="The knowledge base is not available right now. Please try again later.",
    zh="知识库暂时不可用，请稍后再试。",
)
WINDOW_EXCEEDED = Bilingual(
    en="This question and its context do not fit in the model's context window, so it cannot be "
    "answered. Please shorten the question or start a new conversation.",
    zh="问题和对话内容超出了模型的上下文窗口，无法作答。请缩短问题或开始新的对话。",
)
RUN_FAILED = Bilingual(
    en="Something went wrong. Please try again later.",
    zh="出了点问题，请稍后再试。",
)
"""The answer of a turn whose run failed unexpectedly (status `degraded`)."""

# -- tool turns -----------------------------------------------------------------------------------------

TOOL_NOT_ALLOWED = Bilingual(
    en="I am not permitted to use {name} in this session, so nothing was done.",
    zh="本次会话无权使用 {name}，未执行任何操作。",
)
TOOL_UNKNOWN = Bilingual(
    en="{name} is not an available tool, so nothing was done.",
    zh="{name} 不是可用的工具，未执行任何操作。",
)
TOOL_BUDGET_EXCEEDED = Bilingual(
    en="{name} was not run: this turn's tool call limit was reached. Please ask for it separately.",
    zh="{name} 未执行：本轮工具调用次数已达上限，请单独再问一次。",
)
TOOL_FAILED = Bilingual(
    en="{name} failed ({status}: {details}). Please try again later.",
    zh="{name} failed ({status}: {details}). 请稍后再试。",
)
TOOL_BAD_ARGUMENTS = Bilingual(
    en="{name}: {details}. Please check the details you gave.",
    zh="{name}: {details}. 请检查您提供的信息后再试。",
)
TOOL_DECLINED = Bilingual(
    en="{name} was not run because you did not confirm it, so nothing was done.",
    zh="您没有确认 {name}，因此未执行任何操作。",
)
CONFIRM_TOOL_CALLS = Bilingual(
    en="Please confirm before I go ahead: {calls}. Approve or deny?",
    zh="执行前请确认：{calls}。是否同意？",
)
"""The answer of a `needs_confirmation` turn: the pending side-effect calls, waiting for approval."""
NO_TOOL_CALL = Bilingual(en="No tool call was made.", zh="没有可执行的工具调用。")
