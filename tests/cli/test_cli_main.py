# SPDX-License-Identifier: Apache-2.0
"""The ``tocsin`` entry points as a user runs them: real processes, real exit codes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

#: Left out of `make check` (real processes); `make test` runs it.
pytestmark = pytest.mark.slow


def _tocsin(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tocsin", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=cwd,
    )


def test_python_dash_m_tocsin_runs_the_command() -> None:
    proc = _tocsin("cron", "next", "0 9 * * 1-5", "--tz", "UTC", "--count", "1")
    assert proc.returncode == 0, proc.stderr
    assert "(Unix cron)" in proc.stdout
    assert _tocsin("--version").stdout.startswith("tocsin ")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("cron", "next", "@daily", "--tz", "Mars/Olympus"), "--tz must be an IANA time zone"),
        (("cron", "next", "@daily", "--tz", ""), "--tz must be an IANA time zone"),
        (("demo", "--store", "bogus"), "store URL 'bogus' has no scheme"),
        (("demo", "--store", "sqlite:///no/such/dir/x.db"), "does not exist"),
        (("demo", "--store", "sqlite:///."), "is a directory"),
        (("tasks", "list", "--store", "sqlite:///no/such/dir/x.db"), "does not exist"),
        (("tasks", "list", "--store", "sqlite:///missing.db"), "no such file"),
    ],
)
def test_cli_errors_are_one_clean_line_on_stderr_with_exit_2(
    tmp_path: Path, argv: tuple[str, ...], message: str
) -> None:
    proc = _tocsin(*argv, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert message in proc.stderr
    assert list(tmp_path.iterdir()) == []  # nothing created
