"""Request and response bodies of the service's own endpoints (`/v1/search`, `/v1/ask`, threads).

Requests forbid unknown fields, so a misspelt field is a 422 naming it rather than silently ignored.
Responses allow extra fields: they document the stable objects without hiding fields added later.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

MAX_TOP_K = 100


class SearchRequest(BaseModel):
    """Body of `POST /v1/search`."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, description="What to search for.")
    top_k: int | None = Field(default=None, ge=1, le=MAX_TOP_K, description="At most this many results.")
    filters: dict[str, Any] | None = Field(
        default=None,
        description="Haystack metadata filter, e.g. "
        '{"field": "meta.source_id", "operator": "==", "value": "leave-policy.md"}; '
        "ANDed with the API key's tenant filter.",
    )
    mode: Literal["hybrid", "bm25", "dense"] | None = Field(
        default=None, description="Override the retrieval mode."
    )


class AskRequest(BaseModel):
    """Body of `POST /v1/ask` and `POST /v1/ask/stream`."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(description="The user's message for this turn.")
    thread_id: str | None = Field(
        default=None,
        description="Conversation thread to continue (1-128 letters, digits, _ . @ + = -); "
        "omitted = a one-off question that is not stored.",
    )
    filters: dict[str, Any] | None = Field(
        default=None, description="Haystack metadata filter for every retrieval of this turn (narrows only)."
    )


class SearchHit(BaseModel):
    """One ranked chunk, as in `haygraph search --json`."""

    model_config = ConfigDict(extra="allow")

    rank: int
    id: str
    score: float
    relevance: float | None
    source: str
    heading_path: list[str]
    page: int | None = None
    char_start: int | None = None
    char_end: int | None = None
    text: str


class SearchResponse(BaseModel):
    """Response of `POST /v1/search`: the object `haygraph search --json` prints."""

    model_config = ConfigDict(extra="allow")

    query: str
    reranked: bool | None
    notes: list[str]
    timings_ms: dict[str, float]
    results: list[SearchHit]


class EvidenceItem(BaseModel):
    """One retrieved evidence item of a turn."""

    model_config = ConfigDict(extra="allow")

    id: str
    text: str
    score: float
    source: str
    page: int | None = None
    page_breaks: list[tuple[int, int]] = Field(
        default_factory=list, description="Where later pages begin in `text`: [offset, page] pairs."
    )
    char_start: int | None = None
    char_end: int | None = None


class AnswerSpanView(BaseModel):
    """A span of a cited evidence item that the reader found answers the question."""

    evidence_id: str
    start: int
    end: int
    text: str
    margin: float = Field(description="Span score minus the item's no-answer score (> 0: an answer).")
    page: int | None = Field(default=None, description="The page that holds the span (None: no pages).")


class AskResult(BaseModel):
    """The result object of one turn, as `haygraph ask --json` prints it (see `haygraph.control.api`)."""

    model_config = ConfigDict(extra="allow")

    status: Literal[
        "completed",
        "insufficient_evidence",
        "needs_clarification",
        "needs_confirmation",
        "degraded",
        "rejected",
    ]
    route: str
    answer: str | None
    evidence_ids: list[str]
    evidence: list[EvidenceItem]
    path: list[str]
    query: str
    timings_ms: dict[str, float]
    notes: list[str] = Field(default_factory=list, description="Why the turn degraded or what was withheld.")
    pending: list[dict[str, Any]] = Field(
        default_factory=list,
        description="needs_confirmation only: the side-effect calls waiting ({call_id, tool, args}); "
        "answer with POST /v1/threads/{thread_id}/confirm.",
    )
    decision: dict[str, Any] | None = Field(
        default=None,
        description="The turn's last answer-or-refuse decision: {answerable, probability, threshold, "
        "signals, rule, margin, margin_needed} (margin: the reader's best span over 'no answer'; "
        "margin_needed: the margin at which the model would answer); null when none was made "
        "(chit-chat, a tool turn).",
    )
    answer_spans: list[AnswerSpanView] = Field(
        default_factory=list,
        description="The reader's answer spans in the cited evidence, best first: character offsets into "
        "that evidence item's text (open it with GET /v1/evidence/{id}?start=&end= to highlight one).",
    )


class ConfirmRequest(BaseModel):
    """Body of `POST /v1/threads/{thread_id}/confirm`: approve or deny the pending tool calls."""

    model_config = ConfigDict(extra="forbid")

    approve: bool = Field(description="true runs the pending side-effect calls; false declines them.")


class ThreadMessage(BaseModel):
    """One message of a thread's kept history."""

    role: Literal["user", "assistant"]
    content: Any


class ThreadView(BaseModel):
    """Response of `GET /v1/threads/{thread_id}`: what the thread remembers."""

    model_config = ConfigDict(extra="allow")

    thread_id: str
    turns: int
    messages: list[ThreadMessage]
    summary: str
    entities: dict[str, list[str]]
    last_result: AskResult


