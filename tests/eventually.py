# SPDX-License-Identifier: Apache-2.0
"""``eventually()``: the one way a test waits for something outside its control.

Real processes, sockets, browsers and threads finish when they finish; a test waits for
the *outcome* it needs, bounded, and never for a fixed real time ("sleep 0.5 s and hope").
On a :class:`~tocsin.ManualClock` nothing needs it: ``await clock.advance(...)`` returns
once the loop is idle (docs/testing.md).

The check is re-run after each short pause, growing from 1 ms to :data:`MAX_PAUSE`, so a
fast outcome is seen at once and a slow one costs few checks. Past ``within`` real
seconds (:data:`WITHIN`: a bound against hangs, not a speed assertion) it fails naming
``what`` and the last value or error the check gave.

The opposite question, "nothing more happens", is :func:`settled`: it returns at the event
loop's next idle moment (what a ManualClock waits for), once every consequence that needs
no time has happened: a frame written to a socket of this process has been read and
handled, a thread marked with ``real_io`` has answered. No "sleep 0.05 s and check that
nothing came".
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, overload

from tocsin._idle import watch

__all__ = ["MAX_PAUSE", "WITHIN", "eventually", "eventually_sync", "settled"]

T = TypeVar("T")

#: Default bound, real seconds: generous, since the 2-core test machine is often loaded.
WITHIN = 30.0
#: Longest pause between two checks, real seconds.
MAX_PAUSE = 0.05
_FIRST_PAUSE = 0.001


@overload
async def eventually(
    check: Callable[[], Awaitable[T | None]], what: str = "", *, within: float = WITHIN
) -> T: ...


@overload
async def eventually(
    check: Callable[[], T | None], what: str = "", *, within: float = WITHIN
) -> T: ...


async def eventually(check: Callable[[], Any], what: str = "", *, within: float = WITHIN) -> Any:
    """Return the first truthy result of ``check()`` (awaited when it returns an awaitable).

    An ``AssertionError`` raised by ``check`` counts as "not yet", so a check may assert.

    Raises:
        AssertionError: no truthy result within ``within`` real seconds; the message names
            ``what`` (or the check) and its last result or assertion.
    """
    deadline = time.monotonic() + within
    pause = _FIRST_PAUSE
    while True:
        try:
            result = check()
            if inspect.isawaitable(result):
                result = await result
            last = repr(result)
            if result:
                return result
        except AssertionError as exc:
            last = f"AssertionError: {exc}"
        if time.monotonic() >= deadline:
            raise AssertionError(_message(check, what, within, last))
        await asyncio.sleep(pause)
        pause = min(pause * 2, MAX_PAUSE)


def eventually_sync(check: Callable[[], T | None], what: str = "", *, within: float = WITHIN) -> T:
    """:func:`eventually` for a synchronous test (a subprocess, a file): same contract."""
    deadline = time.monotonic() + within
    pause = _FIRST_PAUSE
    while True:
        try:
            result = check()
            last = repr(result)
            if result:
                return result
        except AssertionError as exc:
            last = f"AssertionError: {exc}"
        if time.monotonic() >= deadline:
            raise AssertionError(_message(check, what, within, last))
        time.sleep(pause)
        pause = min(pause * 2, MAX_PAUSE)


def _message(check: Callable[..., object], what: str, within: float, last: str) -> str:
    name = what or getattr(check, "__qualname__", repr(check))
    return f"not within {within:g} real seconds: {name} (last: {last})"


async def settled(*, within: float = WITHIN) -> None:
    """Return once the event loop is idle: nothing ready to run, no I/O already arrived and
    unhandled, no ``real_io`` call or real ``asyncio.sleep`` in flight (``tocsin._idle``).

    Real timers (a heartbeat, a handshake timeout on a SystemClock) are not waited for:
    what they would cause is a later event, which a test asserting "nothing more" is
    right not to wait for.

    Raises:
        AssertionError: the loop was not idle within ``within`` real seconds.
    """
    try:
        async with asyncio.timeout(within):
            await watch(asyncio.get_running_loop()).wait_idle()
    except TimeoutError:
        raise AssertionError(
            f"the event loop was not idle within {within:g} real seconds"
        ) from None
