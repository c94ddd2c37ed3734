# SPDX-License-Identifier: Apache-2.0
"""Supervision: what happens to an actor whose ``receive`` or ``pre_start`` raised.

Prior art: Proto.Actor ``supervision.go`` (directive decider, restart statistics within a
window) and Akka's ``SupervisorStrategy``. As in GoAkt, the supervisor is given to the
actor at spawn and decides for that actor.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from typing import final

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
    """

    __slots__ = ("_decider", "max_restarts", "within")

    def __init__(
        self,
        decider: Directive | Callable[[BaseException], Directive] = Directive.RESTART,
        *,
        max_restarts: int | None = 10,
        within: float = 60.0,
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
        if (
            isinstance(within, bool)
            or not isinstance(within, int | float)
            or not (within > 0 and math.isfinite(within))
        ):
            raise ValueError(
                f"`within` must be a positive finite number of seconds, got {within!r}"
            )
        self._decider = decider
        self.max_restarts = max_restarts
        self.within = float(within)

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

    def __repr__(self) -> str:
        return (
            f"Supervisor({self._decider!r}, max_restarts={self.max_restarts!r}, "
            f"within={self.within!r})"
        )


#: Restart on any failure, at most 10 times a minute, then stop.
DEFAULT_SUPERVISOR = Supervisor(Directive.RESTART, max_restarts=10, within=60.0)
