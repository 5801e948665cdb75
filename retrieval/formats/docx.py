"""``.docx`` -> Markdown: heading styles as ``#`` headings, lists as lists, tables as Markdown tables.

Written on python-docx instead of Haystack's `DOCXToDocument` because that converter keeps no
structure: heading-style paragraphs come out as plain lines, list paragraphs lose their markers, and
paragraphs are joined by single line breaks, so the splitter sees one block with no heading path.
This module walks the body in order:

- **Headings**: a paragraph whose style (or a style it is based on) is "Heading N" or has outline
  level N-1 becomes ``#`` × N (at most 6); a "Title" paragraph is ``#``, and in a document that
  has one, "Heading N" is ``#`` × (N + 1), as Word shows them.
- **Lists**: a paragraph with numbering (its own ``w:numPr`` or its style's) is an item, indented by
  its level, ``-`` for bullets and ``1.``, ``2.``, … for numbered levels (counted per list and level);
  consecutive items form one list block.
- **Tables** become Markdown tables (`markdown_table`): merged cells repeat their text (python-docx
  gives a merged cell in every grid position it covers), the first row is the header.
- **Text**: every run's text, tracked insertions included and deletions left out (``w:delText``),
  line breaks kept, field instructions (``w:instrText``) left out; text boxes follow the paragraph
  they are anchored to. A table of contents (a content control of the "Table of Contents" gallery)
  is left out: it repeats the headings with page numbers.
- **Footnotes and endnotes are kept apart**: the body keeps a marker ``[^N]`` where the note is
  referenced, and the notes follow the body as Markdown footnote lines ``[^N]: text`` — a fact in a
  footnote stays findable, and it never interrupts the sentence it annotates.
- **Comments are dropped**: they are reviewers' remarks about the text, not the document's content.
  Page headers and footers are left out as page furniture.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from haygraph.retrieval.formats.tables import markdown_table

__all__ = ["docx_to_markdown"]

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
_HEADING_STYLE = re.compile(r"^heading\s*([1-9])$", re.IGNORECASE)
_LIST_STYLE = re.compile(r"^list(?: bullet| number| continue)?\s+([2-9])$", re.IGNORECASE)
_NOTE_RELS = {
    "footnote": "http://schemas.openxmlformats.org/officeDocument/2006/relationships/footnotes",
    "endnote": "http://schemas.openxmlformats.org/officeDocument/2006/relationships/endnotes",
}


def docx_to_markdown(path: Path) -> str:
    """The Markdown text of a ``.docx`` file (see the module docstring for what becomes what)."""
    import docx

    document = docx.Document(str(path))
    walker = _Walker(document)
    body = document.element.body
    titled = any(_heading_level(p, walker.styles) == _TITLE for p in body.iter(f"{_W}p"))
    walker.shift = 1 if titled else 0
    walker.walk(body)
    return walker.text()


class _Walker:
    """Walk a document body, collecting blocks (headings, paragraphs, lists, tables) in order."""

    def __init__(self, document: Any) -> None:
        self.document = document
        self.shift = 0  # 1 when the document has a Title: Heading N is then level N + 1
        self.blocks: list[str] = []
        self.items: list[str] = []  # the list being collected
        self.counters: dict[tuple[str, int], int] = {}
        self.notes: dict[str, list[tuple[str, str]]] = {"footnote": [], "endnote": []}
        self.numbering = _numbering_formats(document)
        self.styles = {s.get(f"{_W}styleId"): s for s in document.styles.element.iterchildren(f"{_W}style")}
        self.note_texts = {kind: _note_texts(document, kind) for kind in _NOTE_RELS}

    def walk(self, parent: Any) -> None:
        for element in parent.iterchildren():
            if element.tag == f"{_W}p":
                self.paragraph(element)
            elif element.tag == f"{_W}tbl":
                self.table(element)
            elif element.tag == f"{_W}sdt" and not _is_toc(element):
                content = element.find(f"{_W}sdtContent")
                if content is not None:
                    self.walk(content)

    def paragraph(self, p: Any) -> None:
        text = self.inline_text(p).strip()
        level = _heading_level(p, self.styles)
        number = _list_number(p, self.styles)
        if text and level:  # a numbered heading ("1. Scope") is a heading
            self.end_list()
            depth = 1 if level == _TITLE else min(level + self.shift, 6)
            self.blocks.append(f"{'#' * depth} {' '.join(text.split())}")
        elif text and number is not None:
            num_id, ilvl = number
            fmt = self.numbering.get((num_id, ilvl), "bullet")
            for deeper in [key for key in self.counters if key[0] == num_id and key[1] > ilvl]:
                del self.counters[deeper]  # a new parent item restarts the numbering below it
            count = self.counters.get((num_id, ilvl), 0) + 1
            self.counters[(num_id, ilvl)] = count
            marker = "-" if fmt in {"bullet", "none"} else f"{count}."
            self.items.append(f"{'  ' * ilvl}{marker} {' '.join(text.split())}")
        elif text:
            self.end_list()
            self.blocks.append(text)
        for box in _text_boxes(p):
            self.walk(box)

    def table(self, tbl: Any) -> None:
        from docx.table import Table

        self.end_list()
        table = Table(tbl, self.document)
        rows = [[self.cell_text(cell) for cell in row.cells] for row in table.rows]
        rendered = markdown_table(rows)
        if rendered:
            self.blocks.append(rendered)

    def cell_text(self, cell: Any) -> str:
        return " ".join(self.inline_text(p) for p in cell._tc.iterchildren(f"{_W}p"))

    def inline_text(self, p: Any) -> str:
        """A paragraph's text: runs (insertions too), breaks, and ``[^N]`` markers for its notes."""
        parts: list[str] = []
        for node in p.iter():
            if _inside(node, p, {f"{_W}del", f"{_W}txbxContent", _MC_FALLBACK}):
                continue
            tag = node.tag
            if tag == f"{_W}t" and node.text:
                parts.append(node.text)
            elif tag == f"{_W}tab":
                parts.append(" ")
            elif tag in {f"{_W}br", f"{_W}cr"}:
                parts.append("\n")
            elif tag == f"{_W}noBreakHyphen":
                parts.append("-")
            elif tag in {f"{_W}footnoteReference", f"{_W}endnoteReference"}:
                parts.append(self.note_marker(tag[len(_W) : -len("Reference")], node.get(f"{_W}id", "")))
        return "".join(parts)

    def note_marker(self, kind: str, note_id: str) -> str:
        text = self.note_texts[kind].get(note_id, "")
        if not text:
            return ""
        self.notes[kind].append((note_id, text))
        prefix = "" if kind == "footnote" else "e"
        return f"[^{prefix}{len(self.notes[kind])}]"

    def end_list(self) -> None:
        if self.items:
            self.blocks.append("\n".join(self.items))
            self.items = []

    def text(self) -> str:
        self.end_list()
        blocks = list(self.blocks)
        for kind, prefix in (("footnote", ""), ("endnote", "e")):
            if self.notes[kind]:
                lines = [f"[^{prefix}{i}]: {text}" for i, (_, text) in enumerate(self.notes[kind], start=1)]
                blocks.append("\n".join(lines))
        return "\n\n".join(blocks)


