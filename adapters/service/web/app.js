// The haygraph page: sign-in, chat with streamed answers and openable citations, documents, status.
// Every string from the server (answers, document text, file names) is put in the page as text
// (text nodes / textContent), never parsed as HTML; a source id that is an http(s) URL becomes a link
// to its page through links.js (only http/https hrefs, rel=noopener).

import { addSite, ApiError, askStream, call, storedKey, storeKey, uploadFiles as sendFiles } from "./api.js";
import { sourceNode } from "./links.js";
import { LANG, t } from "./strings.js";

const $ = (id) => document.getElementById(id);
const CITATION = /\[([^\[\]\n]{3,300})\]/g;
const POLL_MS = 250;
const FILES_PER_UPLOAD = 20;

const state = {
  status: null,
  threadId: null,
  busy: false,
  sources: [],
  lastEvidence: new Map(), // evidence id -> item of the latest result (it has the scores)
};

// -- DOM helpers -------------------------------------------------------------------------------
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function clear(node) {
  while (node.firstChild) node.firstChild.remove();
}

function formatBytes(n) {
  if (n === null || n === undefined) return "—";
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

function formatTime(iso) {
  if (!iso) return "—";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? String(iso) : date.toLocaleString(LANG === "zh" ? "zh-CN" : "en");
}

function newThreadId() {
  const random = crypto.getRandomValues(new Uint32Array(2));
  return `t-${Date.now().toString(36)}-${random[0].toString(36)}${random[1].toString(36)}`;
}

function applyStrings() {
  document.documentElement.lang = LANG === "zh" ? "zh-CN" : "en";
  for (const node of document.querySelectorAll("[data-i18n]")) node.textContent = t(node.dataset.i18n);
  for (const node of document.querySelectorAll("[data-i18n-placeholder]")) {
    node.setAttribute("placeholder", t(node.dataset.i18nPlaceholder));
  }
}

// -- sign-in -----------------------------------------------------------------------------------
async function start() {
  applyStrings();
  try {
    const status = await call("GET", "/v1/status");
    showApp(status);
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      const hadKey = Boolean(storedKey());
      storeKey("");
      showSignIn(hadKey ? t("wrongKey") : "");
    } else {
      showSignIn(t("signInFailed", { message: error.message }));
    }
  }
}

function showSignIn(message) {
  $("sign-in").hidden = false;
  $("tabs").hidden = true;
  $("sign-in-error").textContent = message;
  $("api-key").focus();
}

async function signIn(event) {
  event.preventDefault();
  const key = $("api-key").value.trim();
  $("sign-in-error").textContent = "";
  try {
    const status = await call("GET", "/v1/status", { key });
    storeKey(key);
    $("api-key").value = "";
    $("sign-in").hidden = true;
    showApp(status);
  } catch (error) {
    $("sign-in-error").textContent =
      error instanceof ApiError && error.status === 401 ? t("wrongKey") : t("signInFailed", { message: error.message });
  }
}

function showApp(status) {
  state.status = status;
  $("sign-in").hidden = true;
  $("tabs").hidden = false;
  $("sign-out").hidden = !storedKey();
  renderStatus(status);
  applyRights(status);
  selectTab("chat");
  newThread();
  loadThreads();
  loadSources();
}

// -- tabs --------------------------------------------------------------------------------------
const TABS = ["chat", "documents", "status"];

function selectTab(name, focus = false) {
  for (const tab of TABS) {
    const button = $(`tab-${tab}`);
    const selected = tab === name;
    button.setAttribute("aria-selected", String(selected));
    button.tabIndex = selected ? 0 : -1;
    $(`view-${tab}`).hidden = !selected;
    if (selected && focus) button.focus();
  }
  if (name === "documents") loadSources();
  if (name === "status") refreshStatus();
}

function onTabKey(event) {
  const at = TABS.indexOf(event.target.id.replace("tab-", ""));
  if (at < 0) return;
  let next = null;
  if (event.key === "ArrowRight") next = TABS[(at + 1) % TABS.length];
  else if (event.key === "ArrowLeft") next = TABS[(at + TABS.length - 1) % TABS.length];
  else if (event.key === "Home") next = TABS[0];
  else if (event.key === "End") next = TABS[TABS.length - 1];
  if (next) {
    event.preventDefault();
    selectTab(next, true);
  }
}

