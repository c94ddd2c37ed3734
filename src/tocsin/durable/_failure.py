# SPDX-License-Identifier: Apache-2.0
"""What a failed durable task leaves behind: ``last_error`` text, bounded (issue 10 #13).

``last_error`` used to be ``repr(exc)``: the type and text, but not where it failed, so an
operator reading ``tocsin tasks list`` still had to find the log. It now keeps:

1. the exception's last line as Python prints it (``ValueError: bad sku``), first, so
   that a one-line view (the CLI's LAST ERROR column) shows what matters;
2. then the innermost frames of its traceback, as many as fit in
   :data:`LAST_ERROR_LIMIT` characters (a store row, a table cell and an event carry
   it, so it is bounded; the full traceback goes to the log).
"""

from __future__ import annotations

import traceback
from typing import Final

__all__ = ["LAST_ERROR_LIMIT", "describe_failure"]

#: Most characters of ``last_error`` (about 4 KiB).
LAST_ERROR_LIMIT: Final = 4096
#: Most characters of the first part (type and text), so frames always fit.
_HEADLINE_LIMIT: Final = 1024


def describe_failure(exc: BaseException) -> str:
    """``exc`` as ``"Type: text"``, then its innermost traceback frames, bounded.

    Guarantees: the result starts with the exception's type and text (cut at 1,024
    characters with "…"), is at most :data:`LAST_ERROR_LIMIT` characters, and lists
    frames innermost last, as a traceback does, dropping outer frames first.
    """
    headline = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    if len(headline) > _HEADLINE_LIMIT:
        headline = headline[: _HEADLINE_LIMIT - 1] + "…"
    frames = traceback.format_list(traceback.extract_tb(exc.__traceback__))
    if not frames:
        return headline
    kept: list[str] = []
    room = LAST_ERROR_LIMIT - len(headline) - 80  # the "Traceback (...)" line
    for frame in reversed(frames):
        if len(frame) > room:
            break
        kept.append(frame)
        room -= len(frame)
    kept.reverse()
    shown = f"innermost {len(kept)} of {len(frames)} frames" if len(kept) < len(frames) else ""
    title = f"Traceback (most recent call last{', ' + shown if shown else ''}):"
    return "\n".join((headline, title, "".join(kept).rstrip("\n")))
