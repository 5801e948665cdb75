r"""Load a BEIR-format retrieval dataset (corpus, queries, graded qrels) with strict validation.

The corpus is read by the one BEIR corpus reader, `haygraph.retrieval.converters.read_beir_corpus`,
the same one `KnowledgeBase.index_beir` indexes with: each document is a Haystack ``Document`` whose
content is ``title + "\n\n" + text`` (the title left out when empty) and whose ``meta["source_id"]``
is the corpus id. Records with neither title nor text are kept with an empty content: indexing skips
them, but qrels may judge them (cranfield does), and a judged document that cannot be retrieved must
still count against recall.

Layout (BEIR, Thakur et al. 2021)::

    <folder>/corpus.jsonl        {"_id", "title", "text"} per line
    <folder>/queries.jsonl       {"_id", "text"} per line
    <folder>/qrels/<split>.tsv   query-id <TAB> corpus-id <TAB> score, first line a header

A split may instead live in its own subfolder that shares the parent's corpus
(``<folder>/<split>/qrels.tsv`` and, optionally, ``<folder>/<split>/queries.jsonl``), as the
SciFact ``train/`` split does; ``load_beir(folder, "train")`` finds it.

Rules, applied in this order:

1. Every malformed line (invalid JSON, missing or non-string ``_id``/``text``, duplicate id, wrong
   column count, non-integer grade, conflicting duplicate judgment) raises `DatasetError` naming
   the file and the 1-based line number. Blank lines are ignored.
2. The first qrels line is taken as the header and skipped when its score column is not an
   integer (a header-less file therefore loses no judgment).
3. Relevant means grade > 0: judgments with grade <= 0 are dropped.
4. Judgments that name a query missing from the queries file or a document missing from the
   corpus raise `DatasetError` (``strict=True``, the default: such a file is inconsistent and
   any score computed on it would be misleading). With ``strict=False`` those judgments are
   dropped and a warning with their count is logged.
5. Queries left without any judgment are dropped (they cannot be scored).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from haystack import Document

from haygraph.eval.errors import DatasetError
from haygraph.retrieval.converters import read_beir_corpus
from haygraph.retrieval.errors import InputError

logger = logging.getLogger(__name__)

_MAX_SHOWN_IDS = 5


@dataclass(frozen=True)
class BeirDataset:
    """A loaded BEIR dataset split.

    Attributes:
        name: the dataset folder's name (``scifact``).
        split: the qrels split that was loaded (``test``, ``train``, ...).
        corpus: document id -> ``Document`` as `read_beir_corpus` reads it (title and text joined).
        queries: query id -> query text, only queries with at least one relevant judgment.
        qrels: query id -> {document id -> grade}, only grades > 0.

    """

    name: str
    split: str
    corpus: dict[str, Document]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]

    @property
    def num_judgments(self) -> int:
        """Number of (query, document) pairs with grade > 0."""
        return sum(len(docs) for docs in self.qrels.values())


def load_beir(folder: str | Path, split: str = "test", *, strict: bool = True) -> BeirDataset:
    """Load one split of the BEIR dataset in ``folder``; see the module docstring for the rules.

    Raises:
        DatasetError: the folder or a file is missing (the message lists what was expected and
            the splits that exist), a line is malformed (file and line number in the message),
            or, with ``strict``, the qrels name unknown queries or documents.

    """
    root = Path(folder)
    if not split or "/" in split or "\\" in split:
        raise DatasetError(f"invalid split name {split!r}")
    if not root.is_dir():
        raise DatasetError(
            f"dataset folder not found: {root} (expected a BEIR folder holding corpus.jsonl, "
            f"queries.jsonl and qrels/{split}.tsv)"
        )
    root, corpus_path, queries_path, qrels_path = _locate(root, split)
    corpus = _read_corpus(corpus_path)
    queries = _read_queries(queries_path)
    qrels = _read_qrels(qrels_path)
    qrels = _check_ids(qrels, queries, corpus, qrels_path, strict=strict)
    kept_queries = {qid: text for qid, text in queries.items() if qid in qrels}
    dropped = len(queries) - len(kept_queries)
    if dropped:
        logger.info("%s: dropped %d queries without a relevant judgment in %s", root, dropped, qrels_path)
    logger.debug(
        "loaded %s/%s: %d docs, %d queries, %d judgments",
        root.name,
        split,
        len(corpus),
        len(kept_queries),
        sum(len(d) for d in qrels.values()),
    )
    return BeirDataset(name=root.name, split=split, corpus=corpus, queries=kept_queries, qrels=qrels)


def _locate(root: Path, split: str) -> tuple[Path, Path, Path, Path]:
    """Find (dataset root, corpus, queries, qrels) for ``split``; raise listing what was expected."""
    if not (root / "corpus.jsonl").is_file() and (root / "qrels.tsv").is_file():
        parent = root.parent
        if (parent / "corpus.jsonl").is_file() and root.name == split:
            root = parent  # called on the split subfolder itself: use the parent's corpus
        else:
            raise DatasetError(
                f"{root} looks like the {root.name!r} split subfolder of {parent}: "
                f"call load_beir({str(parent)!r}, split={root.name!r})"
            )
    corpus_path = root / "corpus.jsonl"
    queries_path = root / "queries.jsonl"
    qrels_path = root / "qrels" / f"{split}.tsv"
    sub = root / split
    if not qrels_path.is_file() and (sub / "qrels.tsv").is_file():
        qrels_path = sub / "qrels.tsv"
        if (sub / "queries.jsonl").is_file():
            queries_path = sub / "queries.jsonl"
    missing = [p for p in (corpus_path, queries_path, qrels_path) if not p.is_file()]
    if missing:
        names = ", ".join(str(p) for p in missing)
        splits = ", ".join(_available_splits(root)) or "none"
        raise DatasetError(
            f"missing {names}; a BEIR folder needs corpus.jsonl, queries.jsonl and "
            f"qrels/{split}.tsv (or {split}/qrels.tsv); splits found in {root}: {splits}"
        )
    return root, corpus_path, queries_path, qrels_path


def _available_splits(root: Path) -> list[str]:
    """Names of the splits present in ``root`` (``qrels/*.tsv`` and ``*/qrels.tsv``)."""
    found = {p.stem for p in (root / "qrels").glob("*.tsv")} if (root / "qrels").is_dir() else set()
    found.update(p.parent.name for p in root.glob("*/qrels.tsv") if p.parent.name != "qrels")
    return sorted(found)


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, line without its newline) for the non-blank lines of ``path``.

    Lines are decoded one by one (UTF-8, a leading byte-order mark ignored) so that a decoding
    error is reported on the line where it happens.
    """
    try:
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                data = raw[3:] if number == 1 and raw.startswith(b"\xef\xbb\xbf") else raw
                try:
                    line = data.decode("utf-8").rstrip("\r\n")
                except UnicodeDecodeError as exc:
                    raise DatasetError(f"not valid UTF-8 ({exc.reason})", path, number) from exc
                if line.strip():
                    yield number, line
    except OSError as exc:
        raise DatasetError(f"cannot read file ({exc.strerror or exc})", path) from exc