// -- status ------------------------------------------------------------------------------------
async function refreshStatus() {
  try {
    const status = await call("GET", "/v1/status");
    state.status = status;
    renderStatus(status);
    applyRights(status);
  } catch (error) {
    renderStatus({ health: "loading", error: error.message });
  }
}

function renderStatus(status) {
  const list = $("status-list");
  clear(list);
  const health = { ready: t("healthReady"), empty: t("healthEmpty"), loading: t("healthLoading") }[status.health];
  const rows = [
    [t("health"), health || status.health],
    [t("storeVersion"), status.store_version || "—"],
    [t("sourceCount"), status.sources ?? "—"],
    [t("chunkCount"), status.chunks ?? "—"],
    [t("embeddingModel"), status.embedding_model || "—"],
    [t("retrievalMode"), status.retrieval_mode || "—"],
    [t("reranker"), status.reranker || t("none")],
    [t("chatModel"), status.model || "—"],
    [t("threadStore"), status.threads || "—"],
    [t("tenant"), status.tenant ?? t("none")],
    [t("access"), status.write === false ? t("readOnlyShort") : t("readWrite")],
  ];
  if (status.error) rows.push(["!", status.error]);
  for (const [name, value] of rows) list.append(el("dt", {}, name), el("dd", {}, value));
}

function applyRights(status) {
  const canWrite = status.write !== false;
  $("upload-area").hidden = !canWrite;
  $("read-only").hidden = canWrite;
  const formats = status.formats || [];
  $("file-input").setAttribute("accept", formats.join(","));
  $("formats").textContent = t("formats", { formats: formats.join(" "), size: formatBytes(status.max_upload_bytes) });
}

// -- threads -----------------------------------------------------------------------------------
function newThread() {
  state.threadId = newThreadId();
  state.lastEvidence = new Map();
  clear($("messages"));
  markCurrentThread();
}

function markCurrentThread() {
  for (const item of $("thread-list").querySelectorAll("button[data-thread]")) {
    item.setAttribute("aria-current", String(item.dataset.thread === state.threadId));
  }
}

async function loadThreads() {
  const list = $("thread-list");
  let threads = [];
  try {
    threads = await call("GET", "/v1/threads");
  } catch {
    threads = [];
  }
  clear(list);
  if (!threads.length) list.append(el("li", { class: "note" }, t("noThreads")));
  for (const thread of threads) {
    const button = el(
      "button",
      { type: "button", class: "thread", "data-thread": thread.thread_id, onclick: () => openThread(thread.thread_id) },
      el("span", { class: "thread-title" }, thread.title || thread.thread_id),
      el("span", { class: "thread-meta" }, t("turns", { n: thread.turns })),
    );
    list.append(el("li", {}, button));
  }
  markCurrentThread();
}

async function openThread(threadId) {
  let view;
  try {
    view = await call("GET", `/v1/threads/${encodeURIComponent(threadId)}`);
  } catch (error) {
    showFailure(error);
    return;
  }
  state.threadId = threadId;
  state.lastEvidence = new Map((view.last_result.evidence || []).map((item) => [item.id, item]));
  const messages = $("messages");
  clear(messages);
  for (const message of view.messages) {
    const text = typeof message.content === "string" ? message.content : JSON.stringify(message.content);
    if (message.role === "user") messages.append(userMessage(text));
    else {
      const item = assistantShell();
      renderAnswer(item.querySelector(".answer"), text, null);
      messages.append(item);
    }
  }
  if (view.last_result.status !== "completed") {
    const item = assistantShell();
    renderResult(item, view.last_result);
    messages.append(item);
  }
  markCurrentThread();
}

// -- chat --------------------------------------------------------------------------------------
function userMessage(text) {
  return el("li", { class: "message user" }, el("p", { class: "who" }, t("you")), el("p", { class: "text" }, text));
}

function assistantShell() {
  return el(
    "li",
    { class: "message assistant" },
    el("p", { class: "who" }, t("assistant")),
    el("ol", { class: "trail", "aria-label": t("trail") }),
    el("div", { class: "answer" }),
    el("div", { class: "outcome" }),
  );
}

function selectedSources() {
  return [...$("filter-options").querySelectorAll("input:checked")].map((box) => box.value);
}

