# SPDX-License-Identifier: Apache-2.0
"""Imports point one way (DESIGN.md "Layers", STYLE.md rule 4), checked on the source.

Every ``import``/``from ... import`` in ``src/tocsin`` is read with :mod:`ast`, wherever it
sits (module level, under ``TYPE_CHECKING``, inside a function), and resolved to the module
it loads: ``from .. import X`` is the module ``X`` when ``X`` is one on disk and the
package root (``__init__``, the top layer) when it is a name, so ``from .. import
__version__`` is an upward import (the blind spot of the first version of this check).
Then:

- its layer must not be above the importing module's layer;
- it must not be another package's private module (``..actor._cell``): a package's faces
  are its ``__init__`` (for users) and its ``_spi`` (for the layers above it);
- outside the kernel (``actor/``) and the facade (``system.py``) no code may reach into
  the system's private attributes (``system._x``).

The checker is tested too: each rule on a planted violation in a synthetic tree.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "tocsin"

#: Bottom up. A module may import its own layer and the ones before it.
LAYERS = [
    # A leaf (it imports nothing), so every layer may read the version from it.
    "_version",
    # A leaf too: keyword-only options with a release of grace for positional use.
    "_keywords",
    # A leaf too: `async with` for the system, the client and the console.
    "_resource",
    "errors",
    # Leaf: what the event loop is doing (a ManualClock's idleness, real I/O in flight);
    # the stores and coordinators mark their calls with it.
    "_idle",
    "clock",
    "cron",
    "_codec",
    "_deadlines",
    # The policy engine: pure values and decisions every tier shares (no asyncio, no
    # store); above _deadlines for `to_seconds`, below the kernel that carries its values.
    "triggers",
    "actor",
    "scheduling",
    "stores",
    "durable",
    "remote",
    "cluster",
    # Jobs: plain functions run as durable tasks (one durable kind per job), enqueued
    # from a system or a Client; below the facade, which offers ``system.jobs``.
    "jobs",
    # Stored schedules: above the cluster (they claim through its cron claims) and jobs
    # (a job target is found in the job registry), below
    # the facade that starts them.
    "schedules",
    "system",
    # A producer-only process (tocsin.Client): the store and jobs, beside the facade.
    "_client",
    # The console sits below the metrics layer: tocsin.metrics.serve_console (what
    # ActorSystem(console=...) starts) serves the console with /metrics; the console
    # knows nothing of metrics (the order of /work/shared/tools/layers.py).
    "console",
    "metrics",
    # The process supervisor behind tocsin.run, over the facade; private (``_run``, not
    # ``run``) so that importing it never rebinds the function tocsin.run (issue 21).
    "_run",
    # argparse only: ``tocsin run`` parses its options into tocsin._run's calls.
    "cli",
    "testing",
    "__init__",
    "__main__",
]
KERNEL_AND_FACADE = {"actor", "system"}
_REACH = re.compile(r"\bsystem\._[a-z]\w*")

#: The one face of a package for the layers above it, besides its ``__init__``.
SPI = "_spi"

#: (importing file, imported private module) pairs allowed, each with its reason.
#: None since tocsin.run left cli/ for tocsin._run (issue 21): the package root loads it
#: on first use from that package's ``__init__``.
PRIVATE_ALLOWED: dict[tuple[str, str], str] = {}


@dataclass(frozen=True, slots=True)
class Import:
    """One module an import statement loads: its line and dotted parts below ``tocsin``."""

    line: int
    target: tuple[str, ...]

    @property
    def layer(self) -> str:
        return self.target[0]

    @property
    def dotted(self) -> str:
        return ".".join(self.target)


def _layer(parts: tuple[str, ...]) -> str:
    head = parts[0]
    return head[:-3] if head.endswith(".py") else head


def _is_module(root: Path, parts: list[str]) -> bool:
    """Whether ``parts`` (below ``tocsin``) name a module or package under ``root``."""
    path = root.joinpath(*parts)
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _from_names(root: Path, base: list[str], names: list[str]) -> list[tuple[str, ...]]:
    """``from <base> import a, b``: each name that is a module is that module, the
    others are names of ``base`` itself (the package root is ``__init__``)."""
    of_base = tuple(base) if base else ("__init__",)
    found = [(*base, n) if _is_module(root, [*base, n]) else of_base for n in names]
    return list(dict.fromkeys(found))


def _imports(module: Path, root: Path = SRC) -> list[Import]:
    """Every tocsin module that ``module`` (a file under ``root``) imports, in any form."""
    rel = module.relative_to(root)
    package = list(rel.parts[:-1])
    found: list[Import] = []
    for node in ast.walk(ast.parse(module.read_text(), str(module))):
        if not isinstance(node, ast.ImportFrom | ast.Import):
            continue
        targets: list[tuple[str, ...]] = []
        if isinstance(node, ast.ImportFrom):
            names = [alias.name for alias in node.names if alias.name != "*"]
            if node.level:
                if node.level - 1 > len(package):
                    raise ValueError(f"{rel}:{node.lineno}: relative import beyond tocsin")
                base = package[: len(package) - (node.level - 1)]
                base += node.module.split(".") if node.module else []
            elif node.module and node.module.split(".")[0] == "tocsin":
                base = node.module.split(".")[1:]
            else:
                continue
            targets += _from_names(root, base, names) if names else [tuple(base) or ("__init__",)]
        else:
            for alias in node.names:
                if alias.name == "tocsin":
                    targets.append(("__init__",))
                elif alias.name.startswith("tocsin."):
                    targets.append(tuple(alias.name.split(".")[1:]))
        found += [Import(node.lineno, t) for t in targets]
    return found


def _imported_layers(module: Path, root: Path = SRC) -> list[tuple[int, str]]:
    """(line, layer) of every tocsin module that ``module`` (under ``root``) imports."""
    return [(imp.line, imp.layer) for imp in _imports(module, root)]


def upward_imports(module: Path, root: Path = SRC) -> list[str]:
    rel = module.relative_to(root)
    here = _layer(rel.parts)
    return [
        f"{rel}:{imp.line} imports {imp.dotted} (layer {imp.layer}, above {here})"
        for imp in _imports(module, root)
        if imp.layer in LAYERS and LAYERS.index(imp.layer) > LAYERS.index(here)
    ]


def private_imports(module: Path, root: Path = SRC) -> list[str]:
    """Imports of another package's private module other than its ``_spi``."""
    rel = module.relative_to(root)
    here = _layer(rel.parts)
    bad = []
    for imp in _imports(module, root):
        inner = imp.target[1:]
        if imp.layer == here or not inner or inner == (SPI,):
            continue
        private = any(p.startswith("_") and not p.startswith("__") for p in inner)
        if private and (rel.as_posix(), imp.dotted) not in PRIVATE_ALLOWED:
            bad.append(f"{rel}:{imp.line} imports {imp.dotted}, private to {imp.layer}/")
    return bad


