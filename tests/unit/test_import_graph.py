"""zq's modules import one another without a circle, and never back up a layer.

The graph is read from the source with ``ast``: every ``import`` and
``from ... import`` anywhere in a module (module level, inside functions,
under ``TYPE_CHECKING``), so a cycle hidden behind a function-level import
counts as one. An edge goes to the most specific zq module named
(``from zq import events`` -> zq.events; ``from zq.pooling import Pools`` ->
zq.pooling).

The layers are FLOORS, top first (docs/architecture.md draws them): a
module imports from its own floor or the ones below it, never from one
above. An import under ``if TYPE_CHECKING:`` names a type only, runs
nothing, and is left out of the layer check (not out of the cycle check).
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


def import_graph(*, typing_only: bool = True) -> dict[str, set[str]]:
    """Every zq module's zq imports; without ``typing_only``, those that run."""
    modules = module_names()
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        if not typing_only:
            tree.body = [node for node in tree.body if not _is_type_checking(node)]
        graph[name] = imports_of(name, ast.unparse(tree), set(modules),
                                 is_package=path.name == "__init__.py")
    return graph


def _is_type_checking(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in (
        "TYPE_CHECKING", "typing.TYPE_CHECKING")


# Top first. A module belongs to the floor of the longest prefix that names it.
FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("command line", ("zq.__main__", "zq.cli", "zq.commands", "zq.analytics.cli")),
    ("server", ("zq.server", "zq.buffered_wsgi")),
    ("start-up", ("zq.startup",)),
    ("HTTP and background work", ("zq.api", "zq.auth", "zq.console", "zq.notifications",
                                  "zq.metrics", "zq.analytics", "zq.housekeeping",
                                  "zq.waiting")),
    ("service rules", ("zq.service", "zq.subscriptions", "zq.metadata")),
    ("pooling", ("zq.pooling",)),
    ("storage contract and drivers", ("zq.storage",)),
    ("rules: the poison workflow, client input, queue filters, notification policy", (
        "zq.poison", "zq.validation", "zq.queue_filter", "zq.retry_policy", "zq.subscribers")),
    ("storage records", ("zq.storage.records",)),
    ("base", ("zq", "zq.errors", "zq.clock", "zq.config", "zq.logs", "zq.events",
              "zq.encryption", "zq.allowed_hosts", "zq.bounded_memo")),
    # The Python client stands alone: it imports nothing of the server.
    ("client library", ("zq.client",)),
)


def floor_of(module: str) -> int:
    """The index in FLOORS of ``module``'s floor (0 is the top)."""
    best, found = -1, None
    for index, (_, prefixes) in enumerate(FLOORS):
        for prefix in prefixes:
            # "zq" names the package itself only: a new module must be given a floor.
            inside = prefix != "zq" and module.startswith(prefix + ".")
            if (module == prefix or inside) and len(prefix) > best:
                best, found = len(prefix), index
    assert found is not None, f"{module} is on no floor: add it to FLOORS"
    return found


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Each import that runs from a floor up to a floor above it."""
    return sorted(
        f"{module} ({FLOORS[floor_of(module)][0]}) -> {target} ({FLOORS[floor_of(target)][0]})"
        for module, targets in graph.items() for target in targets
        if floor_of(target) < floor_of(module)
    )


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


def test_an_upward_import_is_found() -> None:
    assert upward_imports({"zq.server": {"zq.commands.options", "zq.config"}}) == [
        "zq.server (server) -> zq.commands.options (command line)"]


def test_every_module_is_on_a_floor() -> None:
    for module in import_graph():
        floor_of(module)


def test_no_import_runs_back_up_a_layer() -> None:
    assert upward_imports(import_graph(typing_only=False)) == []
