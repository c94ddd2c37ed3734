# SPDX-License-Identifier: Apache-2.0
"""``import tocsin`` loads no CLI and has no side effect (DESIGN.md "Layers", issue 21).

Each check runs in a fresh interpreter: this test process has long since imported the CLI,
the metrics and the console, so only a new process shows what ``import tocsin`` alone does.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Awaitable, Callable

import pytest

import tocsin
import tocsin.system
from tocsin.system import SERVICES, OptionalService


def _fresh(code: str) -> object:
    """Run ``code`` in a new interpreter; it prints one JSON value, returned here."""
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_import_tocsin_loads_no_cli_no_argparse_no_operators_view() -> None:
    loaded = _fresh(
        "import json, sys\nbefore = set(sys.modules)\nimport tocsin\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))"
    )
    assert isinstance(loaded, list)
    assert "tocsin.system" in loaded
    above_the_facade = (
        "tocsin.cli",
        "tocsin._run",
        "tocsin.metrics",
        "tocsin.console",
        "tocsin.testing",
    )
    assert [m for m in loaded if m.startswith(above_the_facade)] == []
    assert "argparse" not in loaded


def test_import_tocsin_registers_nothing() -> None:
    assert _fresh("import json, tocsin.system\nprint(json.dumps(tocsin.system.SERVICES))") == {}


def test_tocsin_run_is_loaded_on_first_use_and_is_the_supervisor_function() -> None:
    from tocsin._run import run

    assert tocsin.run is run
    assert "run" in dir(tocsin)
    namespace: dict[str, object] = {}
    exec("from tocsin import *", namespace)
    assert namespace["run"] is run
    assert _fresh(
        "import json, sys, tocsin\nbefore = 'tocsin._run' in sys.modules\n"
        "from tocsin import run\nprint(json.dumps([before, run.__module__]))"
    ) == [False, "tocsin._run._api"]


@pytest.mark.parametrize(
    "first",
    [
        "import tocsin._run._worker",
        "import tocsin._run",
        "from tocsin._run import run",
        "import tocsin.cli._run",
        "from tocsin.cli import main",
        "import tocsin",
    ],
)
def test_tocsin_run_stays_the_function_whatever_was_imported_first(first: str) -> None:
    # The package is ``_run``, not ``run``: importing a submodule ``tocsin.run`` would set
    # the attribute ``tocsin.run`` to that module and ``tocsin.run(...)`` would fail.
    assert _fresh(
        f"import json, inspect\n{first}\nimport tocsin\n"
        "print(json.dumps([inspect.isfunction(tocsin.run), tocsin.run.__name__]))"
    ) == [True, "run"]


def test_a_misspelt_attribute_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        tocsin.no_such_name  # type: ignore[attr-defined]  # noqa: B018


def test_the_console_service_is_registered_when_a_system_is_given_console() -> None:
    assert _fresh(
        "import json, tocsin, tocsin.system as s\n"
        "tocsin.ActorSystem(console='127.0.0.1:0')\n"
        "from tocsin.metrics._console import CONSOLE_SERVICE\n"
        "print(json.dumps([list(s.SERVICES), s.SERVICES['console'] is CONSOLE_SERVICE]))"
    ) == [["console"], True]


def test_a_service_registered_first_is_used_instead_of_the_built_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    checked: list[tuple[object, str | None]] = []

    def check(value: object, token: str | None) -> None:
        checked.append((value, token))

    async def start(
        system: tocsin.ActorSystem, value: object, token: str | None
    ) -> Callable[[], Awaitable[None]]:
        raise AssertionError("never started: this system is never started")

    monkeypatch.setitem(SERVICES, "console", OptionalService(check=check, start=start))
    tocsin.ActorSystem(console="anything", console_token="t")
    assert checked == [("anything", "t")]
