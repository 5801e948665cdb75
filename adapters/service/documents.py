"""The documents of `haygraph serve`: list a tenant's sources, accept uploads, index them in the background.

Writes reuse the library's one write path: a writer `KnowledgeBase` opened on the served store runs
`index` / `remove_sources` inside `KnowledgeBase.writing()` (the store's writer lock, so a concurrent
`haygraph index` waits or is waited for). When a write is saved, the live snapshot is reloaded before
the job is reported done, so an uploaded document is answerable as soon as its job says `done`.

Uploaded files are kept in `<store>/uploads/<tenant folder>/<file name>` (the file is the source's
identity: re-uploading a name replaces that source). A name must be a plain file name — no folder
separators, no NUL or control characters, not hidden — and its extension one `index` reads; the
file must fit `max_upload_bytes`, and an office package must not unpack to more than
`MAX_UNPACKED_BYTES` (zip bombs), nor be password-protected, of another kind than its extension or in
Strict Open XML (`check_package`, as the converter checks). Each refused file gets its own message;
the others are indexed.

Indexing runs on one worker thread (writes to a store are serialized anyway); a job's progress is
`{state, phase, done, total}` with `done`/`total` counting chunks embedded (or found in the cache).
Every job's state is journalled in `<store>/uploads/jobs.json` (written atomically when it is queued,
starts, ends): after a crash or `kill -9`, the next start reports the jobs that were queued or
running as failed (`INTERRUPTED`) instead of forgetting them; the store itself holds the version
before the job or the one it saved, never a mix.

On a PostgreSQL store (`store.backend: postgres`) jobs and uploaded files are kept in the store's
database instead (`shared_documents.py`), so every `serve` process on that store sees them.

Websites: `start_site` queues a job that crawls a URL (`KnowledgeBase.index_site`) into the caller's
tenant, on the same worker as the uploads; posting the same URL again re-syncs that tenant's copy of
the site (another tenant's pages are neither read nor changed). The crawl's limits and whether
loopback/private hosts may be crawled are the operator's (`CrawlSettings`), never the request's.
With `resync_every_s`, `start_schedule` re-syncs every indexed site (of every tenant), one at a time,
each when its last sync is that old. The last sync of each site (when, and how many pages were new,
changed, unchanged, removed, skipped, failed) is kept in `<store>/uploads/sites.json` (in memory on a
PostgreSQL store) and shown in the site's rows of `sources`.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import secrets
import threading
import time
import unicodedata
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import urlsplit

from haygraph.adapters.live_knowledge import LiveKnowledgeBase
from haygraph.adapters.service.audit import AuditLog, actor_of
from haygraph.adapters.service.errors import (
    ConflictError,
    ForbiddenError,
    NotFoundError,
)
from haygraph.adapters.service.keys import Caller
from haygraph.adapters.service.metrics import observe_job
from haygraph.adapters.tenancy import SHARED_TENANT, own_filter
from haygraph.retrieval.converters import SUPPORTED_EXTENSIONS
from haygraph.retrieval.errors import RetrievalError, UnreadableFileError
from haygraph.retrieval.office_formats import check_package
from haygraph.retrieval.sources import known_sources, source_key

if TYPE_CHECKING:  # web_sources (urllib3) loads when a site is indexed
    from haygraph.retrieval.web_sources import CrawlSettings

logger = logging.getLogger(__name__)

UPLOADS_DIR = "uploads"
"""Folder of the store directory that holds uploaded files, one sub-folder per tenant."""

MAX_NAME_BYTES = 200
MAX_FILES_PER_UPLOAD = 20
KEPT_JOBS = 200
"""Finished jobs remembered (the oldest are forgotten first)."""

JOBS_FILE = "jobs.json"
"""The job journal, in the uploads folder: every job's last saved state, so a restart can tell."""

SITES_FILE = "sites.json"
"""The last sync of each website source, in the uploads folder (`sync` in the site's rows)."""

SCHEDULE_ACTOR = "schedule"
"""The audit actor of the re-syncs `serve --resync-every` starts."""

MAX_LISTED_PAGES = 50
"""Pages named per list (removed, skipped, failed) in a site job's report; the counts are complete."""

INTERRUPTED = (
    "interrupted: the server stopped while this job ran (the store keeps the version before it or the "
    "one it saved, never a mix); upload the files again or re-index them"
)
"""The error of a job that was queued or running when the server stopped (read back at start-up)."""

ZIP_FORMATS = frozenset({".docx", ".pptx", ".xlsx"})
_COPY_BLOCK = 1024 * 1024


