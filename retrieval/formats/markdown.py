"""Markdown files: the HTML inside them that is never content gives no words.

Markdown may hold raw HTML. A renderer runs none of ``<script>``, ``<style>``, ``<template>``,
``<noscript>``, ``<iframe>`` as text and shows no ``<!-- comment -->``; read as plain text, their
bodies became words of the answer ("The Friday special is window.x=1 lentil soup"). `strip_non_content`
removes those elements with their bodies, and comments, from the text outside code: fenced code
blocks and inline code spans keep them as written, because there a ``<script>`` is what the page
shows. Everything else is left byte for byte as it was, so a Markdown file without such elements
converts exactly as before.
"""

from __future__ import annotations

import re

__all__ = ["strip_non_content"]

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})", re.MULTILINE)
_PROSE = re.compile(
    r"(?P<code>(?P<ticks>`+)(?:(?!(?P=ticks)).)+?(?P=ticks))"
    r"|(?P<hidden><!--.*?(?:-->|\Z)"
    r"|<(?:script|style|template|noscript|iframe)\b[^>]*/>"
    r"|<(?P<tag>script|style|template|noscript|iframe)\b[^>]*>.*?(?:</(?P=tag)\s*>|\Z))",
    re.IGNORECASE | re.DOTALL,
)
"""An inline code span (kept) or a hidden element or comment (removed), whichever starts first."""


def strip_non_content(text: str) -> str:
    """`text` without script, style, template, noscript and iframe elements or comments outside code."""
    if "<" not in text:
        return text
    out: list[str] = []
    for part, is_code in _segments(text):
        out.append(part if is_code else _strip_prose(part))
    return "".join(out)


def _segments(text: str) -> list[tuple[str, bool]]:
    """Split `text` into (part, is fenced code) pieces; an unclosed fence runs to the end."""
    parts: list[tuple[str, bool]] = []
    position = 0
    while True:
        opening = _FENCE.search(text, position)
        if opening is None:
            parts.append((text[position:], False))
            return parts
        parts.append((text[position : opening.start()], False))
        marker = opening.group(1)
        closing = re.compile(rf"^ {{0,3}}{re.escape(marker[0])}{{{len(marker)},}}[ \t]*$", re.MULTILINE)
        line_end = text.find("\n", opening.end())
        found = closing.search(text, line_end + 1) if line_end != -1 else None
        end = len(text) if found is None else found.end()
        parts.append((text[opening.start() : end], True))
        position = end
        if end >= len(text):
            return parts


def _strip_prose(text: str) -> str:
    """Remove the hidden elements from prose, leaving inline code spans as they are."""
    return _PROSE.sub(lambda m: m.group("code") or "", text)