async function ask(event) {
  event.preventDefault();
  const question = $("question").value.trim();
  if (!question || state.busy) return;
  state.busy = true;
  $("ask").disabled = true;
  $("ask").textContent = t("asking");
  const messages = $("messages");
  messages.append(userMessage(question));
  const item = assistantShell();
  item.setAttribute("aria-busy", "true");
  messages.append(item);
  item.scrollIntoView({ block: "end" });
  $("question").value = "";
  const chosen = selectedSources();
  const body = { question, thread_id: state.threadId };
  if (chosen.length) body.filters = { field: "meta.source_id", operator: "in", value: chosen };
  const started = performance.now();
  let streamed = "";
  const answer = item.querySelector(".answer");
  const streamingText = el("p", { class: "streaming" });
  answer.append(streamingText);
  try {
    await askStream(body, (kind, data) => {
      if (kind === "progress") {
        if (!item.dataset.firstProgressMs) item.dataset.firstProgressMs = String(performance.now() - started);
        const ms = typeof data.ms === "number" && data.ms > 0 ? ` ${Math.round(data.ms)} ms` : "";
        const node = String(data.node);
        if (!node.startsWith("__")) item.querySelector(".trail").append(el("li", {}, `${node}${ms}`));
      } else if (kind === "token") {
        item.dataset.tokens = String(Number(item.dataset.tokens || 0) + 1);
        streamed += data.text;
        streamingText.textContent = streamed;
      } else if (kind === "result") {
        item.dataset.finalMs = String(performance.now() - started);
        renderResult(item, data);
      } else if (kind === "error") {
        item.dataset.finalMs = String(performance.now() - started);
        showFailure(new ApiError(0, data.error.type, data.error.message), item);
      }
    });
  } catch (error) {
    showFailure(error, item);
  } finally {
    item.removeAttribute("aria-busy");
    state.busy = false;
    $("ask").disabled = false;
    $("ask").textContent = t("ask");
    loadThreads();
  }
}

function showFailure(error, item = null) {
  const target = item ? item.querySelector(".outcome") : $("messages");
  const box = el("p", { class: "error", role: "alert" }, t("failed", { message: error.message }));
  if (item) target.append(box);
  else target.append(el("li", { class: "message assistant" }, box));
}

function refusalReason(result) {
  const reasons = [];
  const decision = result.decision;
  // a rule after the model may refuse a confident answer: then only the rule is the reason
  if (
    decision && decision.answerable === false && typeof decision.probability === "number" &&
    decision.probability < Number(decision.threshold)
  ) {
    reasons.push(t("reasonConfidence", { p: decision.probability.toFixed(2), th: Number(decision.threshold).toFixed(2) }));
    if (typeof decision.margin === "number" && typeof decision.margin_needed === "number") {
      reasons.push(t("reasonMargin", { m: decision.margin.toFixed(2), needed: decision.margin_needed.toFixed(2) }));
    }
  }
  if (decision && decision.rule) reasons.push(t("reasonRule", { rule: decision.rule }));
  for (const note of result.notes || []) reasons.push(note);
  return reasons;
}

function renderResult(item, result) {
  item.dataset.status = result.status;
  state.lastEvidence = new Map((result.evidence || []).map((entry) => [entry.id, entry]));
  const answer = item.querySelector(".answer");
  const outcome = item.querySelector(".outcome");
  clear(answer);
  clear(outcome);
  const cited = new Set(result.evidence_ids || []);
  if (result.status === "insufficient_evidence") {
    const box = el("div", { class: "refusal", role: "note" }, el("p", { class: "label" }, t("refusal")));
    box.append(el("p", {}, result.answer || t("refusalText")));
    for (const reason of refusalReason(result)) box.append(el("p", { class: "reason" }, reason));
    outcome.append(box);
    return;
  }
  if (result.status === "rejected") {
    outcome.append(el("p", { class: "refusal", role: "note" }, t("rejected")));
    return;
  }
  if (result.status === "needs_clarification") outcome.append(el("p", { class: "label" }, t("clarify")));
  if (result.status === "degraded") {
    const box = el("div", { class: "warning" }, el("p", { class: "label" }, t("degraded")));
    for (const note of result.notes || []) box.append(el("p", {}, note));
    outcome.append(box);
  }
  renderAnswer(answer, result.answer || "", cited, result.answer_spans || []);
  if (result.status === "needs_confirmation") outcome.append(pendingBox(result));
}

