# SPDX-License-Identifier: Apache-2.0
"""A won cluster tick whose delivery may not have happened (``lost()``: a remote target's
connection was lost) lets its at_least_once claim lapse instead of marking it done, and is
no longer in flight for the overlap policy either way."""

from __future__ import annotations

from typing import Any

from tocsin.scheduling._scheduler import TickItem


class _Record:
    def __init__(self) -> None:
        self.finished_calls = 0

    def finished(self) -> None:
        self.finished_calls += 1


class _Grant:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self) -> None:
        self.calls.append("done")

    def lapse(self) -> None:
        self.calls.append("lapse")


def _item(record: _Record, done: Any) -> TickItem:
    return TickItem(record, 0.0, fence=7, done=done)  # type: ignore[arg-type]


def test_lost_lets_the_claim_lapse_and_ends_the_flight() -> None:
    record, grant = _Record(), _Grant()
    item = _item(record, grant)
    item.lost()
    assert grant.calls == ["lapse"]
    assert record.finished_calls == 1


def test_finished_marks_the_claim_done_once() -> None:
    record, grant = _Record(), _Grant()
    item = _item(record, grant)
    item.finished()
    assert grant.calls == ["done"]
    assert record.finished_calls == 1


def test_a_bare_done_call_has_nothing_to_lapse() -> None:
    record, calls = _Record(), []
    _item(record, lambda: calls.append(1)).lost()
    assert calls == []
    assert record.finished_calls == 1
