# SPDX-License-Identifier: Apache-2.0
"""Store and coordinator URLs from a flag, a file or the environment, so that no
password needs to be on a command line (``ps`` shows it to every local user)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from tocsin.cli import main
from tocsin.stores.sqlite import SQLiteStore

SECRET = "hunter2-s3cr3t"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "tasks.db"

    async def create() -> None:
        store = SQLiteStore(path)
        await store.open()
        await store.close()

    asyncio.run(create())
    return path


def url_file(tmp_path: Path, url: str, mode: int = 0o600) -> Path:
    path = tmp_path / "store.url"
    path.write_text(f"\n  {url}  \n")
    path.chmod(mode)
    return path


def test_tasks_reads_the_store_url_from_a_file(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = url_file(tmp_path, f"sqlite:///{db}", mode=0o644)  # no password: may be shared
    assert main(["tasks", "list", "--store-file", str(path)]) == 0
    assert "no tasks" in capsys.readouterr().out.lower()


def test_a_file_wins_over_the_environment_and_a_flag_with_a_file_is_refused(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TOCSIN_STORE", "postgressql://nowhere")  # would fail if read
    path = url_file(tmp_path, f"sqlite:///{db}")
    assert main(["tasks", "list", "--store-file", str(path)]) == 0
    capsys.readouterr()
    assert main(["tasks", "list", "--store-file", str(path), "--store", f"sqlite:///{db}"]) == 2
    assert "--store and --store-file were both given" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["tasks", "list"],
        ["console"],
        ["cluster", "forget-store"],
    ],
)
def test_a_url_file_with_a_password_readable_by_others_is_refused_without_showing_it(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = url_file(tmp_path, f"postgresql://app:{SECRET}@db/shop", mode=0o640)
    assert main([*argv, "--store-file", str(path)]) == 2
    err = capsys.readouterr().err
    assert "holds a password and has mode 0640" in err
    assert "chmod 600" in err
    assert SECRET not in err


def test_cluster_commands_read_the_coordinator_from_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.url"
    assert main(["cluster", "members", "--coordinator-file", str(missing)]) == 2
    assert "cannot be read" in capsys.readouterr().err
    empty = url_file(tmp_path, "")
    assert main(["cluster", "members", "--coordinator-file", str(empty)]) == 2
    assert "is empty" in capsys.readouterr().err
    bad = url_file(tmp_path, f"redis://:{SECRET}@cache/abc")
    assert main(["cluster", "members", "--coordinator-file", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "database must be a number" in err
    assert SECRET not in err


def test_a_mistyped_scheme_in_the_environment_is_shown_masked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TOCSIN_STORE", f"postgressql://app:{SECRET}@db/shop?password={SECRET}")
    assert main(["tasks", "list"]) == 2
    err = capsys.readouterr().err
    assert "unknown scheme 'postgressql'" in err
    assert SECRET not in err


def test_tocsin_run_takes_its_urls_from_the_environment_and_masks_them_in_errors(
    tmp_path: Path,
) -> None:
    (tmp_path / "app.py").write_text("async def main(system):\n    pass\n")
    env = {
        "TOCSIN_STORE": f"postgressql://app:{SECRET}@db/shop",
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(tmp_path),
    }
    done = subprocess.run(
        [sys.executable, "-m", "tocsin.cli", "run", "app:main", "--run-dir", str(tmp_path / "r")],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "unknown scheme 'postgressql'" in done.stderr
    assert SECRET not in done.stderr + done.stdout


def test_every_url_command_offers_a_file_option(capsys: pytest.CaptureFixture[str]) -> None:
    # In process: the help is argparse's, the same as `python -m tocsin.cli` prints
    # (tests/cli/test_cli_main.py runs that entry point), without five interpreters.
    for argv in (
        ["tasks", "list"],
        ["console"],
        ["run"],
        ["cluster", "members"],
        ["cluster", "forget-store"],
    ):
        with pytest.raises(SystemExit) as exited:
            main([*argv, "--help"])
        assert exited.value.code == 0, argv
        shown = capsys.readouterr().out
        assert "-file PATH" in shown, argv
        assert "TOCSIN_" in shown, argv
