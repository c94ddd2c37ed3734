# SPDX-License-Identifier: Apache-2.0
"""Outages heal by themselves (issue 20): retry delays, and one log line per outage.

A store or coordinator call that fails never ends a loop: the alarm, poll or claim that
made it is armed again after :func:`retry_delay` (capped backoff), so the node runs what
is due within that cap of the store or coordinator coming back. An :class:`Outage`
tracks one dependency (the durable store, the coordinator): the first failure logs one
WARNING with its cause, every failure is counted, and the first success after it logs
that it is back, so an outage of ten minutes with a thousand identities is two log
lines, not a line per failed call.
"""

from __future__ import annotations

import logging
from typing import Final, final

__all__ = ["RETRY_CAP", "RETRY_FIRST", "Outage", "retry_delay"]

#: The first retry delay after a failed store or coordinator call, seconds.
RETRY_FIRST: Final = 0.1
#: The longest retry delay, seconds (at most the cluster's ``poll_interval``): what is
#: due runs within this of the store or coordinator answering again.
RETRY_CAP: Final = 1.0


def retry_delay(attempt: int, cap: float = RETRY_CAP) -> float:
    """The delay before retry ``attempt`` (1, 2, ...): 0.1 s doubling, capped at ``cap``."""
    return min(cap, RETRY_FIRST * 2.0 ** min(max(attempt, 1) - 1, 30))


@final
class Outage:
    """One dependency's health as this node sees it: ``down`` from its first failed call
    to its next successful one. ``failures`` counts failed calls, ``outages`` counts
    outages (both only grow: the metrics read them)."""

    __slots__ = ("down", "failures", "log", "outages", "then", "what")

    def __init__(self, what: str, log: logging.Logger, then: str = "") -> None:
        self.what = what
        self.log = log
        #: What the node does meanwhile (said in the one WARNING).
        self.then = then or (
            "every alarm, poll and claim retries with backoff (at most "
            f"{RETRY_CAP:g} s apart) until it answers"
        )
        self.down = False
        self.failures = 0
        self.outages = 0

    def failed(self, exc: BaseException, during: str) -> None:
        """A call failed: count it; the first of an outage logs one WARNING with its cause."""
        self.failures += 1
        if self.down:
            return
        self.down = True
        self.outages += 1
        self.log.warning(
            "%s failing (%s: %s: %s); %s; logged once per outage",
            self.what,
            during,
            type(exc).__name__,
            exc,
            self.then,
        )

    def ok(self) -> None:
        """A call succeeded: an outage in progress is over (logged once)."""
        if self.down:
            self.down = False
            self.log.info(
                "%s answers again (%d failed calls so far); due work runs now",
                self.what,
                self.failures,
            )