class UploadRefused(Exception):
    """One uploaded file cannot be accepted; the message says why in words.

    `too_large`: over the size limit (413 when every file is); `no_space`: the server could not store
    it — a full or read-only disk (507 when every file is).
    """

    def __init__(self, message: str, *, too_large: bool = False, no_space: bool = False) -> None:
        super().__init__(message)
        self.too_large = too_large
        self.no_space = no_space


def _unsaved(name: str, exc: OSError) -> UploadRefused:
    """The refusal of an upload the disk would not take (full, over quota, read-only, gone)."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        why = "no space left on the server's disk"
    elif exc.errno == errno.EROFS:
        why = "the server's disk is read-only"
    else:
        why = f"the server could not write it ({exc.strerror or type(exc).__name__})"
    return UploadRefused(
        f"{name}: not saved: {why}; the documents and the index are unchanged — "
        "upload it again once the operator has freed space",
        no_space=True,
    )


def check_upload_name(name: Any) -> str:
    """The NFC form of an uploaded file's name if it is a plain, indexable file name; else `UploadRefused`."""
    if not isinstance(name, str) or not name.strip():
        raise UploadRefused("the file has no name")
    name = unicodedata.normalize("NFC", name)
    shown = repr(name[:60])
    if any(unicodedata.category(ch)[0] == "C" for ch in name):
        raise UploadRefused(f"file name {shown} contains NUL or other control characters")
    if "/" in name or "\\" in name:
        raise UploadRefused(f"file name {shown} must be a plain file name, without folders")
    if name.startswith(".") or name != name.strip():
        raise UploadRefused(f"file name {shown} is hidden or starts/ends with spaces; rename the file")
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise UploadRefused(f"file name {shown}… is longer than {MAX_NAME_BYTES} bytes; rename the file")
    suffix = Path(name).suffix.lower()
    if suffix not in SUPPORTED_EXTENSIONS:
        raise UploadRefused(
            f"{name}: unsupported file type {suffix or '(none)'!r}; "
            f"use {', '.join(sorted(SUPPORTED_EXTENSIONS))}"
        )
    return name


def tenant_folder_name(tenant: str | None) -> str:
    """The uploads sub-folder of a tenant: a digest (tenant names may hold any printable character)."""
    if tenant is None:
        return "_shared"
    return "t-" + hashlib.sha256(tenant.encode("utf-8")).hexdigest()[:24]


def _scope(tenant: str | None) -> dict[str, Any] | None:
    """The caller's own sources (shared documents are read by every tenant, managed by none)."""
    return None if tenant is None else own_filter(tenant)


def _format_of(name: str, *, web: bool) -> str | None:
    """A row's format: its file name's suffix, or a web page's URL path's (None when it has none).

    A URL's host part is not a file name: ``http://127.0.0.1:8080/`` has no suffix, not ``1:8080``.
    """
    path = urlsplit(name).path if web else name
    return Path(path).suffix.lower().lstrip(".") or None


def source_rows(
    summaries: Iterable[dict[str, Any]], uploads: Path, sizes: dict[str, int] | None = None
) -> list[dict[str, Any]]:
    """One row per source (`store.source_summaries`): id, title, chunks, characters, format, size, when.

    A web page's row names its `site` (the URL its crawl started from; None for a file).

    `sizes` ({file name: bytes} of the caller's uploads) replaces reading the size from the disk.
    """
    rows = []
    for summary in summaries:
        file_path = summary.get("file_path")
        source_id = str(summary["source_id"])
        name = str(summary.get("source") or source_id)
        uploaded = _inside(file_path, uploads)
        tenant = summary.get("tenant")
        rows.append(
            {
                "id": source_id,
                "tenant": None if tenant is None else str(tenant),
                "title": str(summary.get("title") or name),
                "format": _format_of(name, web=isinstance(summary.get("site"), str)),
                "chunks": int(summary["chunks"]),
                "chars": int(summary["chars"]),
                "bytes": sizes.get(name) if sizes is not None and uploaded else _file_size(file_path),
                "indexed_at": summary.get("indexed_at"),
                "uploaded": uploaded,
                "site": summary.get("site") if isinstance(summary.get("site"), str) else None,
            }
        )
    return sorted(rows, key=lambda r: (r["id"].lower(), r["tenant"] or ""))


def _file_size(file_path: Any) -> int | None:
    if not isinstance(file_path, str) or not file_path:
        return None
    try:
        return Path(file_path).stat().st_size
    except OSError:
        return None


def _inside(file_path: Any, folder: Path) -> bool:
    if not isinstance(file_path, str) or not file_path:
        return False
    try:
        return Path(file_path).resolve().is_relative_to(folder.resolve())
    except (OSError, ValueError):
        return False


