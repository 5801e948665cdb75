"""The control plane's dependency direction, checked on the source: no Haystack, no upward imports.

Levels, bottom to top (see `haygraph.control.__doc__`): the base modules, `tools`, `window`,
`planning`, `graph`, `api`, the package `__init__`. A module may import from its own level or
below, never from above, and never through its own subpackage's `__init__` (which re-exports it).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from haygraph import control

ROOT = Path(control.__file__).parent
BASE = {"errors", "language", "texts", "prompts", "outcomes", "evidence", "reading"}
LEVELS = {**{name: 0 for name in BASE}, "tools": 1, "window": 2, "planning": 3, "graph": 4, "api": 5}
FORBIDDEN = {"haystack", "haystack_integrations", "haygraph.retrieval", "haygraph.adapters", "haygraph.eval"}


def unit(module: str) -> str:
    """The first part below `haygraph.control` ("" for the package itself)."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 else ""


def is_module(name: str) -> bool:
    """Whether `name` is a module or package of haygraph.control in the source tree."""
    parts = name.split(".")[2:]
    return parts[:1] != [] and (
        ROOT.joinpath(*parts).with_suffix(".py").is_file() or ROOT.joinpath(*parts).is_dir()
    )


def imports(path: Path) -> list[str]:
    """Every absolute module imported by `path` (`from package import module` counts as package.module)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.append(
                    submodule
                    if submodule.startswith("haygraph.control.") and is_module(submodule)
                    else node.module
                )
    return found


def modules() -> list[tuple[str, Path]]:
    return [
        (".".join(("haygraph", "control", *path.relative_to(ROOT).with_suffix("").parts)), path)
        for path in sorted(ROOT.rglob("*.py"))
    ]


class TestLayering:
    def test_every_module_has_a_level(self) -> None:
        units = {unit(name) for name, _ in modules()} - {"__init__"}
        assert units == set(LEVELS), units ^ set(LEVELS)

    def test_control_never_imports_haystack_retrieval_or_adapters(self) -> None:
        offenders = [
            f"{name}: {imported}"
            for name, path in modules()
            for imported in imports(path)
            if {imported.split(".")[0], ".".join(imported.split(".")[:2])} & FORBIDDEN
        ]
        assert offenders == []

    def test_the_checks_see_forbidden_and_upward_imports(self, tmp_path: Path) -> None:
        probe = tmp_path / "probe.py"
        probe.write_text(
            "import haystack\nfrom haygraph.retrieval.store import X\n"
            "from haygraph.control.graph import nodes\nfrom haygraph.control import api\n"
        )
        assert imports(probe) == [
            "haystack",
            "haygraph.retrieval.store",
            "haygraph.control.graph.nodes",
            "haygraph.control.api",
        ]

    def test_no_upward_imports(self) -> None:
        offenders = []
        for name, path in modules():
            own = unit(name)
            if own == "__init__":
                continue  # the package's public API re-exports from every level
            for imported in imports(path):
                if not imported.startswith("haygraph.control"):
                    continue
                target = unit(imported)
                if target == "" or LEVELS.get(target, 99) > LEVELS[own]:
                    offenders.append(f"{name} imports {imported}")
                elif (
                    own in ("tools", "window", "planning", "graph") and imported == f"haygraph.control.{own}"
                ):
                    offenders.append(f"{name} imports its own package's __init__ ({imported})")
        assert offenders == []

    @pytest.mark.parametrize(
        ("name", "expected"),
        [
            ("haygraph.control.window.budget", "window"),
            ("haygraph.control.errors", "errors"),
            ("haygraph.control", ""),
        ],
    )
    def test_unit_of_a_module(self, name: str, expected: str) -> None:
        assert unit(name) == expected
