# SPDX-License-Identifier: Apache-2.0
"""Text to :class:`~tocsin.cron._fields.CronFields`: macros, field splitting, the dialect.

Two dialects, chosen by field count: exactly 5 fields are Unix cron
(:mod:`tocsin.cron._unix`), 6 or 7 are Quartz (:mod:`tocsin.cron._parser`, with the fast
path of :mod:`tocsin.cron._fast`). The macros mean the same in both. A wrong count names
both dialects' fields, the most common near miss being a five-field habit meeting a
six-field system or the reverse.
"""

from __future__ import annotations

import re
from typing import Final

from tocsin.cron._fast import fast_parse
from tocsin.cron._fields import CronFields
from tocsin.cron._parser import fail_whole, parse_quartz
from tocsin.cron._unix import parse_unix
from tocsin.errors import InvalidCronExpressionError

__all__ = ["MACROS", "dialect_of", "parse"]

#: Macros and the Quartz expression each stands for.
MACROS: Final = {
    "@yearly": "0 0 0 1 1 ?",
    "@annually": "0 0 0 1 1 ?",
    "@monthly": "0 0 0 1 * ?",
    "@weekly": "0 0 0 ? * SUN",
    "@daily": "0 0 0 * * ?",
    "@midnight": "0 0 0 * * ?",
    "@hourly": "0 0 * * * ?",
}

# Only space and tab separate fields, as in Quartz's StringTokenizer(" \t"); any other
# whitespace (no-break or ideographic space, newline) is an invalid character.
_TOKEN: Final = re.compile(r"[^ \t]+")
_EXPECTED: Final = (
    "expected 5 fields (Unix cron: minute hour day-of-month month day-of-week) or 6-7 "
    "fields (Quartz: seconds minutes hours day-of-month month day-of-week [year])"
)


def dialect_of(text: str) -> str:
    """The dialect a *valid* expression was read in: ``"quartz"``, ``"unix"`` or ``"macro"``.

    A valid expression separates its fields with spaces and tabs only, so ``split()``
    counts them as the parser did.
    """
    stripped = text.strip(" \t")
    if stripped.startswith("@"):
        return "macro"
    return "unix" if len(stripped.split()) == 5 else "quartz"


def parse(expression: object) -> CronFields:
    """Parse a Quartz (6-7 fields) or Unix (5 fields) expression, or a macro.

    Raises:
        InvalidCronExpressionError: for any input that is not a valid expression,
            including non-``str`` input; never any other exception.
    """
    if not isinstance(expression, str):
        raise InvalidCronExpressionError(
            f"a cron expression must be a str, got {type(expression).__name__}",
            expression=repr(expression),
        )
    tokens = expression.split(" ")
    if len(tokens) == 5 and "" not in tokens:
        # Five single-spaced fields, the way Unix cron is nearly always written: no
        # regex tokenizing (about 1 µs of a ~4 µs parse).
        start, pairs = 0, []
        for token in tokens:
            pairs.append((token, start))
            start += len(token) + 1
        return parse_unix(expression, pairs)
    fields = fast_parse(expression)
    if fields is not None:
        return fields
    return _parse_full(expression)


def _parse_full(text: str) -> CronFields:
    """Parse any expression; :func:`fast_parse` reads only the common spellings."""
    stripped = text.strip(" \t")
    if stripped.startswith("@"):
        quartz = MACROS.get(stripped.lower())
        if quartz is None:
            fail_whole(
                text,
                f"unknown macro {stripped!r}; allowed: {', '.join(MACROS)}",
                text.index("@"),
            )
        return parse(quartz)
    tokens = [(m.group(), m.start()) for m in _TOKEN.finditer(text)]
    if len(tokens) == 5:
        # Unix cron, written with tabs or extra spaces.
        return parse_unix(text, tokens)
    if len(tokens) < 5:
        fail_whole(text, f"{_EXPECTED}, got {len(tokens)}: {text!r}", len(text))
    if len(tokens) > 7:
        # Quartz ignores every token after the year. Its own test suite writes a
        # trailing "*" there, so that one is tolerated; anything else is a mistake.
        if len(tokens) > 8 or tokens[7][0] != "*":
            fail_whole(
                text,
                f"{_EXPECTED}, got {len(tokens)}: the extra field "
                f"{tokens[7][0]!r} at position {tokens[7][1]} has no meaning",
                tokens[7][1],
            )
        tokens = tokens[:7]
    return parse_quartz(text, tokens)