def _inside(node: Any, root: Any, tags: set[str]) -> bool:
    """Whether `node` lies inside an element with one of `tags`, below `root`."""
    parent = node.getparent()
    while parent is not None and parent is not root:
        if parent.tag in tags:
            return True
        parent = parent.getparent()
    return False


def _text_boxes(p: Any) -> list[Any]:
    """The text-box contents anchored to paragraph `p` (the ``mc:Fallback`` copies left out)."""
    boxes = []
    for box in p.iter(f"{_W}txbxContent"):
        if not any(a.tag == _MC_FALLBACK for a in box.iterancestors()):
            boxes.append(box)
    return boxes


def _is_toc(sdt: Any) -> bool:
    gallery = sdt.find(f"{_W}sdtPr/{_W}docPartObj/{_W}docPartGallery")
    return gallery is not None and "contents" in (gallery.get(f"{_W}val") or "").lower()


def _styles(p: Any, by_id: dict[str, Any]) -> list[Any]:
    """The paragraph's style and the styles it is based on, nearest first."""
    style_id = p.find(f"{_W}pPr/{_W}pStyle")
    out: list[Any] = []
    current = style_id.get(f"{_W}val") if style_id is not None else None
    while current and len(out) < 20:
        style = by_id.get(current)
        if style is None:
            break
        out.append(style)
        based = style.find(f"{_W}basedOn")
        current = based.get(f"{_W}val") if based is not None else None
    return out