// The answer as text, each [evidence-id] a link opening that evidence with the quoted text
// highlighted (or, where the quote cannot be located, the reader's answer span from answer_spans).
function renderAnswer(container, text, cited, spans) {
  const spanOf = new Map();
  for (const span of spans || []) if (!spanOf.has(span.evidence_id)) spanOf.set(span.evidence_id, span);
  const paragraph = el("p", { class: "text" });
  let last = 0;
  let segmentStart = 0;
  let number = 0;
  for (const match of text.matchAll(CITATION)) {
    const id = match[1];
    if (cited ? !cited.has(id) : !id.includes("::")) continue;
    paragraph.append(text.slice(last, match.index));
    const quote = text.slice(segmentStart, match.index).trim();
    number += 1;
    const link = el(
      "a",
      {
        href: `#evidence-${number}`,
        class: "cite",
        "data-evidence-id": id,
        "data-quote": quote,
        title: id,
        "aria-label": `${t("evidenceTitle")} ${number}: ${id}`,
      },
      `[${number}]`,
    );
    link.addEventListener("click", (event) => {
      event.preventDefault();
      openEvidence(id, quote, spanOf.get(id));
    });
    paragraph.append(link);
    last = match.index + match[0].length;
    segmentStart = last;
  }
  paragraph.append(text.slice(last));
  container.append(paragraph);
}

function pendingBox(result) {
  const box = el("div", { class: "pending", role: "group", "aria-label": t("pendingTitle") });
  box.append(el("p", { class: "label" }, t("pendingTitle")));
  const list = el("ul", {});
  for (const call_ of result.pending || []) {
    list.append(el("li", {}, el("code", {}, call_.tool), " ", el("code", {}, JSON.stringify(call_.args))));
  }
  box.append(list);
  const threadId = state.threadId;
  const decide = async (approve) => {
    for (const button of box.querySelectorAll("button")) button.disabled = true;
    box.append(el("p", { class: "note" }, approve ? t("approved") : t("rejectedCall")));
    const item = assistantShell();
    $("messages").append(item);
    try {
      const next = await call("POST", `/v1/threads/${encodeURIComponent(threadId)}/confirm`, { body: { approve } });
      renderResult(item, next);
    } catch (error) {
      showFailure(error, item);
    }
    loadThreads();
  };
  box.append(
    el("button", { type: "button", class: "approve", onclick: () => decide(true) }, t("approve")),
    " ",
    el("button", { type: "button", class: "reject secondary", onclick: () => decide(false) }, t("reject")),
  );
  return box;
}

// -- evidence ----------------------------------------------------------------------------------
// Bidirectional embedding/override/isolate controls in a document would reorder what is shown
// ("Trojan Source"); each is shown as U+FFFD instead, one character for one, so offsets still hold.
const BIDI_CONTROLS = /[\u061c\u202a-\u202e\u2066-\u2069]/g;
const visibleControls = (text) => text.replace(BIDI_CONTROLS, "\ufffd");

async function openEvidence(id, quote, span) {
  const dialog = $("evidence");
  const meta = $("evidence-meta");
  const text = $("evidence-text");
  const note = $("evidence-note");
  clear(meta);
  clear(text);
  note.textContent = "";
  let view;
  try {
    const query = {};
    if (quote) query.quote = quote;
    if (span) Object.assign(query, { start: span.start, end: span.end });
    view = await call("GET", `/v1/evidence/${encodeURIComponent(id)}`, { query: Object.keys(query).length ? query : undefined });
  } catch (error) {
    note.textContent = error instanceof ApiError && error.status === 404 ? t("notFound") : t("failed", { message: error.message });
    dialog.showModal();
    return;
  }
  const known = state.lastEvidence.get(id);
  const rows = [
    [t("source"), sourceNode(view.source)],
    [t("headings"), (view.heading_path || []).join(" › ") || "—"],
  ];
  // the page of the cited quote (a chunk of merged short pages runs over several), else where the chunk starts
  const page = view.highlight && view.highlight.page !== null && view.highlight.page !== undefined ? view.highlight.page : view.page;
  if (page !== null && page !== undefined) rows.push([t("page"), page]);
  if (view.char_start !== null && view.char_start !== undefined) rows.push([t("offsets"), `${view.char_start}–${view.char_end}`]);
  if (known) {
    const scores = [t("score", { s: Number(known.score).toFixed(3) })];
    if (known.relevance !== null && known.relevance !== undefined) scores.push(t("relevance", { r: Number(known.relevance).toFixed(3) }));
    rows.push([t("scores"), scores.join(", ")]);
  }
  for (const [name, value] of rows) meta.append(el("dt", {}, name), el("dd", {}, value));
  const marked = view.highlight;
  const body = visibleControls(view.text);
  if (marked) {
    text.append(body.slice(0, marked.start));
    text.append(el("mark", { "aria-label": t("citedText") }, body.slice(marked.start, marked.end)));
    text.append(body.slice(marked.end));
  } else {
    text.append(body);
    if (quote) note.textContent = t("notLocated");
  }
  dialog.dataset.evidenceId = id;
  dialog.showModal();
  const mark = text.querySelector("mark");
  if (mark) mark.scrollIntoView({ block: "center" });
}