def _json_records(path: Path) -> Iterator[tuple[int, dict[str, object]]]:
    """Yield (line number, JSON object) for every non-blank line; malformed lines raise."""
    for number, line in _lines(path):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"invalid JSON ({exc.msg} at column {exc.colno})", path, number) from exc
        if not isinstance(record, dict):
            raise DatasetError(f"expected a JSON object, got {type(record).__name__}", path, number)
        yield number, record


def _record_id(record: dict[str, object], path: Path, number: int) -> str:
    """Return the record's ``_id`` as a string (integers accepted); raise if missing or invalid."""
    value = record.get("_id")
    if isinstance(value, bool) or not isinstance(value, str | int) or str(value) == "":
        raise DatasetError(f'missing or invalid "_id" (got {value!r})', path, number)
    return str(value)


def _string_field(record: dict[str, object], key: str, path: Path, number: int, required: bool) -> str:
    """Return ``record[key]`` as a string; null/absent -> "" unless ``required``."""
    value = record.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise DatasetError(f'field "{key}" must be a string (got {value!r})', path, number)
    return value


def _read_corpus(path: Path) -> dict[str, Document]:
    """Read ``corpus.jsonl`` with `read_beir_corpus`; its errors become `DatasetError` (file, line kept)."""
    try:
        documents = read_beir_corpus(path, keep_empty=True)
    except InputError as exc:
        where = re.match(rf"{re.escape(str(path))}:(\d+): (.*)", str(exc), re.S)
        if where:
            raise DatasetError(where.group(2), path, int(where.group(1))) from exc
        raise DatasetError(str(exc).removeprefix(f"{path}: "), path) from exc
    return {str(doc.meta["source_id"]): doc for doc in documents}


