# SPDX-License-Identifier: Apache-2.0
"""``CronState.rewind``: how far a backward wall jump may bring a clustered cron schedule
back (the instants a forward step skipped, never one this node has fired)."""

from __future__ import annotations

from tocsin.scheduling._cron import CronState

T0 = 1_800_000_000.0  # a whole minute, so every-second instants are T0 + n


def _every_second() -> CronState:
    return CronState.create("* * * * * ?", "UTC", T0)


def test_a_skip_is_undone_back_to_the_first_instant_after_the_corrected_time() -> None:
    state = _every_second()
    state.move_to(T0 + 6)  # fired T0 + 1 ... T0 + 5 (the last one as last_wall)
    state.move_to(T0 + 25)  # a forward step: T0 + 6 fired, 7 ... 24 skipped
    assert state.last_wall == T0 + 6
    assert state.rewind(T0 + 6.3)
    assert state.next_wall == T0 + 7


def test_an_instant_exactly_at_the_corrected_time_is_kept() -> None:
    state = _every_second()
    state.move_to(T0 + 6)
    state.move_to(T0 + 25)
    assert state.rewind(T0 + 9)
    assert state.next_wall == T0 + 9


def test_never_back_to_an_instant_already_fired() -> None:
    state = _every_second()
    state.move_to(T0 + 6)
    state.move_to(T0 + 25)
    assert state.rewind(T0 + 2)  # wall went back before the last fired instant (T0 + 6)
    assert state.next_wall == T0 + 7
    assert not state.rewind(T0 + 2)  # and no further: already there


def test_never_forward_and_not_when_nothing_was_skipped() -> None:
    state = _every_second()
    state.move_to(T0 + 6)
    assert not state.rewind(T0 + 30)  # a forward jump: the fire path handles it
    assert state.next_wall == T0 + 6
    assert not state.rewind(T0 + 5.5)  # T0 + 6 is the next one after the corrected time
    assert state.next_wall == T0 + 6