@dataclass
class IndexJob:
    """One background indexing run of a tenant's files."""

    id: str
    tenant: str | None
    kind: str
    """upload, reindex, site (a website posted by URL) or resync (the `--resync-every` schedule)."""
    files: list[str]
    """The files' names; for a website job, its URL."""
    state: str = "queued"
    """queued, running, done or failed."""
    phase: str = "queued"
    """queued, crawling (a website: `done` of `total` pages), converting, embedding, saving, loading, done,
    failed."""
    done: int = 0
    total: int = 0
    report: dict[str, Any] | None = None
    error: str | None = None
    created: float = field(default_factory=time.time)
    finished: float | None = None
    future: Any = field(default=None, repr=False, compare=False)
    """The worker's future of this job (None for a job read back from the journal)."""

    def record(self) -> dict[str, Any]:
        """The job as the journal keeps it (`to_json` and the tenant)."""
        return {**self.to_json(), "tenant": self.tenant}

    @classmethod
    def from_record(cls, item: Any) -> IndexJob | None:
        """A job read back from the journal (None for a record that is not one)."""
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            return None
        names = ("id", "tenant", "kind", "files", "state", "phase", "done", "total", "report", "error")
        try:
            job = cls(**{k: item[k] for k in names if k in item})
        except TypeError:
            return None
        job.created = float(item.get("created") or job.created)
        job.finished = float(item["finished"]) if item.get("finished") is not None else None
        return job

    def to_json(self) -> dict[str, Any]:
        """The job as the status endpoint returns it."""
        return {
            "id": self.id,
            "kind": self.kind,
            "files": list(self.files),
            "state": self.state,
            "phase": self.phase,
            "done": self.done,
            "total": self.total,
            "report": self.report,
            "error": self.error,
            "created": self.created,
            "finished": self.finished,
        }


