"""The manual as tests read it: the README front page and the pages of docs/ in the order of mkdocs.yml."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def nav_pages() -> list[Path]:
    """The pages of docs/ in the order of mkdocs.yml's nav."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    return [DOCS / next(iter(entry.values())) for entry in config["nav"]]


def manual_text() -> str:
    """The README and every page, one text."""
    return "\n\n".join(p.read_text(encoding="utf-8") for p in [README, *nav_pages()])


def blocks(path: Path, language: str) -> list[str]:
    """The fenced code blocks of one language in a Markdown file, in order."""
    return re.findall(rf"```{language}\n(.*?)```", path.read_text(encoding="utf-8"), re.S)


def manual_blocks(language: str) -> list[str]:
    """The code blocks of one language in the README and every page."""
    return [b for p in [README, *nav_pages()] for b in blocks(p, language)]
