"""The shape of the code: floors that never import upward, no import loop, one import name."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.conftest import REPO

FLOORS = {"schemas": 0, "transforms": 1, "flows": 2}


def module_imports() -> dict[str, set[str]]:
    """sysdiff module -> the sysdiff modules it imports (at any depth of the code)."""
    graph: dict[str, set[str]] = {}
    for floor in FLOORS:
        for path in (REPO / floor).rglob("*.py"):
            rel = path.relative_to(REPO).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            name = "sysdiff." + ".".join(parts)
            deps = set()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module:
                    base = node.module
                    deps.add(base)
                    deps.update(f"{base}.{a.name}" for a in node.names)
                elif isinstance(node, ast.Import):
                    deps.update(a.name for a in node.names)
            graph[name] = deps
    return {m: {d for d in deps if d in graph and d != m} for m, deps in graph.items()}


def floor_of(module: str) -> int:
    return FLOORS[module.split(".")[1]]


def test_no_module_imports_a_higher_floor():
    upward = [(m, d) for m, deps in module_imports().items() for d in deps
              if floor_of(d) > floor_of(m)]
    assert upward == []


def test_the_import_graph_has_no_loop():
    graph = module_imports()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    loops = []

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                loops.append(path[path.index(d):] + [d])
            elif d not in state:
                visit(d, [*path, d])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert loops == []


def test_the_wheel_installs_one_top_level_package(tmp_path):
    """``pip install`` puts ``sysdiff`` (and its metadata) at the top of site-packages,
    never ``flows``, ``transforms`` or ``schemas``."""
    litter = not (REPO / "build").exists()  # setuptools builds in the source tree
    try:
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                        str(tmp_path), str(REPO)], check=True, capture_output=True)
    finally:
        if litter:
            shutil.rmtree(REPO / "build", ignore_errors=True)
    (wheel,) = Path(tmp_path).glob("sysdiff-*.whl")
    tops = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"sysdiff"}
    names = zipfile.ZipFile(wheel).namelist()
    assert "sysdiff/flows/cli.py" in names and "sysdiff/transforms/engine.py" in names
    assert "sysdiff/schemas/formats/conllu.py" in names and "sysdiff/__init__.py" in names
