# SPDX-License-Identifier: Apache-2.0
"""The console's tables say what ``tocsin tasks list`` says about the same rows."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tocsin.cli._tasks import _table
from tocsin.console._data import Snapshot, _task
from tocsin.console._render import render_sections
from tocsin.stores import TaskRow, TaskState


def row(attempts: int, max_retries: int, state: TaskState) -> TaskRow:
    return TaskRow(
        kind="Order", identity="o-1", id="t-1", name="ship", payload=b"", due=1_700_000_000.0,
        every=None, attempts=attempts, max_retries=max_retries, created_at=1_600_000_000.0,
        state=state, last_error="RuntimeError('no courier')" if state == "parked" else None,
    )  # fmt: skip


def cell(html: str, label: str) -> str:
    return html.split(f'data-label="{label}">', 1)[1].split("</td>", 1)[0]


@pytest.mark.parametrize(
    ("attempts", "max_retries", "state", "shown"),
    [
        (1, 0, "parked", "1/1"),  # failed its only run: the "1/0"
        (3, 2, "parked", "3/3"),  # failed the first run and both retries
        (0, 5, "pending", "0/6"),  # a healthy task
        (2, 5, "pending", "2/6"),  # between retries
    ],
)
def test_attempts_read_runs_made_of_runs_allowed_as_the_cli_prints_them(
    attempts: int, max_retries: int, state: TaskState, shown: str
) -> None:
    task = row(attempts, max_retries, state)
    cli = _table([task]).splitlines()
    column = cli[0].index("ATTEMPTS")
    assert cli[1][column:].split()[0] == shown
    view = _task(task)
    snapshot = Snapshot(
        taken_at=datetime.fromtimestamp(1_700_000_000, tz=UTC), mode="test", schedules=None,
        lateness=None, tasks=(view,), tasks_total=1,
        parked=(view,) if state == "parked" else (), actors=None, members=None,
        dead_letters=None,
    )  # fmt: skip
    sections = render_sections(snapshot, "csrf", None)
    assert cell(sections["tasks"], "Attempts") == shown
    if state == "parked":
        assert cell(sections["parked"], "Attempts") == shown
