"""Markdown and HTML reduced to readable text, for the units an offline answer quotes.

Product documentation is written in Markdown with raw HTML, include directives and site-generator
containers; quoting it verbatim leaks ``<a href=…>``, ``<!--@include: …-->`` and ``::: tip`` into
answers. These helpers turn a chunk's lines into what a reader of the rendered page sees: links as
their text, no HTML tags or comments, no include markers, no code-fence or container lines, no
emphasis markers — while code spans (`` `--flag` ``) are kept verbatim, since they often are the answer.

Only the quoted copy is reduced: `Evidence.text` (and its ``char_start``/``char_end`` in the source)
is never changed, so citations keep pointing at the original chunk.
"""

from __future__ import annotations

import html
import re

_FENCE = re.compile(r"^\s*(?:`{3,}|~{3,})")
"""A code-fence line (```` ```python ````, ``~~~``): its markers are left out, its code lines kept."""

_DROPPED_LINE = re.compile(
    r"^\s*(?:"
    r":{3,}.*"  # VitePress / markdown-it containers: ::: tip, ::: details Title, :::
    r"|\{\{[<%].*[%>]\}\}"  # Hugo shortcodes on their own line: {{< hint info >}}, {{% /note %}}
    r"|\{%-?\s*[a-z_-]+.*%\}"  # Liquid / Jinja tags: {% include x.md %}, {% raw %}, {% endif %}
    r"|@{1,2}include\b.*"  # @include(file), @@include('x.html')
    r"|--8<--.*"  # MkDocs snippets: --8<-- "file.md"
    r"|\.\. [a-z-]+::.*"  # reStructuredText directives: .. include:: x.rst
    r"|\[[^\]\n]+\]:\s+\S+.*"  # link reference definitions: [docs]: https://…
    r"|\{:.*\}"  # kramdown attribute lists: {: .note}
    r"|>?\s*\[!(?:NOTE|TIP|IMPORTANT|WARNING|CAUTION)\]\s*"  # GitHub alert headers
    r")$",
    re.IGNORECASE,
)
"""Lines that are markup only (containers, includes, link definitions); they read as a blank line."""

_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_IMAGE = re.compile(r"!\[[^\]\n]*\]\([^)\n]*\)")
_LINK = re.compile(r"\[([^\]\n]+)\]\((?:[^()\s]|\([^()\s]*\))*(?:\s+\"[^\"\n]*\")?\)")
_REF_LINK = re.compile(r"\[([^\]\n]+)\]\[[^\]\n]*\]")
_FOOTNOTE = re.compile(r"\[\^[^\]\n]+\]")
_AUTOLINK = re.compile(r"<((?:https?|ftp|mailto):[^>\s]+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+)>")
_BREAK_TAG = re.compile(r"<br\s*/?>", re.IGNORECASE)
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")
_SHORTCODE = re.compile(r"\{\{[<%].*?[%>]\}\}|\{%-?.*?-?%\}")
_INCLUDE = re.compile(r"@{1,2}include\s*\([^)]*\)")
_STRONG = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_EMPHASIS = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~])")
_SPACES = re.compile(r"[ \t]{2,}")
HIDDEN_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u202a-\u202e\u2066-\u2069]")
"""Characters an answer never shows: C0 and C1 control characters but tab, line feed and carriage return
(a NUL in a careless export), and the bidirectional embedding, override and isolate controls with the
Arabic letter mark, which can make a file name, a command or a number read backwards on screen
("Trojan Source", CVE-2021-42574)."""
_HELD = re.compile("\ue000([0-9]+)\ue001")
"""A code span held out of `_readable_prose` (private-use characters around its index)."""


def without_hidden_controls(text: str) -> str:
    """`text` without the control characters of `HIDDEN_CONTROLS`.

    U+202A–U+202E, U+2066–U+2069 and U+061C reorder the characters around them on screen, so a quoted
    document could show ``exe.txt`` as ``txt.exe`` or swap the digits of a limit; a NUL or an escape
    character in a quote ends up in a terminal, a JSON answer or a C string. Answers never need them:
    right-to-left letters still display right to left, and the left-to-right and right-to-left marks
    (U+200E, U+200F), which cannot reorder text, tabs and line breaks are kept.
    """
    return HIDDEN_CONTROLS.sub("", text)


def readable_inline(text: str) -> str:
    """One line of Markdown/HTML as readable text; code spans are kept verbatim.

    Links become their text (``[text](url)``, ``[text][ref]``, ``<a href=…>text</a>``), images,
    footnote marks, HTML tags and comments, Hugo shortcodes and Liquid tags are left out, ``**bold**``,
    ``*italic*`` and ``~~struck~~`` lose their markers, HTML entities and backslash escapes are decoded;
    control and bidirectional control characters are removed everywhere, code spans included
    (`without_hidden_controls`).
    """
    spans: list[str] = []

    def hold(match: re.Match[str]) -> str:
        spans.append(match.group(0))
        return f"\ue000{len(spans) - 1}\ue001"

    prose = _readable_prose(_CODE_SPAN.sub(hold, without_hidden_controls(text)))
    return _SPACES.sub(" ", _HELD.sub(lambda m: spans[int(m.group(1))], prose))


def _readable_prose(text: str) -> str:
    text = _COMMENT.sub("", text)
    text = _IMAGE.sub("", text)
    text = _LINK.sub(r"\1", text)
    text = _REF_LINK.sub(r"\1", text)
    text = _FOOTNOTE.sub("", text)
    text = _AUTOLINK.sub(r"\1", text)
    text = _BREAK_TAG.sub(" ", text)
    text = _TAG.sub("", text)
    text = _SHORTCODE.sub("", text)
    text = _INCLUDE.sub("", text)
    text = _STRONG.sub(r"\2", text)
    text = _EMPHASIS.sub(r"\1", text)
    text = _STRIKE.sub(r"\1", text)
    text = _ESCAPE.sub(r"\1", text)
    return html.unescape(text)


def readable_lines(text: str) -> list[tuple[str, bool]]:
    """The lines of a chunk as ``(line, is_code)``, markup-only lines blanked, comments removed.

    HTML comments (``<!--@include: ./x.md-->`` too) are removed first, keeping their line breaks.
    Code-fence lines and lines that are markup only (`_DROPPED_LINE`: containers, include directives,
    link definitions, attribute lists) become empty lines, which end a paragraph as a blank line does.
    Lines inside a fence are returned with ``is_code`` True and are not otherwise changed; the other
    lines keep their indentation and Markdown structure (list markers, headings, table pipes) for the
    caller to read — inline markup is reduced later, by `readable_inline`.
    """
    text = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    out: list[tuple[str, bool]] = []
    fence: str | None = None  # the opening fence's marker run (``` or ~~~~): it closes with as long a run
    for line in text.splitlines():
        marker = _FENCE.match(line)
        if marker:
            run = marker.group(0).strip()
            if fence is None:
                fence = run
            elif run[0] == fence[0] and len(run) >= len(fence) and not line.strip()[len(run) :].strip():
                fence = None
            else:
                out.append((line, True))
                continue
            out.append(("", False))
        elif fence is not None:
            out.append((line, True))
        elif _DROPPED_LINE.match(line):
            out.append(("", False))
        else:
            out.append((line, False))
    return out