def _modules(root: Path = SRC) -> list[Path]:
    return sorted(root.rglob("*.py"))


def test_every_package_has_a_layer() -> None:
    unknown = {_layer(m.relative_to(SRC).parts) for m in _modules()} - set(LAYERS)
    assert not unknown, f"add these to LAYERS (and DESIGN.md) in their place: {unknown}"


@pytest.mark.parametrize("module", _modules(), ids=lambda m: str(m.relative_to(SRC)))
def test_no_module_imports_a_layer_above_its_own(module: Path) -> None:
    assert not upward_imports(module)


@pytest.mark.parametrize("module", _modules(), ids=lambda m: str(m.relative_to(SRC)))
def test_no_module_imports_another_packages_private_module(module: Path) -> None:
    assert not private_imports(module)


def test_each_allowed_private_import_is_still_there() -> None:
    """An allowance outlives its import only by mistake: remove it with the import."""
    for file, dotted in PRIVATE_ALLOWED:
        imports = [imp.dotted for imp in _imports(SRC / file)]
        assert dotted in imports, f"{file} no longer imports {dotted}: drop the allowance"


@pytest.mark.parametrize("module", _modules(), ids=lambda m: str(m.relative_to(SRC)))
def test_only_the_kernel_and_the_facade_reach_into_the_system(module: Path) -> None:
    if _layer(module.relative_to(SRC).parts) in KERNEL_AND_FACADE:
        return
    assert not _REACH.findall(module.read_text())


# --- The checker itself, on synthetic trees -------------------------------------------


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    """A fake ``tocsin`` under ``tmp_path``: the given files, plus an empty module for
    every package of ``LAYERS`` (so ``from .. import cli`` finds a module)."""
    root = tmp_path / "tocsin"
    for name in LAYERS:
        if name not in ("__init__", "__main__"):
            (root / name).mkdir(parents=True, exist_ok=True)
            (root / name / "__init__.py").write_text("")
    (root / "__init__.py").write_text("__version__ = '0'\n")
    for rel, source in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(source)
    return root


