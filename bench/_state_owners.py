# SPDX-License-Identifier: Apache-2.0
"""Who writes whose state, and which in-package import cycles exist (issue 21).

Usage::

    .venv/bin/python bench/_state_owners.py [--src src/tocsin] [--package actor] [--json]

Two measures, by reading the source (AST), not by importing it:

* **Foreign writes**: every attribute assignment ``x.field = ...`` (also ``+=``, ``del``,
  and tuple targets) where ``x`` is not ``self``/``cls``, attributed to the class that
  declares ``field`` (in ``__slots__``, an annotated class body or ``self.field = ...`` in
  its methods). A write is *foreign* when it sits in another module than the class. A
  field name declared by several classes is ambiguous and counted under each candidate
  whose module differs from the writer's only when exactly one candidate exists in the
  package tree; otherwise it is reported as ``?field``.
* **Import cycles**: per package, the strongly connected components of the graph of
  imports between its own modules (``from . import x``, ``from ._x import y``, also under
  ``TYPE_CHECKING`` and inside functions), and how many modules sit in a cycle.

Prints a table per measure; ``--json`` prints one JSON line instead. The test
``tests/test_state_owners.py`` uses the same functions. Not run by ``bench/run_all.py``.
"""

from __future__ import annotations

import argparse
import ast
import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ForeignWrite", "cycles", "foreign_writes", "module_name"]


@dataclass(frozen=True, slots=True)
class ForeignWrite:
    """One assignment to a field of a class declared in another module."""

    cls: str  # "module:Class"
    field: str
    writer: str  # module that writes it
    line: int


def module_name(root: Path, path: Path) -> str:
    """``src/tocsin/actor/_cell.py`` -> ``tocsin.actor._cell`` (``root`` is src/tocsin)."""
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(root: Path) -> dict[str, ast.Module]:
    return {
        module_name(root, path): ast.parse(path.read_text(encoding="utf-8"), str(path))
        for path in sorted(root.rglob("*.py"))
    }


def _declared_fields(cls: ast.ClassDef) -> set[str]:
    fields: set[str] = set()
    for node in cls.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id == "__slots__":
                    value = node.value
                    if isinstance(value, ast.Tuple | ast.List):
                        fields.update(
                            e.value
                            for e in value.elts
                            if isinstance(e, ast.Constant) and isinstance(e.value, str)
                        )
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            fields.add(node.target.id)
    for node in ast.walk(cls):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store | ast.Del)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        ):
            fields.add(node.attr)
    return fields


def _immutable(cls: ast.ClassDef) -> bool:
    """A frozen dataclass, a NamedTuple, a msgspec Struct or an enum: no field of it can be
    assigned after construction, so it owns no writable state to count."""
    for deco in cls.decorator_list:
        if isinstance(deco, ast.Call) and any(
            k.arg == "frozen" and isinstance(k.value, ast.Constant) and k.value.value is True
            for k in deco.keywords
        ):
            return True
    bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in cls.bases}
    return bool(bases & {"NamedTuple", "Struct", "Enum", "IntEnum", "StrEnum"})


def _classes(modules: dict[str, ast.Module]) -> dict[str, set[str]]:
    """field name -> {"module:Class", ...} declaring it (mutable classes only)."""
    owners: dict[str, set[str]] = defaultdict(set)
    for mod, tree in modules.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and not _immutable(node):
                for field in _declared_fields(node):
                    owners[field].add(f"{mod}:{node.name}")
    return owners


