# SPDX-License-Identifier: Apache-2.0
"""The durable package's import graph: no cycle, and ``DurableActor`` on top.

Every intra-package import counts, including those under ``TYPE_CHECKING`` and inside
functions (a cycle closed only for the type checker is still a cycle a reader must
untangle). Before the handle was split by its owners, ``_actor``, ``_handle``,
``_runtime``, ``_storage`` and ``_tasks`` formed one five-module cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tocsin.durable

PACKAGE = Path(tocsin.durable.__file__).parent


def _graph() -> dict[str, set[str]]:
    modules = {path.stem for path in PACKAGE.glob("*.py")}
    edges: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.glob("*.py")):
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module:
                    found.add(node.module.split(".")[0])
                else:
                    found.update(alias.name for alias in node.names)
        edges[path.stem] = found & modules
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
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
        for other in sorted(edges[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_the_durable_package_has_no_import_cycle() -> None:
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(edges) == [["a", "b", "c"]]


def test_durable_actor_sits_on_top_of_the_package() -> None:
    importers = sorted(name for name, imported in _graph().items() if "_actor" in imported)
    assert importers == ["__init__"]
