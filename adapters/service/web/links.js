// Links from a source to its web page. A source id (or any text the server sends) becomes a link only
// when it parses as an http: or https: URL; the href is the parsed URL's own serialisation, the label
// is a text node (never parsed as HTML), and the page opens in a new tab without a handle back to this
// one (rel="noopener noreferrer"). Everything else stays plain text.

const WEB_SCHEMES = new Set(["http:", "https:"]);

// The href for `text` if it is an absolute http(s) URL, else null (javascript:, data:, relative...).
export function webHref(text) {
  if (typeof text !== "string") return null;
  const trimmed = text.trim();
  if (!/^https?:\/\//i.test(trimmed)) return null;
  let url;
  try {
    url = new URL(trimmed);
  } catch {
    return null;
  }
  if (!WEB_SCHEMES.has(url.protocol) || !url.hostname || url.username || url.password) return null;
  return url.href;
}

// A node naming a source: a link opening its page for a web source, else a text node. `label`
// (default the id) is shown as text.
export function sourceNode(id, label = id) {
  const text = String(label ?? "");
  const href = webHref(id);
  if (href === null) return document.createTextNode(text);
  const link = document.createElement("a");
  link.href = href;
  link.target = "_blank";
  link.rel = "noopener noreferrer";
  link.className = "source-link";
  link.textContent = text;
  return link;
}