def _read_queries(path: Path) -> dict[str, str]:
    """Parse ``queries.jsonl``; every query needs a string ``text``."""
    queries: dict[str, str] = {}
    for number, record in _json_records(path):
        query_id = _record_id(record, path, number)
        if query_id in queries:
            raise DatasetError(f"duplicate query id {query_id!r}", path, number)
        queries[query_id] = _string_field(record, "text", path, number, required=True)
    return queries


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """Parse a qrels TSV into query id -> {doc id -> grade}, keeping only grades > 0."""
    qrels: dict[str, dict[str, int]] = {}
    seen: dict[tuple[str, str], int] = {}
    first = True
    for number, line in _lines(path):
        columns = line.split("\t")
        if first:
            first = False
            if len(columns) == 3 and not _is_int(columns[2]):
                continue  # the header line
        if len(columns) != 3:
            raise DatasetError(
                f"expected 3 tab-separated columns (query-id, corpus-id, score), got {len(columns)}",
                path,
                number,
            )
        query_id, doc_id, score = (column.strip() for column in columns)
        if not query_id or not doc_id:
            raise DatasetError("empty query-id or corpus-id", path, number)
        if not _is_int(score):
            raise DatasetError(f"score must be an integer, got {score!r}", path, number)
        grade = int(score)
        previous = seen.get((query_id, doc_id))
        if previous is not None and previous != grade:
            raise DatasetError(
                f"conflicting grades for ({query_id}, {doc_id}): {previous} and {grade}", path, number
            )
        seen[(query_id, doc_id)] = grade
        if grade > 0:
            qrels.setdefault(query_id, {})[doc_id] = grade
    return qrels


def _is_int(text: str) -> bool:
    """Tell whether ``text`` is an optionally signed base-10 integer."""
    stripped = text.strip()
    return stripped.lstrip("+-").isdigit() and stripped.isascii()


def _check_ids(
    qrels: dict[str, dict[str, int]],
    queries: dict[str, str],
    corpus: dict[str, Document],
    path: Path,
    *,
    strict: bool,
) -> dict[str, dict[str, int]]:
    """Reject (strict) or drop (lenient, with a warning) judgments naming unknown queries or docs."""
    unknown_queries = sorted(qid for qid in qrels if qid not in queries)
    unknown_docs = sorted({did for docs in qrels.values() for did in docs if did not in corpus})
    if not unknown_queries and not unknown_docs:
        return qrels
    problems = []
    if unknown_queries:
        problems.append(f"{len(unknown_queries)} unknown query ids ({_shown(unknown_queries)})")
    if unknown_docs:
        problems.append(f"{len(unknown_docs)} unknown document ids ({_shown(unknown_docs)})")
    summary = " and ".join(problems)
    if strict:
        raise DatasetError(
            f"qrels name {summary}; fix the files or load with strict=False to drop those judgments",
            path,
        )
    logger.warning("%s: dropping judgments with %s", path, summary)
    cleaned: dict[str, dict[str, int]] = {}
    for query_id, docs in qrels.items():
        if query_id not in queries:
            continue
        kept = {doc_id: grade for doc_id, grade in docs.items() if doc_id in corpus}
        if kept:
            cleaned[query_id] = kept
    return cleaned


def _shown(ids: list[str]) -> str:
    """Format the first few ids, comma-separated, with an ellipsis when there are more."""
    head = ", ".join(repr(i) for i in ids[:_MAX_SHOWN_IDS])
    return head + (", ..." if len(ids) > _MAX_SHOWN_IDS else "")
