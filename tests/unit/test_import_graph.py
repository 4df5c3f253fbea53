"""zq's modules import one another without a circle, hidden or not.

The graph is read from the source with ``ast``: every ``import`` and
``from ... import`` anywhere in a module (module level, inside functions,
under ``TYPE_CHECKING``), so a cycle hidden behind a function-level import
counts as one. An edge goes to the most specific zq module named
(``from zq import events`` -> zq.events; ``from zq.pooling import Pools`` ->
zq.pooling).
"""

from __future__ import annotations

import ast
from pathlib import Path

import zq

ROOT = Path(zq.__file__).parent


def module_names() -> dict[str, Path]:
    names = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def imports_of(name: str, source: str, known: set[str], *, is_package: bool = False) -> set[str]:
    """The zq modules ``source`` (module ``name``) imports, wherever the import stands."""
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
                break
    return found


def import_graph() -> dict[str, set[str]]:
    modules = module_names()
    return {
        name: imports_of(name, path.read_text(), set(modules),
                         is_package=path.name == "__init__.py")
        for name, path in modules.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_a_cycle_is_found() -> None:
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


def test_imports_inside_functions_and_relative_ones_count() -> None:
    known = {"zq", "zq.events", "zq.analytics", "zq.analytics.report", "zq.pooling"}
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from zq.pooling import Pools\n"
        "def f():\n    from zq import events\n"
        "def g():\n    from . import report\n"
    )
    assert imports_of("zq.analytics.charts", source, known) == {
        "zq.pooling", "zq.events", "zq.analytics.report"}


def test_zq_has_no_import_cycle() -> None:
    assert cycles(import_graph()) == []
