"""The formats protocol: one set of facts in thirteen formats, every question asked of every format.

The files are written by ``benchmarks/make_formats_protocol.py`` into ``eval/cases/formats/``
(`FORMATS_DIR`, installed with `haygraph.eval`): an English and a Chinese guide as ``md/``, ``docx/``,
``pptx/``, ``pdf/``, ``html/``, ``rst/``, ``odt/``, ``epub/``, ``eml/`` and ``zip/`` (an export holding
the page), rendered scans read by OCR as ``png/`` (the guide as one image) and ``scan-pdf/`` (``.pdf``
files of page images, no text layer), their tables as one workbook in ``xlsx/``, and ``cases.jsonl``
(English and Chinese questions, table cells and text, each with the strings a right answer holds
and, for a table row, the other rows' values it must not quote).

`formats_protocols` gives one `AgentProtocol` per format: a store of that format's files and the
questions it can answer (the workbook holds only tables, so only the ``tabular`` questions are asked
of it). `formats_table` turns the reports of `run_protocol` into the per-format table: answered
correctly (the answer holds every expected string and no other row), and cited the format's own file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from haygraph.eval.agent_cases import AgentCase, AgentProtocol
from haygraph.eval.errors import EvalError

FORMATS_DIR = Path(__file__).resolve().parent / "cases" / "formats"
"""The protocol's files (written by ``benchmarks/make_formats_protocol.py``)."""
FORMATS: tuple[str, ...] = (
    "md", "docx", "xlsx", "pptx", "pdf", "html", "rst", "odt", "epub", "eml", "zip", "png", "scan-pdf",
)  # fmt: skip
"""The formats, Markdown (the reference) first."""
OCR_FORMATS = frozenset({"png", "scan-pdf"})
"""The rendered scans, read by OCR (the ``ocr`` extra): their tables are lines of cells, not Markdown."""
EXTENSIONS = {"scan-pdf": "pdf"}
"""A format's file extension where it is not the format's name."""
_TABLES_ONLY = frozenset({"xlsx"})


def formats_protocols(folder: Path = FORMATS_DIR, formats: tuple[str, ...] = FORMATS) -> list[AgentProtocol]:
    """One protocol per format: the format's folder to index and the questions it can answer.

    :raises EvalError: the folder, one format's files or ``cases.jsonl`` is missing, or a format is unknown.
    """
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        raise EvalError(f"unknown format(s) {unknown}; valid: {', '.join(FORMATS)}")
    cases_file = folder / "cases.jsonl"
    if not cases_file.is_file():
        raise EvalError(
            f"{cases_file} not found: give the formats protocol folder "
            "(python -m benchmarks.make_formats_protocol writes it)"
        )
    records = [
        json.loads(line) for line in cases_file.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    protocols = []
    for fmt in formats:
        files = (
            sorted(p for p in (folder / fmt).glob(f"*.{extension(fmt)}") if p.is_file())
            if (folder / fmt).is_dir()
            else []
        )
        if not files:
            raise EvalError(f"{folder / fmt} holds no .{extension(fmt)} files")
        cases = [
            AgentCase(
                id=str(r["id"]),
                question=str(r["question"]),
                lang=str(r["lang"]),
                absent=False,
                gold_sources=(_source(r, fmt),),
                answers=tuple(str(a) for a in r["answer_contains"]),
                all_answers=True,
                excludes=tuple(str(a) for a in r.get("answer_excludes", [])),
            )
            for r in records
            if r["tabular"] or fmt not in _TABLES_ONLY
        ]
        protocols.append(AgentProtocol(f"formats-{fmt}", cases, paths=[folder / fmt]))
    return protocols


def _source(record: dict[str, Any], fmt: str) -> str:
    """The source id a case's answer must cite in `fmt`: its guide's file (the workbook for xlsx)."""
    return guide_source(str(record["guide"]), fmt)


def extension(fmt: str) -> str:
    """The file extension (without the dot) of `fmt`'s files: ``pdf`` for ``scan-pdf``, else the name."""
    return EXTENSIONS.get(fmt, fmt)


def guide_source(guide: str, fmt: str) -> str:
    """The source id of `guide` in `fmt`: the workbook for xlsx, the page inside the export for zip."""
    if fmt == "xlsx":
        return "tables.xlsx"
    if fmt == "zip":
        return f"{guide}.zip/{guide}.md"
    return f"{guide}.{extension(fmt)}"


def formats_table(reports: dict[str, dict[str, Any]], mode: str = "hybrid") -> list[str]:
    """The per-format table (Markdown) of `mode`: questions, answered correctly per language, cited.

    :param reports: ``{format: report of run_protocol}``.
    """
    lines = [
        "| format | questions | answered correctly (en) | answered correctly (zh) | all "
        "| cited its own file |",
        "|---|---|---|---|---|---|",
    ]
    for fmt, report in reports.items():
        figures = report["modes"][mode]["figures"]

        def rate(group: str, name: str, figures: dict[str, Any] = figures) -> str:
            found = figures.get(group, {})
            value = found.get(name)
            return (
                "n/a"
                if value is None
                else f"{value:.3f} ({round(value * found['present'])}/{found['present']})"
            )

        lines.append(
            f"| {fmt} | {report['cases']} | {rate('en', 'answered_correct')} "
            f"| {rate('zh', 'answered_correct')} "
            f"| {rate('all', 'answered_correct')} | {rate('all', 'cited_gold')} |"
        )
    return lines