def _annotation_name(node: ast.expr | None) -> str | None:
    """``Cell``, ``"Cell"``, ``Cell | None``, ``_cell.Cell`` -> ``Cell``."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(node, ast.BinOp):  # X | None
        return _annotation_name(node.left) or _annotation_name(node.right)
    if isinstance(node, ast.Name):
        return None if node.id == "None" else node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _store_targets(tree: ast.Module) -> list[tuple[ast.Attribute, str | None]]:
    """Attribute stores with the annotated class of their base name, when known (a
    parameter or a local annotated in the enclosing function)."""
    found: list[tuple[ast.Attribute, str | None]] = []

    def self_types(cls: ast.ClassDef) -> dict[str, str]:
        """``self.attr`` -> class name, from ``self.attr: T = ...`` / ``self.attr = T(...)``."""
        types: dict[str, str] = {}
        for sub in ast.walk(cls):
            target: ast.expr | None = None
            name: str | None = None
            if isinstance(sub, ast.AnnAssign):
                target, name = sub.target, _annotation_name(sub.annotation)
            elif isinstance(sub, ast.Assign) and len(sub.targets) == 1:
                target = sub.targets[0]
                if isinstance(sub.value, ast.Call):
                    name = _annotation_name(sub.value.func)
            if (
                name
                and isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
            ):
                types.setdefault(target.attr, name)
        return types

    def scan(body: ast.AST, names: dict[str, str], attrs: dict[str, str]) -> None:
        for node in ast.iter_child_nodes(body):
            if isinstance(node, ast.ClassDef):
                scan(node, names, self_types(node))
                continue
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                inner = dict(names)
                args = node.args
                for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                    name = _annotation_name(arg.annotation)
                    if name:
                        inner[arg.arg] = name
                for sub in ast.walk(node):
                    if isinstance(sub, ast.AnnAssign) and isinstance(sub.target, ast.Name):
                        name = _annotation_name(sub.annotation)
                        if name:
                            inner[sub.target.id] = name
                    elif (  # `ctx = self.ctx`: the local has the attribute's class
                        isinstance(sub, ast.Assign)
                        and len(sub.targets) == 1
                        and isinstance(sub.targets[0], ast.Name)
                        and isinstance(sub.value, ast.Attribute)
                        and isinstance(sub.value.value, ast.Name)
                        and sub.value.value.id == "self"
                        and sub.value.attr in attrs
                    ):
                        inner[sub.targets[0].id] = attrs[sub.value.attr]
                scan(node, inner, attrs)
                continue
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del):
                base = node.value
                found.append((node, names.get(base.id) if isinstance(base, ast.Name) else None))
            scan(node, names, attrs)

    scan(tree, {}, {})
    return found


def foreign_writes(root: Path) -> list[ForeignWrite]:
    """Assignments to another module's class fields, in the package tree at ``root``."""
    modules = _modules(root)
    owners = _classes(modules)
    found: list[ForeignWrite] = []
    for mod, tree in modules.items():
        for target, annotated in _store_targets(tree):
            base = target.value
            if isinstance(base, ast.Name) and base.id in ("self", "cls"):
                continue
            candidates = owners.get(target.attr, set())
            if annotated is not None:
                typed = {c for c in candidates if c.split(":")[1] == annotated}
                if typed or candidates:
                    # The base is annotated: a class of that name, or none of ours.
                    candidates = typed
            if not candidates:
                continue  # a field of a class outside the tree (a library's, a module's)
            if any(c.split(":")[0] == mod for c in candidates):
                continue  # a class of this module declares it: its own state
            cls = next(iter(candidates)) if len(candidates) == 1 else "?"
            found.append(ForeignWrite(cls, target.attr, mod, target.lineno))
    return found


def _imports(mod: str, tree: ast.Module, is_package: bool) -> set[str]:
    """Modules of the same tree this module imports (absolute names)."""
    package = mod if is_package else mod.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            base = package.split(".")
            if node.level > 1:
                base = base[: -(node.level - 1)]
            prefix = ".".join(base)
            target = f"{prefix}.{node.module}" if node.module else prefix
            if node.module:
                out.add(target)
            for alias in node.names:
                out.add(f"{target}.{alias.name}")  # `from . import _x` names a module
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tocsin"):
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("tocsin"))
    return out


def cycles(root: Path) -> dict[str, list[list[str]]]:
    """Per package (``tocsin.actor``, ...): its in-package import cycles (the strongly
    connected components of more than one module, or a module importing itself)."""
    modules = _modules(root)
    packages = {m for m in modules if (root.parent / m.replace(".", "/")).is_dir()}
    result: dict[str, list[list[str]]] = {}
    for package in sorted(packages):
        members = {m for m in modules if m.rpartition(".")[0] == package}
        graph = {
            m: sorted(d for d in _imports(m, modules[m], m in packages) if d in members and d != m)
            for m in members
        }
        result[package] = _scc(graph)
    return result


def _scc(graph: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one member."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp: list[str] = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=Path(__file__).parent.parent / "src/tocsin")
    parser.add_argument("--package", help="only classes/packages under tocsin.<package>")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--detail", action="store_true", help="list every foreign write")
    args = parser.parse_args()
    root: Path = args.src.resolve()
    prefix = f"tocsin.{args.package}" if args.package else "tocsin"
    writes = [
        w for w in foreign_writes(root) if w.cls.startswith(prefix) or w.writer.startswith(prefix)
    ]
    by_class: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for w in writes:
        by_class[w.cls][w.writer] += 1
    modules = _modules(root)
    cyc = {p: c for p, c in cycles(root).items() if p.startswith(prefix)}
    summary = {
        p: {
            "in_cycle": sum(len(c) for c in comps),
            "modules": sum(1 for m in modules if m.rpartition(".")[0] == p),
            "cycles": comps,
        }
        for p, comps in cyc.items()
    }
    if args.json:
        print(
            json.dumps(
                {"foreign_writes": {k: dict(v) for k, v in by_class.items()}, "cycles": summary}
            )
        )
        return
    print("foreign writes (class <- writer module: count)")
    for cls in sorted(by_class, key=lambda c: -sum(by_class[c].values())):
        total = sum(by_class[cls].values())
        writers = ", ".join(f"{m} {n}" for m, n in sorted(by_class[cls].items()))
        print(f"  {total:4d}  {cls}  <-  {writers}")
    print(f"  total {len(writes)}")
    if args.detail:
        for w in sorted(writes, key=lambda w: (w.writer, w.line)):
            print(f"    {w.writer}:{w.line}  {w.cls}.{w.field}")
    print("in-package import cycles (modules in a cycle / modules)")
    for package, info in summary.items():
        if info["in_cycle"]:
            print(f"  {package}: {info['in_cycle']}/{info['modules']}  {info['cycles']}")


if __name__ == "__main__":
    main()
