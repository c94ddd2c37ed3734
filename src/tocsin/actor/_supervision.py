# SPDX-License-Identifier: Apache-2.0
"""Supervision: what happens to an actor whose ``receive`` or ``pre_start`` raised.

Prior art: Proto.Actor ``supervision.go`` (directive decider, restart statistics within a
window) and Akka's ``SupervisorStrategy``. As in GoAkt, the supervisor is given to the
actor at spawn and decides for that actor.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable
from typing import final

from .._deadlines import Seconds, to_seconds
from ..errors import InvalidIntervalError

__all__ = ["DEFAULT_SUPERVISOR", "Directive", "Supervisor"]


class Directive(enum.StrEnum):
    """What a supervisor does with a failed actor."""

    RESTART = "restart"
    """Stop the children, call ``post_stop`` on the failed instance, build a fresh instance
    from the factory and run its ``pre_start``. The failed message is dropped; the mailbox
    and the actor's schedules are kept (a restart is not a stop)."""
    RESUME = "resume"
    """Keep the instance and its state; go on with the next message."""
    STOP = "stop"
    """Stop the actor (children first, then ``post_stop``)."""
    SUSPEND = "suspend"
    """Close the mailbox until ``await system.reinstate(pid)``; messages sent meanwhile
    are dead letters, schedules are kept."""
    ESCALATE = "escalate"
    """Fail the parent with the same error: the parent's supervisor decides for the
    parent (a parent restart or stop stops this child too). A top-level actor stops."""


@final
class Supervisor:
    """A supervision strategy.

    Args:
        decider: a :class:`Directive`, or a callable ``(exception) -> Directive``.
        max_restarts: restarts allowed within ``within`` seconds; the failure past that
            limit stops the actor instead. ``None`` means no limit.
        within: the sliding window, in seconds, over which restarts are counted.
        backoff: ``(min_s, max_s)`` to wait before each restart of a crash loop, or
            ``None`` (restart at once). Restart *k* within the window waits
            ``min(max_s, min_s * 2**(k-1))`` seconds, scaled by a random factor in
            [1.0, 1.2] (then capped at ``max_s``) so that actors that failed together do
            not restart in lockstep (Akka's ``BackoffSupervisor``). Messages wait in the
            mailbox meanwhile; a stop during the wait stops the actor at once.

    Raises:
        TypeError: ``decider`` is neither a Directive nor callable.
        ValueError: ``max_restarts`` is not an int >= 0 or None.
        InvalidIntervalError: ``within`` or a ``backoff`` bound is not a positive finite
            number of seconds, or ``min_s > max_s`` (a ``ValueError`` too).
    """

    __slots__ = ("_decider", "backoff", "max_restarts", "within")

    def __init__(
        self,
        decider: Directive | Callable[[BaseException], Directive] = Directive.RESTART,
        *,
        max_restarts: int | None = 10,
        within: Seconds = 60.0,
        backoff: tuple[Seconds, Seconds] | None = None,
    ) -> None:
        if not isinstance(decider, Directive) and not callable(decider):
            raise TypeError(
                f"`decider` must be a Directive or a callable (exception) -> Directive, "
                f"got {decider!r}"
            )
        if max_restarts is not None and (
            isinstance(max_restarts, bool) or not isinstance(max_restarts, int) or max_restarts < 0
        ):
            raise ValueError(f"`max_restarts` must be an int >= 0 or None, got {max_restarts!r}")
        self.within = to_seconds(within, "within")
        self.backoff: tuple[float, float] | None = None
        if backoff is not None:
            if not isinstance(backoff, tuple) or len(backoff) != 2:
                raise TypeError(
                    f"`backoff` must be a (min_s, max_s) tuple or None, got {backoff!r}"
                )
            low = to_seconds(backoff[0], "backoff[0]")
            high = to_seconds(backoff[1], "backoff[1]")
            if low > high:
                raise InvalidIntervalError(
                    f"`backoff` must be (min_s, max_s) with min_s <= max_s, got {backoff!r}"
                )
            self.backoff = (low, high)
        self._decider = decider
        self.max_restarts = max_restarts

    def decide(self, error: BaseException) -> Directive:
        """The directive for ``error``; a broken decider counts as :attr:`Directive.STOP`."""
        decider = self._decider
        if isinstance(decider, Directive):
            return decider
        try:
            directive = decider(error)
        except Exception:
            return Directive.STOP
        return directive if isinstance(directive, Directive) else Directive.STOP

    def backoff_delay(self, restart: int) -> float:
        """Seconds to wait before restart number ``restart`` (1-based) in the window."""
        if self.backoff is None:
            return 0.0
        low, high = self.backoff
        delay: float = min(high, low * 2.0 ** min(restart - 1, 64))
        return min(high, delay * (1.0 + 0.2 * random.random()))

    def __repr__(self) -> str:
        return (
            f"Supervisor({self._decider!r}, max_restarts={self.max_restarts!r}, "
            f"within={self.within!r}, backoff={self.backoff!r})"
        )


#: Restart on any failure, at most 10 times a minute, then stop.
DEFAULT_SUPERVISOR = Supervisor(Directive.RESTART, max_restarts=10, within=60.0)
