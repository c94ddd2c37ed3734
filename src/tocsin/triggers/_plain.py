# SPDX-License-Identifier: Apache-2.0
"""The fast path's one question, asked when a schedule is made: do its overlap and
misfire options differ from its tier's defaults (:func:`needs_policy`)? A schedule that
passes none keeps no policy state, and its ticks take the plain path (no admission, no
grace, nothing allocated): "policies cost nothing when unused" (DESIGN.md "Schedule
policies").
"""

from __future__ import annotations

from ._misfire import Misfire
from ._overlap import Overlap

__all__ = ["needs_policy"]


def needs_policy(overlap: object, misfire: object, default: Overlap = Overlap.ALLOW) -> bool:
    """Whether a schedule made with ``overlap`` and ``misfire`` needs policy state:
    ``False`` only when ``overlap`` is its tier's ``default`` (``Overlap.ALLOW`` for actor
    schedules, ``Overlap.BUFFER_ONE`` for durable tasks and stored schedules, whose runs
    never overlap) and ``misfire`` is ``Misfire.once()`` without grace.

    Cheap: two identity tests for a call that passes no option (the common case), a
    comparison by value otherwise. Anything that is not a policy value needs one (the
    caller's check of it then raises, naming the option).
    """
    if overlap is default and misfire is Misfire.ONCE:
        return False
    return not (
        type(overlap) is Overlap
        and type(misfire) is Misfire
        and overlap == default
        and misfire.is_default
    )