class DocumentManager:
    """Sources of the served store per tenant; uploads, background indexing jobs, removal, re-index."""

    def __init__(
        self,
        knowledge: LiveKnowledgeBase,
        *,
        max_upload_bytes: int,
        crawl: CrawlSettings | None = None,
    ) -> None:
        self.knowledge = knowledge
        self.max_upload_bytes = max_upload_bytes
        self.crawl = crawl
        """The operator's crawl limits for websites (None: `CrawlSettings()`, private hosts per the env)."""
        self._syncs: dict[tuple[str | None, str], dict[str, Any]] = {}
        self._stop = threading.Event()
        self._scheduler: threading.Thread | None = None
        self.uploads = Path(knowledge.store_dir) / UPLOADS_DIR
        self._jobs: dict[str, IndexJob] = {}
        self._jobs_lock = threading.Lock()
        self._writer: Any = None
        self._tenant_counts: tuple[Any, Counter[str | None]] | None = None
        self._write_lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="haygraph-index")
        self.audit: AuditLog | None = None
        """The service's audit trail: each job's end is a line (set by the service)."""
        self._actors: dict[str, str] = {}
        self._journal_lock = threading.Lock()
        self._book: Any = None
        self._shared: Any = None
        config = knowledge.config
        if config is not None and config.store.backend == "postgres":
            from haygraph.adapters.service import shared_documents

            shared_documents.ensure_tables(config.store)
            self._book = shared_documents.PostgresJobBook(config.store)
            self._shared = shared_documents.PostgresUploads(config.store)
            self.uploads = self._shared.root
        else:
            self._load_journal()
            self._load_syncs()

    # -- the job journal ---------------------------------------------------------------------------
    def _load_journal(self) -> None:
        """Read the jobs of earlier runs; those still queued or running were interrupted: failed."""
        interrupted = 0
        for item in self._read_list(JOBS_FILE, "earlier jobs are forgotten"):
            job = IndexJob.from_record(item)
            if job is None:
                continue
            if job.state in ("queued", "running"):
                job.state, job.phase, job.error, job.finished = "failed", "failed", INTERRUPTED, time.time()
                interrupted += 1
            self._jobs[job.id] = job
        if interrupted:
            logger.warning(
                "%d indexing job(s) were interrupted by the last stop; they are reported failed", interrupted
            )
            self._save_journal()

    def _save(self, job: IndexJob, *, progress: bool = False) -> None:
        """Record a job's state: in the database (PostgreSQL store), else in the journal."""
        if self._book is not None:
            try:
                self._book.put(job.record(), progress=progress)
            except RetrievalError as exc:  # the database is down: the job runs on, its record catches up
                logger.warning("cannot record indexing job %s: %s", job.id, exc)
        elif not progress:
            self._save_journal()

    def _save_journal(self) -> None:
        """Write every remembered job's state (atomically: a crash leaves the old journal or the new)."""
        with self._jobs_lock:
            records = [job.record() for job in self._jobs.values()]
        self._write_list(JOBS_FILE, records)

    def _read_list(self, name: str, lost: str) -> list[Any]:
        """The JSON list in `uploads/name`: [] when absent, or unreadable (warning what is `lost`)."""
        path = self.uploads / name
        try:
            records = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            logger.warning("cannot read %s (%s): %s", path, exc, lost)
            return []
        return records if isinstance(records, list) else []

    def _write_list(self, name: str, records: list[Any]) -> None:
        """Write `records` to `uploads/name` atomically (a crash leaves the old file or the new one)."""
        path = self.uploads / name
        with self._journal_lock:
            try:
                self.uploads.mkdir(parents=True, exist_ok=True)
                tmp = path.with_name(f".{name}.tmp")
                tmp.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
                os.replace(tmp, path)
            except OSError as exc:  # a full disk or a read-only store: the jobs still run
                logger.warning("cannot write %s: %s", path, exc)

    def _load_syncs(self) -> None:
        """Read the last sync of each website source (`SITES_FILE`); an unreadable file is forgotten."""
        for item in self._read_list(SITES_FILE, "the sites' last syncs are forgotten"):
            if (
                isinstance(item, dict)
                and isinstance(item.get("site"), str)
                and isinstance(item.get("sync"), dict)
            ):
                tenant = item.get("tenant")
                self._syncs[(tenant if isinstance(tenant, str) else None, item["site"])] = item["sync"]

    def _save_syncs(self) -> None:
        """Write the sites' last syncs atomically (on a PostgreSQL store they stay in memory)."""
        if self._book is not None:
            return
        with self._jobs_lock:
            records = [{"tenant": t, "site": site, "sync": sync} for (t, site), sync in self._syncs.items()]
        self._write_list(SITES_FILE, records)

    def close(self) -> None:
        """Stop accepting jobs; a job already running finishes (its store save is atomic either way)."""
        self._stop.set()
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._book is not None:
            self._book.close()

    # -- reading -----------------------------------------------------------------------------------
    def tenant_chunks(self) -> Counter[str | None]:
        """Chunks per `meta.tenant` in the current snapshot (None: without a tenant); cached per version."""
        if not self.knowledge.ready:
            return Counter()
        snap = self.knowledge.current
        cached = self._tenant_counts
        if cached is None or cached[0] is not snap:
            counts: Counter[str | None] = Counter(snap.kb.store.tenant_counts())
            cached = self._tenant_counts = (snap, counts)
        return cached[1]

    def visible_chunks(self, tenant: str | None) -> int:
        """Chunks a caller bound to `tenant` can read: its own and the shared ones (all without a tenant)."""
        counts = self.tenant_chunks()
        if tenant is None:
            return sum(counts.values())
        return counts[tenant] + counts[SHARED_TENANT]

    def sources(self, caller: Caller) -> list[dict[str, Any]]:
        """The caller's sources in the current snapshot (every source without `--api-keys`)."""
        if not self.knowledge.ready:
            return []
        store = self.knowledge.current.kb.store
        sizes = self._shared.sizes(tenant_folder_name(caller.tenant)) if self._shared is not None else None
        rows = source_rows(store.source_summaries(_scope(caller.tenant)), self.uploads, sizes)
        with self._jobs_lock:
            for row in rows:
                sync = self._syncs.get((row["tenant"], row["site"])) if row["site"] else None
                row["sync"] = dict(sync) if sync is not None else None
        if caller.tenant is not None:
            for row in rows:
                row.pop("tenant")
        return rows

    def job(self, caller: Caller, job_id: str) -> IndexJob:
        """A job of the caller's tenant (`NotFoundError` for another tenant's job or an unknown id).

        On a PostgreSQL store the job is read from the database: it may run in another process.
        """
        if self._book is not None:
            record = self._book.get(job_id, INTERRUPTED) if len(job_id) <= 64 else None
            job = IndexJob.from_record(record) if record is not None else None
        else:
            with self._jobs_lock:
                job = self._jobs.get(job_id)
        if job is None or job.tenant != caller.tenant:
            raise NotFoundError(f"indexing job {job_id[:40]!r} does not exist")
        return job

    # -- writing -----------------------------------------------------------------------------------
    @staticmethod
    def check_write(caller: Caller) -> None:
        """`ForbiddenError` for a read-only key."""
        if not caller.write:
            raise ForbiddenError("this API key is read-only: it may not upload, re-index or remove documents")

    def folder(self, tenant: str | None) -> Path:
        """The caller's uploads folder (created; never a link)."""
        folder = self.uploads / tenant_folder_name(tenant)
        folder.mkdir(parents=True, exist_ok=True)
        if folder.is_symlink() or not folder.is_dir():
            raise ConflictError("the uploads folder of this store is not a plain folder; ask the operator")
        return folder

    def save_upload(self, caller: Caller, name: Any, stream: IO[bytes], size: int | None) -> Path:
        """Check one uploaded file and move it into the caller's folder; `UploadRefused` says why not."""
        name = check_upload_name(name)
        limit = self.max_upload_bytes
        if size is not None and size > limit:
            raise UploadRefused(
                f"{name}: {size:,} bytes is larger than the limit of {limit:,} bytes", too_large=True
            )
        try:
            folder = self.folder(caller.tenant)
        except OSError as exc:
            raise _unsaved(name, exc) from exc
        target = folder / name
        if target.resolve().parent != folder.resolve():
            raise UploadRefused(f"file name {name!r} would leave the uploads folder")
        self._check_free_id(caller.tenant, name, target)
        temp = folder / f".upload-{secrets.token_hex(8)}{Path(name).suffix.lower()}"
        try:
            self._write_checked(name, temp, stream, limit)
            if self._shared is not None:  # every process of the store can index it again or remove it
                self._shared.put(tenant_folder_name(caller.tenant), name, caller.tenant, temp)
            os.replace(temp, target)  # replaces a previous upload of the same name (never follows a link)
        except OSError as exc:  # a full or read-only disk: the previous upload of this name is intact
            raise _unsaved(name, exc) from exc
        finally:
            temp.unlink(missing_ok=True)
        return target

    @staticmethod
    def _write_checked(name: str, temp: Path, stream: IO[bytes], limit: int) -> None:
        """Copy the upload to `temp` within `limit` bytes; refuse an empty file and a zip bomb."""
        written = 0
        with open(temp, "xb") as out:
            while block := stream.read(_COPY_BLOCK):
                written += len(block)
                if written > limit:
                    raise UploadRefused(f"{name}: larger than the limit of {limit:,} bytes", too_large=True)
                out.write(block)
        if written == 0:
            raise UploadRefused(f"{name}: the file is empty")
        if Path(name).suffix.lower() in ZIP_FORMATS:
            try:
                check_package(temp)  # the converter's own check: zip bomb, password, kind, Strict Open XML
            except UnreadableFileError as exc:
                raise UploadRefused(str(exc).replace(str(temp), name)) from exc

    def _check_free_id(self, tenant: str | None, name: str, target: Path) -> None:
        """Refuse a name that is already the id of a source indexed from another file."""
        if not self.knowledge.ready:
            return
        documents = self.knowledge.current.kb.store.source_documents(tenant)
        holder = known_sources(documents, tenant).get(name)
        if holder is not None and holder != str(target.resolve()):
            raise UploadRefused(
                f"{name}: a document with this name is already indexed (not from an upload); "
                "remove it first or rename the file"
            )

    def start_indexing(self, caller: Caller, files: list[Path], kind: str = "upload") -> IndexJob:
        """Queue a background job indexing `files` for the caller's tenant."""
        names = [f.name for f in files]
        job = IndexJob(id=secrets.token_hex(8), tenant=caller.tenant, kind=kind, files=names)
        self._remember(job, actor_of(caller))
        job.future = self._pool.submit(self._run_job, job, files)
        return job

    # -- websites --------------------------------------------------------------------------------
    def crawl_settings(self) -> CrawlSettings:
        """The operator's crawl limits (`--allow-private-hosts` among them); never a request's."""
        from haygraph.retrieval.web_sources import CrawlSettings

        return self.crawl if self.crawl is not None else CrawlSettings()

    def check_site(self, url: Any) -> str:
        """The normalised URL if a crawl may start there (scheme, host, address); else `UploadRefused`.

        Resolves the host (call it off the event loop). The crawl checks every address again.
        """
        from haygraph.retrieval.web_sources import UrlRefusedError, check_url

        try:
            return check_url(url, self.crawl_settings().private_allowed)
        except UrlRefusedError as exc:
            raise UploadRefused(str(exc)) from exc

    def start_site(self, caller: Caller, url: str, kind: str = "site") -> IndexJob:
        """Queue a background job crawling `url` into the caller's tenant (a re-sync if it was indexed).

        `url` must have passed `check_site` (it is its normalised form).
        """
        return self._queue_site(caller.tenant, url, kind, actor_of(caller))

    def _queue_site(self, tenant: str | None, site: str, kind: str, actor: str) -> IndexJob:
        job = IndexJob(id=secrets.token_hex(8), tenant=tenant, kind=kind, files=[site])
        self._remember(job, actor)
        job.future = self._pool.submit(self._run_site_job, job, site)
        return job

    def _remember(self, job: IndexJob, actor: str) -> None:
        """Keep a new job (and forget the oldest finished ones past `KEPT_JOBS`); journal it."""
        self._actors[job.id] = actor
        with self._jobs_lock:
            self._jobs[job.id] = job
            finished = [j for j in self._jobs.values() if j.finished is not None]
            for old in sorted(finished, key=lambda j: j.created)[: max(0, len(self._jobs) - KEPT_JOBS)]:
                del self._jobs[old.id]
        self._save(job)

    def _run_site_job(self, job: IndexJob, site: str) -> None:
        job.state, job.phase = "running", "crawling"
        self._save(job)

        def on_page(event: Any) -> None:
            job.done, job.total = event.done, event.limit
            self._save(job, progress=True)

        meta: dict[str, Any] = {"indexed_at": datetime.now(UTC).isoformat(timespec="seconds")}
        if job.tenant is not None:
            meta["tenant"] = job.tenant
        try:
            with self._write_lock:
                report = self._writer_kb().index_site(
                    site, settings=self.crawl_settings(), meta=meta, on_page=on_page
                )
            job.phase = "loading"
            self._await_snapshot()
        except (RetrievalError, OSError) as exc:
            self._writer = None
            self._fail(job, self._public(str(exc)))
            self._record_sync(job, None)
            return
        except Exception as exc:
            self._writer = None
            logger.exception("website job %s failed", job.id)
            self._fail(job, f"unexpected failure ({type(exc).__name__}); see the server log")
            self._record_sync(job, None)
            return
        index = report.index
        job.report = {
            "site": report.site,
            "new": len(report.new),
            "changed": len(report.changed),
            "unchanged": len(report.unchanged),
            "removed": len(report.removed),
            "skipped": len(report.skipped),
            "failed": len(report.failed),
            "unchecked": len(report.unchecked),
            "removed_pages": dict(list(report.removed.items())[:MAX_LISTED_PAGES]),
            "skipped_pages": report.skipped[:MAX_LISTED_PAGES],
            "failed_pages": report.failed[:MAX_LISTED_PAGES],
            "requests": report.requests,
            "not_modified": report.not_modified,
            "sources": index.sources if index is not None else 0,
            "chunks": index.chunks if index is not None else 0,
            "embedded": index.embedded if index is not None else 0,
            "total_documents": report.total_documents,
            "seconds": round(report.seconds, 3),
        }
        kept = report.new or report.changed or report.unchanged or report.removed
        if report.failed and not kept:  # nothing of the site could be read: say why
            self._fail(job, "; ".join(report.failed[:5]))
        else:
            job.state, job.phase, job.finished = "done", "done", time.time()
            job.done = job.total = max(job.done, len(report.new) + len(report.changed))
            self._save(job)
            observe_job(job.kind, "done", time.time() - job.created, job.report)
            self._audit_job(job)
        self._record_sync(job, report)
        logger.info(
            "website %s (tenant %s) %s: %d new, %d changed, %d unchanged, %d removed, %d skipped, %d failed "
            "in %.1f s",
            report.site,
            job.tenant,
            "re-synced" if job.kind == "resync" else "indexed",
            len(report.new),
            len(report.changed),
            len(report.unchanged),
            len(report.removed),
            len(report.skipped),
            len(report.failed),
            report.seconds,
        )

    def _record_sync(self, job: IndexJob, report: Any) -> None:
        """Keep the site's last sync (shown in its rows) and write it down."""
        counts = {
            name: len(getattr(report, name)) if report is not None else 0
            for name in ("new", "changed", "unchanged", "removed", "skipped", "failed")
        }
        sync = {
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
            "state": job.state,
            "kind": job.kind,
            "job": job.id,
            **counts,
            "error": job.error,
        }
        with self._jobs_lock:
            self._syncs[(job.tenant, job.files[0])] = sync
        self._save_syncs()

    def sites(self) -> list[tuple[str | None, str]]:
        """Every website source of the served store: (tenant, site URL), of every tenant."""
        if not self.knowledge.ready:
            return []
        found: dict[tuple[str | None, str], None] = {}
        for doc in self.knowledge.current.kb.store.source_documents():
            site = doc.meta.get("site")
            if isinstance(site, str) and site:
                found[(source_key(doc)[0], site)] = None
        return list(found)

    def start_schedule(self, every_s: float) -> None:
        """Re-sync every website source in the background, each when its last sync is `every_s` old.

        One site at a time, on the indexing worker (uploads queue behind a running crawl). A site
        never synced by this server counts from the schedule's start. Stopped by `close`.
        """
        if self._scheduler is not None:
            return
        started = time.time()
        self._scheduler = threading.Thread(
            target=self._schedule_loop, args=(every_s, started), name="haygraph-resync", daemon=True
        )
        self._scheduler.start()

    def _schedule_loop(self, every_s: float, started: float) -> None:
        tick = min(every_s, 30.0)
        while not self._stop.wait(tick):
            try:
                due = self._due_sites(every_s, started)
            except Exception:  # the store is reloading or broken: try again next tick
                logger.exception("cannot list the website sources to re-sync")
                continue
            for tenant, site in due:
                if self._stop.is_set():
                    return
                job = self._queue_site(tenant, site, "resync", SCHEDULE_ACTOR)
                try:
                    job.future.result()  # one site at a time
                except Exception:  # cancelled at shutdown
                    return

    def _due_sites(self, every_s: float, started: float) -> list[tuple[str | None, str]]:
        """The sites whose last sync (else the schedule's start) is at least `every_s` old."""
        now = time.time()
        due = []
        for key in self.sites():
            with self._jobs_lock:
                sync = self._syncs.get(key)
            last = started
            if sync is not None:
                try:
                    last = datetime.fromisoformat(str(sync["at"])).timestamp()
                except (KeyError, ValueError):
                    last = started
            if now - last >= every_s:
                due.append(key)
        return due

    def _writer_kb(self) -> Any:
        """The knowledge base writes go through (opened once; reopened after a failed write)."""
        from haygraph.retrieval import KnowledgeBase
        from haygraph.retrieval.store import store_exists

        if self._writer is None:
            store = self.knowledge.store_dir
            config = self.knowledge.config
            if store_exists(store) or (config is not None and config.store.backend != "embedded"):
                self._writer = KnowledgeBase.open(store, config=config)
            else:
                self._writer = KnowledgeBase(config, store_dir=store)
        return self._writer

    def _run_job(self, job: IndexJob, files: list[Path]) -> None:
        job.state, job.phase = "running", "converting"
        self._save(job)

        def progress(done: int, total: int) -> None:
            job.phase = "embedding" if done < total else "saving"
            job.done, job.total = done, total
            self._save(job, progress=True)

        meta: dict[str, Any] = {"indexed_at": datetime.now(UTC).isoformat(timespec="seconds")}
        if job.tenant is not None:
            meta["tenant"] = job.tenant
        try:
            self._fetch_uploads(job.tenant, files)
            with self._write_lock:
                # a file that passed the upload checks and still fails in conversion (broken XML inside
                # the package, pictures only) is skipped and reported: the job's other files are indexed
                report = self._writer_kb().index(
                    [str(f) for f in files], meta=meta, on_progress=progress, skip_unreadable=True
                )
            job.phase = "loading"
            self._await_snapshot()
        except (RetrievalError, OSError) as exc:
            self._writer = None  # unsaved changes must not leak into the next write
            self._fail(job, self._public(str(exc)))
            return
        except Exception as exc:
            self._writer = None
            logger.exception("indexing job %s failed", job.id)
            self._fail(job, f"unexpected failure ({type(exc).__name__}); see the server log")
            return
        job.report = {
            "sources": report.sources,
            "chunks": report.chunks,
            "embedded": report.embedded,
            "from_cache": report.from_cache,
            "unchanged": report.unchanged,
            "skipped": [self._public(s) for s in report.skipped],
            "total_documents": report.total_documents,
            "seconds": round(report.seconds, 3),
        }
        if report.skipped and not report.sources and not report.unchanged:
            self._fail(job, "; ".join(job.report["skipped"]))
            return
        job.state, job.phase, job.finished = "done", "done", time.time()
        job.done = job.total = max(job.total, report.chunks)
        self._save(job)
        observe_job(job.kind, "done", time.time() - job.created, job.report)
        self._audit_job(job)

    def _fail(self, job: IndexJob, message: str) -> None:
        job.state, job.phase, job.error, job.finished = "failed", "failed", message, time.time()
        self._save(job)
        observe_job(job.kind, "failed", time.time() - job.created, None)
        self._audit_job(job)

    def _audit_job(self, job: IndexJob) -> None:
        """The job's line in the audit trail (who started it, its files, how it ended)."""
        actor = self._actors.pop(job.id, "unknown")
        if self.audit is None:
            return
        report = job.report or {}
        self.audit.record(
            "index",
            actor=actor,
            tenant=job.tenant,
            outcome=job.state,
            object=list(job.files),
            job=job.id,
            kind=job.kind,
            chunks=report.get("chunks"),
            detail=job.error,
        )

    def _public(self, message: str) -> str:
        """A library message without the server's folder names (the uploads folder is not the user's)."""
        for folder in sorted({str(self.uploads.resolve()), str(self.uploads)}, key=len, reverse=True):
            message = message.replace(folder + os.sep, "").replace(folder, "")
        store = Path(self.knowledge.store_dir)
        for folder in sorted({str(store.resolve()), str(store)}):
            message = message.replace(folder, "<store>")
        for disk in {*store.parents, *store.resolve().parents}:  # "the disk at /srv/... has 0.0 MB free"
            message = message.replace(f"the disk at {disk} ", "the server's disk ")
        return " ".join(message.split())

    def _await_snapshot(self, timeout_s: float = 120.0) -> None:
        """Wait until the live snapshot serves the version just saved (the watcher may be loading it)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            pointer = self.knowledge.store_version()
            if pointer is None:
                return  # a Qdrant store: the collection itself changed; nothing to reload
            if self.knowledge.ready and self.knowledge.current.version == pointer:
                return
            if not self.knowledge.ready:
                self.knowledge.load()
            else:
                self.knowledge.reload_if_changed()
            time.sleep(0.05)
        raise TimeoutError("the new store version did not load in time")

    def _fetch_uploads(self, tenant: str | None, files: list[Path]) -> None:
        """On a PostgreSQL store, write the stored uploads among `files` to this process's disk."""
        if self._shared is None:
            return
        folder = self.folder(tenant)
        for path in files:
            if _inside(str(path), folder):
                self._shared.fetch(tenant_folder_name(tenant), path.name, path)

    def _file_of(self, tenant: str | None, source_id: str) -> Any:
        """The file a source of `tenant` was indexed from (its `meta.file_path`; None if none or unknown)."""
        return self._meta_of(tenant, source_id).get("file_path")

    def _meta_of(self, tenant: str | None, source_id: str) -> dict[str, Any]:
        """The meta of a source of `tenant` (`NotFoundError` for another tenant's or an unknown one)."""
        if not self.knowledge.ready:
            raise NotFoundError(f"source {source_id[:80]!r} does not exist")
        store = self.knowledge.current.kb.store
        documents = store.source_documents() if tenant is None else store.source_documents(tenant)
        found = [  # a caller without a tenant (no --api-keys) manages every source
            d
            for d in documents
            if str(d.meta.get("source_id", "")) == source_id and tenant in (None, source_key(d)[0])
        ]
        if not found:
            raise NotFoundError(f"source {source_id[:80]!r} does not exist")
        return dict(found[0].meta)

    def remove(self, caller: Caller, source_id: str) -> dict[str, Any]:
        """Remove one of the caller's sources (and its uploaded file); returns what was removed."""
        file_path = self._file_of(caller.tenant, source_id)
        try:
            with self._write_lock:
                report = self._writer_kb().remove_sources([source_id], tenant=caller.tenant)
            self._await_snapshot()
        except RetrievalError as exc:
            self._writer = None
            raise ConflictError(self._public(str(exc))) from exc
        if _inside(file_path, self.folder(caller.tenant)):
            Path(str(file_path)).unlink(missing_ok=True)
            if self._shared is not None:
                self._shared.delete(tenant_folder_name(caller.tenant), Path(str(file_path)).name)
        return {"removed": report.sources, "chunks": report.chunks}

    def reindex(self, caller: Caller, source_id: str) -> IndexJob:
        """Queue a job indexing an uploaded source's file again (its own file in the caller's folder).

        A web page's source re-syncs the whole site it was crawled with (the caller's copy of it).
        """
        meta = self._meta_of(caller.tenant, source_id)
        site = meta.get("site")
        if isinstance(site, str) and site:
            owner = meta.get("tenant")
            tenant = caller.tenant if caller.tenant is not None else (None if owner is None else str(owner))
            return self._queue_site(tenant, site, "site", actor_of(caller))
        file_path = meta.get("file_path")
        if _inside(file_path, self.folder(caller.tenant)):
            self._fetch_uploads(caller.tenant, [Path(str(file_path))])
        if not _inside(file_path, self.folder(caller.tenant)) or not Path(str(file_path)).is_file():
            raise ConflictError(
                f"source {source_id[:80]!r} was not uploaded here; re-index it with `haygraph index` "
                "on the server"
            )
        return self.start_indexing(caller, [Path(str(file_path))], kind="reindex")


__all__ = [
    "MAX_FILES_PER_UPLOAD",
    "SCHEDULE_ACTOR",
    "UPLOADS_DIR",
    "DocumentManager",
    "IndexJob",
    "UploadRefused",
    "check_upload_name",
    "source_rows",
    "tenant_folder_name",
]
