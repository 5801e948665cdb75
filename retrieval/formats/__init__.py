"""Conversion of each file format into Markdown-like text with its structure (headings, lists, tables).

One module per format — `docx`, `sheets` (xlsx and csv), `slides` (pptx) — and `tables`, the one
Markdown table form they all write. `haygraph.retrieval.office_formats` calls them; their output is
what `StructuredSplitter` splits.
"""
