# SPDX-License-Identifier: Apache-2.0
"""The public surface: ``__all__`` is sorted, complete and importable; errors share a root."""

from __future__ import annotations

import importlib
import inspect
import types
from pathlib import Path
from typing import Any

import pytest

import tocsin
import tocsin.errors

SRC = Path(tocsin.__file__).parent

#: Every public package (an ``__init__.py`` whose path has no ``_`` part), found on disk,
#: so a new package is covered without editing this file.
PACKAGES = sorted(
    "tocsin" + "".join(f".{part}" for part in init.parent.relative_to(SRC).parts)
    for init in SRC.rglob("__init__.py")
    if not any(part.startswith("_") for part in init.parent.relative_to(SRC).parts)
)
#: ... plus the public modules that define an ``__all__``.
PUBLIC_PACKAGES = [*PACKAGES, "tocsin.errors", "tocsin.clock", "tocsin.system"]


def isort_key(name: str) -> tuple[int, str]:
    """The order ruff's RUF022 keeps: CONSTANTS, then Classes, then functions."""
    if name.isupper():
        return (0, name)
    if name[0].isupper():
        return (1, name)
    return (2, name)


def public_names(module: types.ModuleType) -> set[str]:
    """Names a user can reach without an underscore, minus submodules and ``__future__``."""
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and name != "annotations"  # from __future__ import annotations
    }


@pytest.mark.parametrize("package", PUBLIC_PACKAGES)
def test_all_is_sorted(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__ == sorted(module.__all__, key=isort_key)
    assert len(set(module.__all__)) == len(module.__all__)


#: Packages whose ``__init__`` holds re-exports only: ``__all__`` is exactly what is public.
#: (``tocsin.cli`` and ``tocsin.testing`` define functions there, with their imports.)
REEXPORTING = [p for p in PACKAGES if p not in ("tocsin.cli", "tocsin.testing")]


def test_every_package_on_disk_is_covered() -> None:
    assert {"tocsin", "tocsin.actor", "tocsin.cron", "tocsin.durable"} <= set(PACKAGES)
    assert {"tocsin.scheduling", "tocsin.stores", "tocsin.cli"} <= set(PACKAGES)


#: Names a package loads on first use (its module ``__getattr__``), so they are in its
#: namespace only once read: ``tocsin.run`` (the CLI layer, kept out of ``import tocsin``).
LAZY = {"tocsin": {"run"}}


@pytest.mark.parametrize("package", REEXPORTING)
def test_all_equals_the_public_names_defined_or_re_exported(package: str) -> None:
    module = importlib.import_module(package)
    assert set(module.__all__) == public_names(module) | LAZY.get(package, set())


@pytest.mark.parametrize("package", PUBLIC_PACKAGES)
def test_every_name_in_all_is_importable(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        namespace: dict[str, object] = {}
        exec(f"from {package} import {name}", namespace)
        assert namespace[name] is getattr(module, name)


def test_the_version_has_one_home_that_the_build_reads() -> None:
    """``tocsin/_version.py`` is the one place (pyproject's version is dynamic, read from it):
    the package, the CLI's ``--version`` and the installed metadata agree."""
    import importlib.metadata

    import tocsin._version

    assert tocsin.__version__ == tocsin._version.__version__
    assert importlib.metadata.version("tocsin") == tocsin.__version__


def test_the_actor_runtime_names_of_the_contract_are_exported() -> None:
    for name in [
        "ActorSystem", "Actor", "PID", "ReceiveContext", "NoSender", "Directive", "Supervisor",
        "DeadLetter", "DeadLetterReason", "ActorStarted", "ActorStopped", "ActorRestarted",
        "ActorSuspended", "ActorReinstated", "ActorPassivated", "ManualClock", "SystemClock",
        "Clock",
    ]:  # fmt: skip
        assert name in tocsin.__all__, name


#: ``tocsin.cluster`` exports what docs/cluster.md shows (#21); its machinery (membership,
#: placement, tick claims, the coordinator's records) stays importable from its private
#: modules, and the layers above take theirs from ``tocsin.cluster._spi``.
CLUSTER_PUBLIC = [
    "Cluster", "ClusterMetrics", "ClusterNode", "ClusterView", "Coordinator", "LeaseLost",
    "LeaseRegained",
    "Member", "NodeJoined", "NodeLeft", "open_coordinator",
]  # fmt: skip


def test_the_cluster_exports_what_its_docs_show_and_no_more() -> None:
    import tocsin.cluster

    assert tocsin.cluster.__all__ == CLUSTER_PUBLIC
    page = (SRC.parents[1] / "docs" / "cluster.md").read_text(encoding="utf-8")
    for name in CLUSTER_PUBLIC:
        assert f"`{name}" in page, f"{name} is exported but docs/cluster.md does not show it"


def test_the_cluster_machinery_stays_importable_from_its_private_modules() -> None:
    import tocsin.cluster
    from tocsin.cluster._membership import Membership
    from tocsin.cluster._placement import Directory, Placement, rendezvous_owner
    from tocsin.cluster._protocol import ClaimOutcome, LeaseRow, Ownership
    from tocsin.cluster._single_fire import CronClaims, claim_ttl, tick_key

    value: Any
    for value in [Membership, Directory, Placement, rendezvous_owner, ClaimOutcome, LeaseRow,
                  Ownership, CronClaims, claim_ttl, tick_key]:  # fmt: skip
        assert not hasattr(tocsin.cluster, value.__name__), value


def test_every_error_subclasses_tocsin_error_and_is_exported() -> None:
    errors = [
        value
        for name, value in vars(tocsin.errors).items()
        if inspect.isclass(value) and issubclass(value, BaseException) and not name.startswith("_")
    ]
    assert {e.__name__ for e in errors} == set(tocsin.errors.__all__)
    for error in errors:
        assert issubclass(error, tocsin.TocsinError), error
        assert error.__name__ in tocsin.__all__
        assert getattr(tocsin, error.__name__) is error
        assert error.__doc__, f"{error.__name__} needs a docstring saying when it is raised"


def test_the_run_usage_error_is_a_tocsin_error_and_still_a_value_error() -> None:
    """``tocsin.run(...)``'s bad-argument error: ``except TocsinError`` catches it (#21)."""
    from tocsin._run._errors import RunUsageError

    assert issubclass(RunUsageError, tocsin.TocsinError)
    assert issubclass(RunUsageError, ValueError)
    with pytest.raises(tocsin.TocsinError, match="cannot import 'no_such_tocsin_app'"):
        tocsin.run("no_such_tocsin_app:main")


def test_errors_also_subclass_the_builtin_they_resemble() -> None:
    assert issubclass(tocsin.AskTimeoutError, TimeoutError)
    assert issubclass(tocsin.ActorSystemNotStartedError, RuntimeError)
    assert issubclass(tocsin.ActorNameTakenError, ValueError)
    assert issubclass(tocsin.ActorNotFoundError, LookupError)
    assert issubclass(tocsin.ActorSuspendedError, tocsin.DeadActorError)
    assert issubclass(tocsin.InvalidIntervalError, ValueError)
