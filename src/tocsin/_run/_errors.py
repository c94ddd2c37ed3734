# SPDX-License-Identifier: Apache-2.0
"""The one error of ``tocsin run``'s argument checks (``_config``, ``_net``)."""

from __future__ import annotations

from ..errors import TocsinError

__all__ = ["RunUsageError"]


class RunUsageError(TocsinError, ValueError):
    """A ``tocsin run`` argument is wrong; the message names it, what was given and why."""