class ThreadSummary(BaseModel):
    """One of the caller's threads in `GET /v1/threads`."""

    thread_id: str
    turns: int
    title: str = Field(description="The thread's first question (shortened).")
    updated: str = Field(description="When its last turn was stored (ISO 8601).")


class Highlight(BaseModel):
    """Character offsets `[start, end)` of a quote inside the evidence `text`, and the page holding it."""

    start: int
    end: int
    page: int | None = Field(default=None, description="The page of the quote's start (None: no pages).")


class EvidenceView(BaseModel):
    """Response of `GET /v1/evidence/{chunk_id}`: one stored chunk and where a quote lies in it."""

    model_config = ConfigDict(extra="allow")

    id: str
    text: str
    source: str
    heading_path: list[str]
    page: int | None = Field(default=None, description="The page where the chunk starts.")
    page_breaks: list[tuple[int, int]] = Field(
        default_factory=list, description="Where later pages begin in `text`: [offset, page] pairs."
    )
    char_start: int | None = Field(default=None, description="The chunk's offset in its source text.")
    char_end: int | None = None
    highlight: Highlight | None = Field(
        default=None, description="Offsets of `quote` in `text` (null without a quote or when not found)."
    )


class StatusView(BaseModel):
    """Response of `GET /v1/status`: the store, the models and what the key may do."""

    model_config = ConfigDict(extra="allow")

    health: Literal["ready", "empty", "loading"]
    tenant: str | None
    write: bool = Field(description="Whether the key may upload, re-index and remove documents.")
    store_version: str | None
    chunks: int = Field(description="Chunks the key sees: its tenant's and the shared ones (tenant *).")
    shared_chunks: int = Field(default=0, description="Chunks shared by every tenant (tenant *).")
    sources: int = Field(description="Documents of the key's own tenant (shared documents are not listed).")
    embedding_model: str | None
    retrieval_mode: str | None
    reranker: str | None
    model: str
    threads: str
    active_runs: int
    max_upload_bytes: int
    formats: list[str] = Field(description="File extensions an upload may have.")


class SourceView(BaseModel):
    """One document in `GET /v1/sources`."""

    model_config = ConfigDict(extra="allow")

    id: str = Field(description="The source id: what `DELETE /v1/sources/{id}` and citations name.")
    title: str
    format: str | None
    chunks: int
    chars: int
    bytes: int | None = Field(description="Size of its file, when the server still has it.")
    indexed_at: str | None = Field(description="When it was uploaded and indexed (uploads only).")
    uploaded: bool = Field(description="Uploaded through the service (it can be re-indexed here).")
    site: str | None = Field(
        default=None,
        description="A web page: the URL its site was crawled from (re-index re-syncs that site); "
        "None for a file.",
    )
    sync: dict[str, Any] | None = Field(
        default=None,
        description="A web page: its site's last sync on this server: at, state, kind (site or resync), "
        "job, and pages new, changed, unchanged, removed, skipped, failed; error when it failed.",
    )


class IndexJobView(BaseModel):
    """An indexing job: `done` of `total` chunks embedded (or pages fetched of the limit while `crawling`)."""

    id: str
    kind: Literal["upload", "reindex", "site", "resync"]
    files: list[str] = Field(description="The uploaded files' names; for a website, its URL.")
    state: Literal["queued", "running", "done", "failed"]
    phase: Literal["queued", "crawling", "converting", "embedding", "saving", "loading", "done", "failed"]
    done: int
    total: int
    report: dict[str, Any] | None = Field(
        default=None,
        description="When done: sources, chunks, embedded, from_cache, skipped, ...; for a website: new, "
        "changed, unchanged, removed, skipped, failed (counts), removed_pages, skipped_pages, failed_pages, "
        "requests, not_modified, chunks, seconds",
    )
    error: str | None = None
    created: float
    finished: float | None = None


class UploadedFile(BaseModel):
    """What happened to one uploaded file."""

    name: str
    accepted: bool
    error: str | None = Field(default=None, description="Why it was refused (type, name, size, zip bomb).")


class UploadView(BaseModel):
    """Response of `POST /v1/sources` (202): the indexing job and each file's outcome (or the site's URL)."""

    job: IndexJobView
    files: list[UploadedFile]
    site: str | None = Field(default=None, description="The website's normalised URL (a `url` post).")


class RemovalView(BaseModel):
    """Response of `DELETE /v1/sources/{id}`."""

    removed: list[str]
    chunks: int


class ErrorBody(BaseModel):
    """The `error` member of every error response."""

    type: str
    message: str


class ErrorResponse(BaseModel):
    """Every error: `{"error": {"type": ..., "message": ...}}`."""

    error: ErrorBody


def search_payload(result: Any) -> dict[str, Any]:
    """A `SearchResult` as the JSON object of `haygraph search --json`."""
    return dict(result.to_json())
