# SPDX-License-Identifier: Apache-2.0
"""The import surface of a tocsin tree (issue 21): what the layers reach and what
``import tocsin`` costs.

Usage::

    .venv/bin/python bench/_import_surface.py [--tree .] [--repeats 15] [--list]

Prints, for the tree's ``src/tocsin``:

- the ``import`` statements that name another package's private module (``..actor._cell``,
  ``tocsin.stores._sqlite_engine``), every form (TYPE_CHECKING and function-local included),
  per target module, with those of a package's ``_spi`` counted apart (that is its face
  for the layers above, DESIGN.md "Layers");
- the modules a fresh ``import tocsin`` loads (all, tocsin's own, the CLI's, argparse);
- the cumulative ``-X importtime`` of ``tocsin`` over fresh processes (min, median, max;
  the machine's noise is in the spread, so compare medians of one run).

The last line is JSON. Not run by ``bench/run_all.py`` (the leading underscore).
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

_LOADED = """
import sys
before = set(sys.modules)
import tocsin
new = sorted(set(sys.modules) - before)
print(repr(new))
"""


def _targets(node: ast.AST, package: list[str]) -> list[list[str]]:
    """Dotted parts (below ``tocsin``) of each module an import node names."""
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = package[: len(package) - (node.level - 1)]
            if node.module is None:  # from .. import a, b: each name may be a module
                return [[*base, alias.name] for alias in node.names]
            return [base + node.module.split(".")]
        if node.module and node.module.split(".")[0] == "tocsin":
            return [node.module.split(".")[1:]]
    elif isinstance(node, ast.Import):
        return [a.name.split(".")[1:] for a in node.names if a.name.startswith("tocsin.")]
    return []


def private_imports(src: Path) -> list[tuple[str, int, str]]:
    """(file, line, target) of every import of another package's private module."""
    found: list[tuple[str, int, str]] = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src)
        here = rel.parts[0].removesuffix(".py")
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for target in _targets(node, list(rel.parts[:-1])):
                if len(target) < 2 or target[0] == here:
                    continue
                if any(p.startswith("_") and not p.startswith("__") for p in target[1:]):
                    found.append((str(rel), getattr(node, "lineno", 0), ".".join(target)))
    return found


def _env(tree: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree / "src")
    return env


def loaded_modules(tree: Path) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", _LOADED], env=_env(tree), capture_output=True, text=True, check=True
    ).stdout
    modules: list[str] = ast.literal_eval(out.strip().splitlines()[-1])
    return modules


def import_times_us(tree: Path, repeats: int) -> list[int]:
    times: list[int] = []
    for _ in range(repeats):
        err = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", "import tocsin"],
            env=_env(tree),
            capture_output=True,
            text=True,
            check=True,
        ).stderr
        last = [line for line in err.splitlines() if line.rstrip().endswith("| tocsin")][-1]
        times.append(int(last.split("|")[1]))
    return sorted(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--list", action="store_true", help="print each private import")
    args = parser.parse_args()
    tree: Path = args.tree.resolve()
    found = private_imports(tree / "src" / "tocsin")
    spi = [f for f in found if f[2].endswith("._spi")]
    other = [f for f in found if not f[2].endswith("._spi")]
    per = collections.Counter(target for _, _, target in other)
    print(f"private-module imports across packages: {len(other)} (+ {len(spi)} of a _spi)")
    for target, count in per.most_common():
        print(f"  {count:3d} {target}")
    if args.list:
        for file, line, target in other:
            print(f"  {file}:{line}: {target}")
    modules = loaded_modules(tree)
    own = [m for m in modules if m == "tocsin" or m.startswith("tocsin.")]
    cli = [m for m in own if m == "tocsin.cli" or m.startswith("tocsin.cli.")]
    total = len(list((tree / "src" / "tocsin").rglob("*.py")))
    print(
        f"import tocsin loads {len(modules)} modules: {len(own)} of tocsin's {total},"
        f" {len(cli)} of the CLI, argparse {'yes' if 'argparse' in modules else 'no'}"
    )
    times = import_times_us(tree, args.repeats)
    print(
        f"import tocsin (-X importtime, {args.repeats} processes): min {times[0] / 1000:.1f} ms,"
        f" median {statistics.median(times) / 1000:.1f} ms, max {times[-1] / 1000:.1f} ms"
    )
    result: dict[str, Any] = {
        "private_imports": len(other),
        "spi_imports": len(spi),
        "private_imports_by_target": dict(per),
        "modules_loaded": len(modules),
        "tocsin_modules_loaded": len(own),
        "tocsin_modules": total,
        "cli_modules_loaded": len(cli),
        "argparse_loaded": "argparse" in modules,
        "import_time_us": {"min": times[0], "median": statistics.median(times), "max": times[-1]},
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
