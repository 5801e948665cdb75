"""``.pptx`` -> one Markdown page per slide: the title as a heading, text, bullets and tables.

Written on python-pptx instead of Haystack's `PPTXToDocument`, which reads only shapes with a text
frame: a table on a slide (a graphic frame) gives no text at all, and the title is not told apart
from the body. Here each slide is a page:

- the title placeholder becomes ``# Title``;
- shapes are read top to bottom, then left to right (groups opened): a body or content placeholder's
  paragraphs are ``-`` items indented by their level, other text boxes are paragraphs;
- a table becomes a Markdown table (`markdown_table`) whose merged cells repeat their text;
- speaker notes, pictures and charts are left out (notes are the presenter's script, not the slide).

An empty slide is an empty page, so page numbers stay slide numbers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from haygraph.retrieval.formats.tables import markdown_table

__all__ = ["pptx_pages"]


def pptx_pages(path: Path) -> list[str]:
    """The Markdown text of each slide of a ``.pptx`` file, in slide order."""
    import pptx

    deck = pptx.Presentation(str(path))
    return [_slide(slide) for slide in deck.slides]


def _slide(slide: Any) -> str:
    blocks: list[str] = []
    title = slide.shapes.title
    if title is not None and title.has_text_frame and title.text_frame.text.strip():
        blocks.append("# " + " ".join(title.text_frame.text.split()))
    title_id = title.shape_id if title is not None else None
    for shape in _ordered(slide.shapes):
        if shape.shape_id == title_id:
            continue
        block = _shape_block(shape)
        if block:
            blocks.append(block)
    return "\n\n".join(blocks)


def _ordered(shapes: Any) -> list[Any]:
    """Shapes top to bottom, left to right, with the shapes of groups in their place."""
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    out: list[Any] = []
    for shape in sorted(shapes, key=lambda s: ((s.top or 0), (s.left or 0))):
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            out.extend(_ordered(shape.shapes))
        else:
            out.append(shape)
    return out


def _shape_block(shape: Any) -> str:
    if getattr(shape, "has_table", False) and shape.has_table:
        return markdown_table(_table_rows(shape.table))
    if not getattr(shape, "has_text_frame", False) or not shape.has_text_frame:
        return ""
    paragraphs = [(p.level, " ".join(p.text.split())) for p in shape.text_frame.paragraphs]
    paragraphs = [(level, text) for level, text in paragraphs if text]
    if not paragraphs:
        return ""
    if _is_body(shape):
        return "\n".join(f"{'  ' * level}- {text}" for level, text in paragraphs)
    return "\n".join(text for _, text in paragraphs)


def _is_body(shape: Any) -> bool:
    """Whether a shape is a body or content placeholder (its paragraphs are bullets by default)."""
    from pptx.enum.shapes import PP_PLACEHOLDER

    if not shape.is_placeholder:
        return False
    return shape.placeholder_format.type in {PP_PLACEHOLDER.BODY, PP_PLACEHOLDER.OBJECT}


def _table_rows(table: Any) -> list[list[str]]:
    """A table's cell texts, a merged cell's text repeated into every cell it spans."""
    rows = [[" ".join(cell.text.split()) for cell in row.cells] for row in table.rows]
    for r, row in enumerate(table.rows):
        for c, cell in enumerate(row.cells):
            if cell.is_merge_origin:
                for dr in range(cell.span_height):
                    for dc in range(cell.span_width):
                        if r + dr < len(rows) and c + dc < len(rows[r + dr]):
                            rows[r + dr][c + dc] = rows[r][c]
    return rows