def test_the_check_sees_an_upward_import_under_type_checking_and_in_a_function(
    tmp_path: Path,
) -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ..durable import DurableActor\n"
        "def f():\n    from tocsin.system import ActorSystem\n"
    )
    root = _tree(tmp_path, {"actor/_probe.py": source})
    assert [layer for _, layer in _imported_layers(root / "actor/_probe.py", root)] == [
        "durable",
        "system",
    ]


@pytest.mark.parametrize(
    ("file", "source", "above"),
    [
        # The blind spot: a name from the package root is the root's layer, the top one.
        ("cli/__init__.py", "from .. import __version__\n", "__init__"),
        ("metrics/_otel.py", "def f():\n    from .. import __version__\n", "__init__"),
        ("actor/_cell.py", "from tocsin import ActorSystem\n", "__init__"),
        ("actor/_cell.py", "import tocsin\n", "__init__"),
        ("actor/_cell.py", "from .. import run\n", "__init__"),
        # A submodule named in the import list is that module's layer.
        ("actor/_cell.py", "from .. import durable\n", "durable"),
        ("actor/_cell.py", "from tocsin import cli\n", "cli"),
        ("system.py", "from . import cli\n", "cli"),
        ("system.py", "from . import run\n", "__init__"),
        # The supervisor is below the command line: cli/ may import _run/, not the reverse.
        ("_run/_worker.py", "from ..cli import main\n", "cli"),
        ("system.py", "from ._run import run\n", "_run"),
        ("actor/_cell.py", "import tocsin.remote._service as s\n", "remote"),
        ("actor/_cell.py", "from ..scheduling import _scheduler\n", "scheduling"),
        ("stores/sqlite.py", "from ..durable._spi import Claim\n", "durable"),
    ],
)
def test_the_check_fails_on_an_upward_import_in_any_form(
    tmp_path: Path, file: str, source: str, above: str
) -> None:
    root = _tree(tmp_path, {file: source})
    found = upward_imports(root / file, root)
    assert len(found) == 1, found
    assert f"(layer {above}, above " in found[0]


@pytest.mark.parametrize(
    "source",
    [
        "from .. import errors, clock\n",
        "from ..actor import PID\n",
        "from ..actor._spi import Cell\n",
        "from . import _scheduler\n",
        "from ._scheduler import Scheduler\n",
        "from .._version import __version__\n",
        "import tocsin.actor\n",
        "import asyncio\nfrom collections import abc\n",
    ],
)
def test_the_check_passes_a_downward_or_sideways_import(tmp_path: Path, source: str) -> None:
    root = _tree(tmp_path, {"scheduling/_probe.py": source, "scheduling/_scheduler.py": ""})
    probe = root / "scheduling/_probe.py"
    assert upward_imports(probe, root) == []
    assert private_imports(probe, root) == []


@pytest.mark.parametrize(
    "source",
    [
        "from ..actor._cell import Cell\n",
        "from ..actor import _cell\n",
        "from tocsin.actor._cell import Cell\n",
        "import tocsin.actor._cell\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..actor._cell import Cell\n",
        "def f():\n    from ..actor._cell import Cell\n",
        "from ..actor._cell.inner import x\n",
    ],
)
def test_the_check_fails_on_another_packages_private_module(tmp_path: Path, source: str) -> None:
    root = _tree(tmp_path, {"durable/_probe.py": source, "actor/_cell.py": ""})
    found = private_imports(root / "durable/_probe.py", root)
    assert len(found) == 1, found
    assert "private to actor/" in found[0]


def test_the_check_allows_a_packages_own_private_modules_and_its_spi(tmp_path: Path) -> None:
    source = "from ._run import x\nfrom . import _drain\nfrom ..actor._spi import Cell\n"
    root = _tree(tmp_path, {"durable/_probe.py": source, "durable/_drain.py": ""})
    assert private_imports(root / "durable/_probe.py", root) == []
    # ... but not a module *under* another package's _spi, nor a private one beside it.
    root = _tree(tmp_path, {"durable/_probe.py": "from ..actor._spi._x import y\n"})
    assert len(private_imports(root / "durable/_probe.py", root)) == 1
