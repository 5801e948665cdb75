"""The settings flags every store command shares, and which settings a command ends up using.

``search``, ``ask``, ``chat`` and ``serve-mcp`` take ``--config FILE`` and ``--tuned FILE``
(``ask``/``chat`` also ``--filter FIELD=VALUE``). Query settings resolve in layers, each setting only
the keys it names; a later layer wins:

1. ``store`` — the settings the store was indexed with (``haygraph index --config``), or ``default``
   (the built-in defaults) for a store saved before stores kept their query settings;
2. ``config`` — the ``--config`` file (its indexing settings must equal the store's);
3. ``tuned`` — the ``--tuned`` file of ``haygraph tune``: hybrid mode, fusion method/weights, cut values;
4. ``flag`` — ``search --mode`` / ``--top-k``.

`describe_settings` reports the values in force and where each came from (the ``settings`` object of
the ``--json`` outputs and the MCP ``haygraph://settings`` resource). Nothing heavy is imported at
module level: the parser registers these flags without loading Haystack or torch.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from haygraph.retrieval.config import RetrievalConfig
    from haygraph.retrieval.knowledge_base import KnowledgeBase

logger = logging.getLogger(__name__)

REPORTED: tuple[str, ...] = ("mode", "top_k", "fusion", "reranker", "cut")
"""Query settings shown in the ``settings`` object (``relevance`` calibration weights are left out)."""

_FIELD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*(\.[A-Za-z0-9_][A-Za-z0-9_-]*)*")


# -- argument types and flags ----------------------------------------------------------------------
MAX_TOP_K = 10_000
"""`haygraph.retrieval.config.MAX_TOP_K`, repeated so that building the parser imports no pydantic (a test
checks they are equal)."""


class TopKAction(argparse.Action):
    """``--top-k N``: a whole number from 1 to `MAX_TOP_K`; else one error naming the flag and the range.

    An action rather than a `type`: the query settings' own check would report ``query.top_k`` and
    ``query.cut.max_keep`` (which the flag also sets), not the flag the user typed.
    """

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        """Store the value as an int, or stop with ``--top-k must be between 1 and 10000, got '…'``."""
        try:
            value = int(values)
        except (TypeError, ValueError):
            value = 0
        if not 1 <= value <= MAX_TOP_K:
            parser.error(f"{option_string or '--top-k'} must be between 1 and {MAX_TOP_K}, got {values!r}")
        setattr(namespace, self.dest, value)


def add_top_k_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--top-k N`` (1 to `MAX_TOP_K`) to a command's parser."""
    parser.add_argument(
        "--top-k", action=TopKAction, metavar="N", help=f"at most this many results (1 to {MAX_TOP_K})"
    )


def filter_pair(text: str) -> tuple[str, str]:
    """Argparse type: ``FIELD=VALUE`` -> (``meta.FIELD``, VALUE); ``meta.`` may be written or left out.

    FIELD is a dotted name of letters, digits, ``_`` and ``-`` (``source_id``, ``meta.tenant``); an
    empty field (``=x``, ``meta.=x``) or an empty value is refused.
    """
    key, sep, value = text.partition("=")
    field = key.strip().removeprefix("meta.")
    if not sep or not _FIELD.fullmatch(field) or not value:
        raise argparse.ArgumentTypeError(
            f"expects FIELD=VALUE with a field such as source_id or meta.tenant and a non-empty value, "
            f"got {text!r}"
        )
    return f"meta.{field}", value


def filters_from_pairs(pairs: Sequence[tuple[str, str]] | None) -> dict[str, Any] | None:
    """Haystack filters for parsed ``--filter`` pairs: every pair must match (AND); None for none."""
    if not pairs:
        return None
    conditions = [{"field": field, "operator": "==", "value": value} for field, value in pairs]
    return conditions[0] if len(conditions) == 1 else {"operator": "AND", "conditions": conditions}


def add_settings_arguments(parser: argparse.ArgumentParser, *, filters: bool = False) -> None:
    """Add ``--config`` and ``--tuned`` (and ``--filter`` when `filters`) to a command's parser."""
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="retrieval config (YAML/JSON); its query settings override the store's "
        "(indexing settings must match the store)",
    )
    parser.add_argument(
        "--tuned",
        metavar="FILE",
        help="a `haygraph tune` result: use its hybrid fusion and cut values",
    )
    if filters:
        parser.add_argument(
            "--filter",
            action="append",
            type=filter_pair,
            metavar="FIELD=VALUE",
            help="only retrieve chunks whose metadata FIELD equals VALUE (repeatable: all must match)",
        )


# -- layers ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Layer:
    """One source of settings: its name (``config``, ``tuned``, ``flag``) and the keys it sets."""

    source: str
    values: dict[str, Any]
    file: str | None = None


def settings_layers(
    config: str | None = None,
    tuned: str | None = None,
    *,
    mode: str | None = None,
    top_k: int | None = None,
) -> list[Layer]:
    """Read ``--config`` and ``--tuned`` and collect the flags, in precedence order (later wins).

    Raises:
        ConfigError: the config file cannot be read or is invalid (the message names ``--config``).
        EvalError: the tuned file is not a `haygraph tune` result (the message names ``--tuned``).

    """
    layers = []
    if config:
        from haygraph.retrieval.config import RetrievalConfig
        from haygraph.retrieval.errors import ConfigError

        try:
            loaded = RetrievalConfig.from_file(config)
        except ConfigError as exc:
            raise ConfigError(f"--config {config}: {exc}") from exc
        layers.append(Layer("config", loaded.model_dump(mode="json", exclude_unset=True), config))
    if tuned:
        from haygraph.eval.errors import EvalError
        from haygraph.eval.tuning import load_tuned

        try:
            params = load_tuned(tuned)
        except EvalError as exc:
            raise EvalError(f"--tuned: {exc}") from exc
        layers.append(Layer("tuned", params.query_overrides(), tuned))
    flags: dict[str, Any] = {}
    if mode is not None:
        flags["mode"] = mode
    if top_k is not None:
        flags["top_k"] = top_k
        flags["cut"] = {"max_keep": top_k}
    if flags:
        layers.append(Layer("flag", {"query": flags}))
    return layers


