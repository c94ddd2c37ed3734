# SPDX-License-Identifier: Apache-2.0
"""Retry policy of durable tasks: exponential backoff with jitter, then parking.

Prior art: procrastinate's ``RetryStrategy`` (a frozen value with one method).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

__all__ = ["RetryDecision", "RetryPolicy"]


@dataclass(frozen=True, slots=True)
class RetryDecision:
    """Run the task again ``delay`` seconds from now."""

    delay: float


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """When a failed task runs again.

    Before retry *k* (k >= 1, the k-th failure) the delay is
    ``min(cap, base * 2 ** (k - 1))`` seconds scaled by a random factor in
    ``[jitter_min, 1.0]``: about 1 s, 2 s, 4 s ... capped at 300 s, with jitter so that
    many tasks failing together do not retry in lock step.

    Args:
        base: first delay in seconds.
        cap: largest delay in seconds.
        jitter_min: lower bound of the random scale factor.
        rng: random source (inject a seeded ``random.Random`` for reproducible tests).
    """

    base: float = 1.0
    cap: float = 300.0
    jitter_min: float = 0.5
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def backoff(self, attempts: int) -> float:
        """Delay before retry number ``attempts`` (>= 1)."""
        raw = min(self.cap, self.base * 2.0 ** min(attempts - 1, 64))
        return raw * self.rng.uniform(self.jitter_min, 1.0)

    def decide(
        self, exception: BaseException, attempts: int, max_retries: int
    ) -> RetryDecision | None:
        """``None`` means park: ``attempts`` failures used up ``max_retries`` retries."""
        if attempts > max_retries:
            return None
        return RetryDecision(self.backoff(attempts))
