# SPDX-License-Identifier: Apache-2.0
"""Imports point one way (DESIGN.md "Layers", STYLE.md rule 4), checked on the source.

Every ``import``/``from ... import`` in ``src/tocsin`` is read with :mod:`ast`, wherever it
sits (module level, under ``TYPE_CHECKING``, inside a function), and its target layer must
not be above the importing module's layer. Outside the kernel (``actor/``) and the facade
(``system.py``) no code may reach into the system's private attributes (``system._x``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "tocsin"

#: Bottom up. A module may import its own layer and the ones before it.
LAYERS = [
    # A leaf (it imports nothing), so every layer may read the version from it.
    "_version",
    "errors",
    "clock",
    "cron",
    "_codec",
    "_deadlines",
    "actor",
    "scheduling",
    "stores",
    "durable",
    "remote",
    "cluster",
    "system",
    # The console sits below the metrics layer: tocsin.metrics.serve_console (what
    # ActorSystem(console=...) starts) serves the console with /metrics; the console
    # knows nothing of metrics (the order of /work/shared/tools/layers.py).
    "console",
    "metrics",
    "cli",
    "testing",
    "__init__",
    "__main__",
]
KERNEL_AND_FACADE = {"actor", "system"}
_REACH = re.compile(r"\bsystem\._[a-z]\w*")


def _layer(parts: tuple[str, ...]) -> str:
    head = parts[0]
    return head[:-3] if head.endswith(".py") else head


def _imported_layers(module: Path, root: Path = SRC) -> list[tuple[int, str]]:
    """(line, layer) of every tocsin module that ``module`` (under ``root``) imports."""
    rel = module.relative_to(root)
    package = list(rel.parts[:-1])
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(module.read_text(), str(module))):
        targets: list[list[str]] = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                names = (node.module or "").split(".") if node.module else []
                targets.append(base + names or [alias.name for alias in node.names])
            elif node.module and node.module.split(".")[0] == "tocsin":
                targets.append(node.module.split(".")[1:] or ["__init__"])
        elif isinstance(node, ast.Import):
            targets += [a.name.split(".")[1:] for a in node.names if a.name.startswith("tocsin.")]
        found += [(node.lineno, t[0].removesuffix(".py")) for t in targets if t]
    return found


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_every_package_has_a_layer() -> None:
    unknown = {_layer(m.relative_to(SRC).parts) for m in _modules()} - set(LAYERS)
    assert not unknown, f"add these to LAYERS (and DESIGN.md) in their place: {unknown}"


@pytest.mark.parametrize("module", _modules(), ids=lambda m: str(m.relative_to(SRC)))
def test_no_module_imports_a_layer_above_its_own(module: Path) -> None:
    here = _layer(module.relative_to(SRC).parts)
    upward = [
        f"{module.relative_to(SRC)}:{line} imports {there} (above {here})"
        for line, there in _imported_layers(module)
        if there in LAYERS and LAYERS.index(there) > LAYERS.index(here)
    ]
    assert not upward


@pytest.mark.parametrize("module", _modules(), ids=lambda m: str(m.relative_to(SRC)))
def test_only_the_kernel_and_the_facade_reach_into_the_system(module: Path) -> None:
    if _layer(module.relative_to(SRC).parts) in KERNEL_AND_FACADE:
        return
    assert not _REACH.findall(module.read_text())


def test_the_check_sees_an_upward_import_under_type_checking_and_in_a_function(
    tmp_path: Path,
) -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ..durable import DurableActor\n"
        "def f():\n    from tocsin.system import ActorSystem\n"
    )
    fake = tmp_path / "actor" / "_probe.py"
    fake.parent.mkdir()
    fake.write_text(source)
    assert [layer for _, layer in _imported_layers(fake, tmp_path)] == ["durable", "system"]