def given_config(layers: Sequence[Layer]) -> RetrievalConfig | None:
    """One config holding exactly the keys the layers set (later layers win); None without layers."""
    if not layers:
        return None
    from haygraph.retrieval.config import RetrievalConfig, deep_merge

    merged: dict[str, Any] = {}
    for layer in layers:
        merged = deep_merge(merged, layer.values)
    return RetrievalConfig.from_dict(merged)


@contextlib.contextmanager
def naming_config_flag(layers: Sequence[Layer]) -> Iterator[None]:
    """Re-raise a store/config indexing-settings mismatch with the ``--config`` file named."""
    from haygraph.retrieval.errors import ConfigError, IndexSettingsMismatchError

    try:
        yield
    except IndexSettingsMismatchError as exc:
        files = [layer.file for layer in layers if layer.source == "config"]
        raise ConfigError(f"--config {files[0]}: {exc}" if files else str(exc)) from exc


def open_knowledge_base(store: str | Path | None, layers: Sequence[Layer]) -> KnowledgeBase:
    """`KnowledgeBase.open` with the layers' settings over the store's.

    `store` (``--store``) may be None only when ``--config`` names a Qdrant or PostgreSQL store
    (``store.backend: qdrant`` or ``postgres``): the collection or table is the store then, as
    docs/stores.md says.

    Raises:
        ConfigError: no `store` and no Qdrant or PostgreSQL config.

    """
    from haygraph.retrieval.errors import ConfigError
    from haygraph.retrieval.knowledge_base import KnowledgeBase

    config = given_config(layers)
    if store is None and (config is None or config.store.backend == "embedded"):
        raise ConfigError(
            "--store is required, unless --config names a Qdrant or PostgreSQL store "
            "(store: {backend: qdrant} or {backend: postgres})"
        )
    with naming_config_flag(layers):
        return KnowledgeBase.open(store, config)


# -- report ----------------------------------------------------------------------------------------
def describe_settings(
    kb: KnowledgeBase,
    layers: Sequence[Layer],
    *,
    per_call: tuple[str, dict[str, int]] | None = None,
) -> dict[str, Any]:
    """The query settings in force on `kb` and where each came from.

    Returns ``{mode, top_k, fusion, reranker, cut, pipeline, sources, files}``: ``pipeline`` lists the
    query pipeline's components (``bm25`` only, for instance, when dense retrieval is not run);
    ``sources`` maps every dotted setting to ``default``, ``store``, ``config``, ``tuned`` or ``flag``.
    `per_call` = (source, values) for settings a caller sets on every retrieval instead (the agent's
    ``top_k``, which also caps ``cut.max_keep``; an MCP request's ``top_k``).
    """
    from haygraph.retrieval.store_config import leaves

    query = kb.config.query
    values: dict[str, Any] = query.model_dump(mode="json", include=set(REPORTED))
    stored = (kb.store.meta.get("config") or {}).get("query") or {}
    sources = {key: ("store" if _has(stored, key) else "default") for key, _ in leaves(values)}
    for layer in layers:
        for key, _ in leaves(layer.values.get("query") or {}):
            if key in sources:
                sources[key] = layer.source
    if per_call is not None:
        source, overrides = per_call
        for key, value in overrides.items():
            _set(values, key, value)
            sources[key] = source
    values["pipeline"] = list(kb.runner(query).info.components)
    values["sources"] = sources
    values["files"] = {
        "config": next((layer.file for layer in layers if layer.source == "config"), None),
        "tuned": next((layer.file for layer in layers if layer.source == "tuned"), None),
    }
    cut, fusion = values["cut"], values["fusion"]
    logger.info(
        "settings: mode %s, pipeline %s, fusion %s %s, cut %s (drop_ratio %s, max_keep %s), reranker %s; "
        "not from the store: %s",
        values["mode"],
        "+".join(values["pipeline"]),
        fusion["method"],
        fusion["weights"] or fusion["scenario"],
        "on" if cut["enabled"] else "off",
        cut["drop_ratio"],
        cut["max_keep"],
        values["reranker"]["model"],
        {k: v for k, v in sources.items() if v != "store"} or "none",
    )
    return values


def _has(data: Mapping[str, Any], dotted: str) -> bool:
    value: Any = data
    for part in dotted.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return False
        value = value[part]
    return True


def _set(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    for part in parents:
        data = data.setdefault(part, {})
    data[last] = value


def add_tracing_arguments(parser: argparse.ArgumentParser) -> None:
    """`--tracing` and `--trace-content` (`serve`, `ask`): OpenTelemetry traces, the `otel` extra."""
    group = parser.add_argument_group("tracing (OpenTelemetry; the otel extra)")
    group.add_argument(
        "--tracing",
        action="store_true",
        help="export OpenTelemetry traces over OTLP/HTTP as the OTEL_* variables say "
        "(OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER...); also on when "
        "OTEL_TRACES_EXPORTER is otlp or console, off with OTEL_SDK_DISABLED=true (see docs/operations.md)",
    )
    group.add_argument(
        "--trace-content",
        action="store_true",
        help="with tracing, record question, answer and document text in spans (default: none)",
    )
