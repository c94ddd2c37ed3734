# SPDX-License-Identifier: Apache-2.0
"""One simulated node's clock: the simulation's ``ManualClock``, skewed and freezable.

A node's wall time is the shared clock's plus its skew (an :class:`~tocsin.OffsetClock`
inside). Its timers are the shared clock's, except while the node is paused: a timer
that comes due then fires when the pause ends, late, as every timer of a frozen process
does (a SIGSTOP, a stop-the-world pause). Without that, a "paused" node would notice
its own lease lapsing on time and stop its activations before waking, and the writes it
had in flight would never meet the store's fence: the pause would test nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, final

from ..clock import Clock, ManualClock, OffsetClock

if TYPE_CHECKING:
    from ..clock import TimerHandle

__all__ = ["NodeClock"]


@final
class _Timer:
    """A node timer: its handle (cancels whichever shared-clock timer currently stands
    for it: the first, or the one re-armed at the end of a pause) and what it calls.

    One slotted object per timer, its bound :meth:`fire` the shared clock's callback (a
    closure over the same five values cost more to make: every lease renewal arms one).
    """

    __slots__ = ("callback", "cancelled", "handle", "inner", "resume_at")

    def __init__(
        self,
        inner: ManualClock,
        resume_at: Callable[[], float | None],
        callback: Callable[[], None],
    ) -> None:
        self.inner = inner
        self.resume_at = resume_at
        self.callback = callback
        self.cancelled = False
        self.handle: TimerHandle | None = None

    def cancel(self) -> None:
        self.cancelled = True
        if self.handle is not None:
            self.handle.cancel()

    def fire(self) -> None:
        if self.cancelled:
            return
        resume = self.resume_at()
        if resume is not None and resume > self.inner.monotonic():
            self.handle = self.inner.call_at(resume, self.fire)  # frozen: fires once it wakes
            return
        self.callback()


@final
class NodeClock(Clock):
    """The clock of one simulated node.

    Args:
        inner: the simulation's clock (monotonic time, timers, idleness).
        resume_at: when the node's current pause ends (``None``: not paused).
    """

    def __init__(self, inner: ManualClock, resume_at: Callable[[], float | None]) -> None:
        super().__init__()
        self._inner = inner
        self._skewed = OffsetClock(inner)
        self._resume_at = resume_at
        self.reports_wall_jumps = True  # the offset clock reports skew steps and jumps
        # The shared clock's own reading, bound here: a node reads monotonic time several
        # times per lease renewal and per tick, and a forwarding method doubles each read.
        self.monotonic = inner.monotonic  # type: ignore[method-assign]
        self.wall = self._skewed.wall  # type: ignore[method-assign]  # (each cron tick reads it)

    @property
    def offset(self) -> float:
        """Seconds this node's wall clock is off."""
        return self._skewed.offset

    def set_offset(self, offset: float) -> None:
        """Make the node's wall clock ``offset`` seconds off (a step: reported as a jump)."""
        self._skewed.set_offset(offset)

    def monotonic(self) -> float:
        return self._inner.monotonic()

    def wall(self) -> float:
        return self._skewed.wall()

    def call_at(self, deadline: float, callback: Callable[[], None]) -> TimerHandle:
        timer = _Timer(self._inner, self._resume_at, callback)
        timer.handle = self._inner.call_at(deadline, timer.fire)
        return timer

    def on_wall_jump(self, listener: Callable[[float], None]) -> Callable[[], None]:
        return self._skewed.on_wall_jump(listener)

    def report_wall_jump(self, seconds: float) -> None:
        self._skewed.report_wall_jump(seconds)

    def attach(self, tracker: Any) -> None:
        self._inner.attach(tracker)

    def detach(self, tracker: Any) -> None:
        self._inner.detach(tracker)