// -- documents ---------------------------------------------------------------------------------
async function loadSources() {
  try {
    state.sources = await call("GET", "/v1/sources");
  } catch {
    state.sources = [];
  }
  renderSources();
  renderFilter();
}

function renderSources() {
  const rows = $("doc-rows");
  clear(rows);
  const needle = $("doc-search").value.trim().toLowerCase();
  const shown = state.sources.filter(
    (s) => !needle || s.id.toLowerCase().includes(needle) || (s.title || "").toLowerCase().includes(needle),
  );
  const canWrite = !state.status || state.status.write !== false;
  for (const source of shown) {
    const actions = el("td", { class: "actions" });
    if (canWrite && (source.uploaded || source.site)) {
      const label = source.site ? t("resync") : t("reindex");
      actions.append(
        el("button", { type: "button", class: "secondary", "aria-label": `${label} ${source.id}`, onclick: () => reindex(source) }, label),
        " ",
      );
    }
    if (canWrite) {
      actions.append(
        el("button", { type: "button", class: "danger", "aria-label": `${t("remove")} ${source.id}`, onclick: () => removeSource(source) }, t("remove")),
      );
    }
    rows.append(
      el(
        "tr",
        { "data-source": source.id },
        el("th", { scope: "row" }, el("span", { class: "doc-id" }, sourceNode(source.id)), el("span", { class: "doc-title" }, source.title)),
        el("td", {}, source.format || "—"),
        el("td", {}, source.chunks),
        el("td", {}, formatBytes(source.bytes)),
        el("td", {}, formatTime(source.sync ? source.sync.at : source.indexed_at), source.sync ? el("span", { class: "doc-sync" }, syncNote(source.sync)) : null),
        actions,
      ),
    );
  }
  $("doc-empty").hidden = state.sources.length > 0;
}

// A website's last sync, as its rows show it: "re-synced: 1 new, 2 changed, 40 unchanged, ...".
function syncNote(sync) {
  const counts = ["new", "changed", "unchanged", "removed", "failed"].map((name) => t(`sync_${name}`, { n: sync[name] || 0 }));
  const what = sync.state === "failed" ? t("syncFailed", { error: sync.error || "" }) : counts.join(", ");
  return `${t(sync.kind === "resync" ? "syncScheduled" : "syncManual")}: ${what}`;
}

function renderFilter() {
  const options = $("filter-options");
  const chosen = new Set(selectedSources());
  clear(options);
  state.sources.forEach((source, index) => {
    const id = `filter-${index}`;
    options.append(
      el(
        "div",
        { class: "filter-option" },
        el("input", { type: "checkbox", id, value: source.id, checked: chosen.has(source.id), onchange: updateFilterCount }),
        el("label", { for: id }, source.id),
      ),
    );
  });
  updateFilterCount();
}

function updateFilterCount() {
  const n = selectedSources().length;
  $("filter-count").textContent = n ? t("filterCount", { n }) : t("filterAll");
}

function logLine(text, kind = "") {
  const line = el("li", { class: kind }, text);
  $("upload-log").append(line);
  return line;
}

async function watchJob(job, line, name) {
  const bar = $("upload-progress");
  for (;;) {
    const phase = t(`phase_${job.phase}`);
    if (job.state === "done") {
      const report = job.report || {};
      line.textContent = job.kind === "site" || job.kind === "resync"
        ? t("siteDone", { name, new: report.new || 0, changed: report.changed || 0, unchanged: report.unchanged || 0, removed: report.removed || 0, failed: report.failed || 0 })
        : t("indexed_", { name, chunks: job.report ? job.report.chunks : job.total });
      line.className = "ok";
      bar.max = 1;
      bar.value = 1;
      return;
    }
    if (job.state === "failed") {
      line.textContent = t("refused", { name, error: job.error });
      line.className = "error";
      return;
    }
    line.textContent = t("indexing", { name, phase, done: job.done, total: job.total || "?" });
    if (job.total) {
      bar.max = job.total;
      bar.value = job.done;
    } else bar.removeAttribute("value");
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    job = await call("GET", `/v1/jobs/${encodeURIComponent(job.id)}`);
  }
}

