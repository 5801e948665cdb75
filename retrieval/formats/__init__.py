"""Conversion of each file format into Markdown-like text with its structure (headings, lists, tables).

One module per format — `html`, `docx`, `sheets` (xlsx and csv), `slides` (pptx), `pdf`, `markdown` —
and `tables`, the one Markdown table form they all write. `haygraph.retrieval.converters` and
`haygraph.retrieval.office_formats` call them; their output is what `StructuredSplitter` splits.
"""
