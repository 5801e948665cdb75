// The JSON API of haygraph serve, as the page uses it: the key goes in Authorization: Bearer.
// The key lives in sessionStorage (this tab only), never in a cookie or a URL.

const KEY_NAME = "haygraph.apiKey";

export class ApiError extends Error {
  constructor(status, type, message) {
    super(message);
    this.status = status;
    this.type = type;
  }
}

export function storedKey() {
  return sessionStorage.getItem(KEY_NAME) || "";
}

export function storeKey(key) {
  if (key) sessionStorage.setItem(KEY_NAME, key);
  else sessionStorage.removeItem(KEY_NAME);
}

function headers(extra = {}, key = storedKey()) {
  const out = { ...extra };
  if (key) out.Authorization = `Bearer ${key}`;
  return out;
}

async function failure(response) {
  let type = "http_error";
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = await response.json();
    if (body && body.error) ({ type, message } = body.error);
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(response.status, type, message);
}

export async function call(method, path, { body, key, query } = {}) {
  let url = path;
  if (query) url += `?${new URLSearchParams(query)}`;
  const init = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }, key) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const response = await fetch(url, init);
  if (!response.ok) throw await failure(response);
  return response.json();
}

// POST /v1/ask/stream; onEvent(kind, data) for each server-sent event (progress, token, result, error).
export async function askStream(body, onEvent, signal) {
  const response = await fetch("/v1/ask/stream", {
    method: "POST",
    headers: headers({ "Content-Type": "application/json", Accept: "text/event-stream" }),
    body: JSON.stringify(body),
    signal,
  });
  if (!response.ok) throw await failure(response);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value.replace(/\r\n/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let kind = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) kind = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) onEvent(kind, JSON.parse(data.join("\n")));
    }
  }
}

// POST /v1/sources with some files (one indexing job); onProgress(sent, total) while the bytes go up.
export function uploadFiles(files, onProgress) {
  return new Promise((resolve, reject) => {
    const form = new FormData();
    for (const file of files) form.append("files", file, file.name);
    const total = files.reduce((sum, file) => sum + file.size, 0);
    const request = new XMLHttpRequest();
    request.open("POST", "/v1/sources");
    const key = storedKey();
    if (key) request.setRequestHeader("Authorization", `Bearer ${key}`);
    request.upload.onprogress = (event) => onProgress(event.loaded, event.total || total);
    request.onload = () => {
      let body = null;
      try {
        body = JSON.parse(request.responseText);
      } catch {
        // not JSON
      }
      if (request.status >= 200 && request.status < 300) resolve(body);
      else {
        const error = (body && body.error) || { type: "http_error", message: `${request.status}` };
        reject(new ApiError(request.status, error.type, error.message));
      }
    };
    request.onerror = () => reject(new ApiError(0, "network_error", "the upload did not reach the server"));
    request.send(form);
  });
}

// POST /v1/sources with a website's URL (form field `url`): the crawl's indexing job, and the URL.
export async function addSite(url) {
  const response = await fetch("/v1/sources", {
    method: "POST",
    headers: headers({ "Content-Type": "application/x-www-form-urlencoded" }),
    body: new URLSearchParams({ url }),
  });
  if (!response.ok) throw await failure(response);
  return response.json();
}