// Files go up in batches (one request and one indexing job each) of at most FILES_PER_UPLOAD files
// and the upload limit in bytes; a file over the limit goes alone, so its refusal names it.
function batches(files) {
  const limit = (state.status && state.status.max_upload_bytes) || Infinity;
  const out = [];
  let batch = [];
  let size = 0;
  for (const file of files) {
    if (file.size > limit) {
      out.push([file]);
      continue;
    }
    if (batch.length && (batch.length >= FILES_PER_UPLOAD || size + file.size > limit)) {
      out.push(batch);
      batch = [];
      size = 0;
    }
    batch.push(file);
    size += file.size;
  }
  if (batch.length) out.push(batch);
  return out;
}

async function uploadBatch(files) {
  const bar = $("upload-progress");
  const name = files.length === 1 ? files[0].name : t("nFiles", { n: files.length, first: files[0].name });
  const line = logLine(t("uploading", { name }));
  bar.max = 1;
  bar.value = 0;
  try {
    const body = await sendFiles(files, (sent, total) => {
      bar.max = total || 1;
      bar.value = sent;
    });
    for (const outcome of body.files) {
      if (!outcome.accepted) logLine(t("refused", { name: outcome.name, error: outcome.error }), "error");
    }
    await watchJob(body.job, line, name);
  } catch (error) {
    line.textContent = t("refused", { name, error: error.message });
    line.className = "error";
  }
}

async function uploadFiles(files) {
  for (const group of batches(files)) await uploadBatch(group);
  await loadSources();
  refreshStatus();
}

async function addWebsite(event) {
  event.preventDefault();
  const input = $("site-url");
  const url = input.value.trim();
  if (!url) return;
  const line = logLine(t("siteQueued", { name: url }));
  try {
    const body = await addSite(url);
    input.value = "";
    await watchJob(body.job, line, body.site);
  } catch (error) {
    line.textContent = t("refused", { name: url, error: error.message });
    line.className = "error";
  }
  await loadSources();
  refreshStatus();
}

async function removeSource(source) {
  if (!window.confirm(t("confirmRemove", { name: source.id }))) return;
  try {
    await call("DELETE", `/v1/sources/${source.id.split("/").map(encodeURIComponent).join("/")}`);
    logLine(t("removed", { name: source.id }), "ok");
  } catch (error) {
    logLine(t("refused", { name: source.id, error: error.message }), "error");
  }
  await loadSources();
  refreshStatus();
}

async function reindex(source) {
  const name = source.site || source.id;
  const line = logLine(t("indexing", { name, phase: t("phase_queued"), done: 0, total: "?" }));
  try {
    // a web page: its whole site is re-synced (posting the site's URL again)
    const job = source.site
      ? (await addSite(source.site)).job
      : await call("POST", `/v1/sources/${source.id.split("/").map(encodeURIComponent).join("/")}/reindex`);
    await watchJob(job, line, name);
  } catch (error) {
    line.textContent = t("refused", { name, error: error.message });
    line.className = "error";
  }
  await loadSources();
}

// -- wiring ------------------------------------------------------------------------------------
function wire() {
  $("sign-in-form").addEventListener("submit", signIn);
  $("sign-out").addEventListener("click", () => {
    storeKey("");
    window.location.reload();
  });
  for (const tab of TABS) $(`tab-${tab}`).addEventListener("click", () => selectTab(tab));
  $("tabs").addEventListener("keydown", onTabKey);
  $("ask-form").addEventListener("submit", ask);
  $("question").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("ask-form").requestSubmit();
    }
  });
  $("new-thread").addEventListener("click", () => {
    newThread();
    $("question").focus();
  });
  $("evidence-close").addEventListener("click", () => $("evidence").close());
  $("doc-search").addEventListener("input", renderSources);
  $("refresh-status").addEventListener("click", refreshStatus);
  $("site-form").addEventListener("submit", addWebsite);
  $("file-input").addEventListener("change", (event) => {
    const files = [...event.target.files];
    event.target.value = "";
    uploadFiles(files);
  });
  const zone = $("drop-zone");
  zone.addEventListener("click", () => $("file-input").click());
  zone.addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      $("file-input").click();
    }
  });
  zone.addEventListener("dragover", (event) => {
    event.preventDefault();
    zone.classList.add("over");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("over");
    uploadFiles([...event.dataTransfer.files]);
  });
}

wire();
start();