_TITLE = -1
"""`_heading_level` of a paragraph in the Title style."""


def _heading_level(p: Any, styles: dict[str, Any]) -> int:
    """N for a paragraph in a "Heading N" style (or of outline level N - 1), `_TITLE`, or 0 for text."""
    for element in [p, *_styles(p, styles)]:
        outline = element.find(f"{_W}pPr/{_W}outlineLvl")
        if outline is not None and (outline.get(f"{_W}val") or "").isdigit():
            level = int(outline.get(f"{_W}val")) + 1
            return level if level <= 9 else 0
        name = element.find(f"{_W}name")
        value = (name.get(f"{_W}val") or "") if name is not None else ""
        match = _HEADING_STYLE.match(value.strip())
        if match:
            return int(match.group(1))
        if value.strip().lower() == "title":
            return _TITLE
    return 0


def _list_number(p: Any, styles: dict[str, Any]) -> tuple[str, int] | None:
    """``(numId, level)`` of a list paragraph (its own numbering or its style's), else None.

    Word's "List Bullet 2" / "List Number 3" styles are level-0 lists drawn further in: their number
    gives the level (1 and 2) when the numbering says less.
    """
    chain = [p, *_styles(p, styles)]
    for element in chain:
        num_pr = element.find(f"{_W}pPr/{_W}numPr")
        if num_pr is None:
            continue
        num_id = num_pr.find(f"{_W}numId")
        ilvl = num_pr.find(f"{_W}ilvl")
        value = num_id.get(f"{_W}val") if num_id is not None else None
        if not value or value == "0":  # numId 0 switches numbering off
            return None
        level_text = ilvl.get(f"{_W}val") if ilvl is not None else "0"
        level = int(level_text) if (level_text or "").isdigit() else 0
        for style in chain[1:]:
            name = style.find(f"{_W}name")
            match = _LIST_STYLE.match((name.get(f"{_W}val") or "") if name is not None else "")
            if match:
                level = max(level, int(match.group(1)) - 1)
                break
        return value, min(level, 8)
    return None


def _numbering_formats(document: Any) -> dict[tuple[str, int], str]:
    """``{(numId, level): numFmt}`` from the numbering part ("bullet", "decimal", ...); {} without one."""
    try:
        numbering = document.part.numbering_part.element
    except (KeyError, NotImplementedError, AttributeError):
        return {}
    abstract = {
        a.get(f"{_W}abstractNumId"): {
            int(lvl.get(f"{_W}ilvl", "0")): (fmt.get(f"{_W}val") if fmt is not None else "decimal")
            for lvl in a.iterchildren(f"{_W}lvl")
            for fmt in [lvl.find(f"{_W}numFmt")]
        }
        for a in numbering.iterchildren(f"{_W}abstractNum")
    }
    formats: dict[tuple[str, int], str] = {}
    for num in numbering.iterchildren(f"{_W}num"):
        ref = num.find(f"{_W}abstractNumId")
        levels = abstract.get(ref.get(f"{_W}val") if ref is not None else None, {})
        for level, fmt in levels.items():
            formats[(num.get(f"{_W}numId", ""), level)] = fmt or "decimal"
    return formats


def _note_texts(document: Any, kind: str) -> dict[str, str]:
    """``{id: text}`` of the document's footnotes or endnotes (the separator notes left out)."""
    from lxml import etree

    for rel in document.part.rels.values():
        if rel.reltype == _NOTE_RELS[kind] and not rel.is_external:
            root = etree.fromstring(rel.target_part.blob)
            notes: dict[str, str] = {}
            for note in root.iterchildren(f"{_W}{kind}"):
                if note.get(f"{_W}type") in {"separator", "continuationSeparator", "continuationNotice"}:
                    continue
                text = " ".join("".join(t.text or "" for t in p.iter(f"{_W}t")) for p in note.iter(f"{_W}p"))
                notes[note.get(f"{_W}id", "")] = " ".join(text.split())
            return notes
    return {}
