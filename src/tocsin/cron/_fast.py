# SPDX-License-Identifier: Apache-2.0
"""The fast path of the parser: the common spellings, read with table look-ups.

:func:`fast_parse` reads expressions written the usual way (single spaces between 6 or
7 fields; elements that are ``*``, numbers, names, ranges and steps; ``?``, ``L``,
``LW``, ``nL`` and ``n#k`` in the day fields) and returns ``None`` for anything else,
including every invalid expression. The full parser in :mod:`tocsin.cron._parser` then
reads the text again, so the rarer spellings, the leniencies Quartz compatibility needs
and every error message live in one place. The fast path validates everything it
accepts (bounds, step sizes, backwards ranges, the day-field rules) and gives exactly
the result the full parser would: ``tests/cron`` checks both paths.

The tables below are built once, at import, from the field bounds alone: they map the
canonical spelling of each single value (``"7"``, ``"MON"``) to its number, like a
name table does, and hold nothing derived from any expression parsed.
"""

from __future__ import annotations

from typing import Final

from tocsin.cron._fields import MAX_YEAR, MIN_YEAR, CronFields, DayKind, DayRule

__all__ = ["DAY_NAMES", "MONTH_NAMES", "fast_parse"]

MONTH_NAMES: Final = {
    name: number
    for number, name in enumerate(
        ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"),
        start=1,
    )
}
DAY_NAMES: Final = {
    name: number
    for number, name in enumerate(("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"), start=1)
}

# Per field (seconds, minutes, hours, day-of-month, month, day-of-week, year): bounds,
# the modulus of wrapping ranges (0: no wrapping), the largest step, the names.
_BOUNDS: Final = (
    (0, 59, 60, 59, None),
    (0, 59, 60, 59, None),
    (0, 23, 24, 23, None),
    (1, 31, 31, 31, None),
    (1, 12, 12, 12, MONTH_NAMES),
    (1, 7, 7, 7, DAY_NAMES),
    (MIN_YEAR, MAX_YEAR, 0, MAX_YEAR - MIN_YEAR, None),
)


def _values(low: int, high: int, names: dict[str, int] | None) -> dict[str, int]:
    values = {str(number): number for number in range(low, high + 1)}
    values.update(names or {})
    return values


#: Per field: the canonical text of each single value, to its number.
_VALUES: Final = tuple(_values(low, high, names) for low, high, _, _, names in _BOUNDS)
#: Per field: the canonical text of each valid step, to its number.
_STEPS: Final = tuple({str(step): step for step in range(1, top + 1)} for *_, top, _ in _BOUNDS)
#: Per field: the elements that need no arithmetic, ``*`` and single values, as bitsets.
_ATOMS: Final = tuple(
    {"*": ((2 << high) - 1) ^ ((1 << low) - 1)}
    | {text: 1 << number for text, number in values.items()}
    for (low, high, *_), values in zip(_BOUNDS, _VALUES, strict=True)
)
#: Every ``step``-th bit from bit 0 up to bit 63, for steps up to 59.
_EVERY: Final = tuple(sum(1 << bit for bit in range(0, 64, max(step, 1))) for step in range(60))

_ALL_DAYS_OF_MONTH: Final = _ATOMS[3]["*"]
_ALL_YEARS: Final = _ATOMS[6]["*"] >> MIN_YEAR
_EVERY_DAY: Final = DayRule(DayKind.EVERY_DAY)
_LAST_DAY: Final = DayRule(DayKind.LAST_DAY)
_LAST_WEEKDAY: Final = DayRule(DayKind.LAST_WEEKDAY)
_SATURDAYS: Final = DayRule(DayKind.DAYS_OF_WEEK, mask=1 << 7)


def _element(index: int, element: str) -> int:
    """A range or a step, as a bitset; -1 for any other text (the full parser decides)."""
    head, slash, step_text = element.partition("/")
    step = 1
    if slash:
        step = _STEPS[index].get(step_text, 0)
        if not step:
            return -1
    low, high, wrap, _, names = _BOUNDS[index]
    values = _VALUES[index]
    start_text, dash, end_text = head.partition("-")
    if start_text == "*":
        if dash:
            return -1
        start, end = low, high
    else:
        start = values.get(start_text, -1)
        if start < 0 or (slash and names is not None and start_text.isalpha()):
            return -1  # a name with a step: the full parser reads it as Quartz does
        if dash:
            end = values.get(end_text, -1)
            if end < 0:
                return -1
        else:
            end = high if slash else start
    if end < start:
        if not wrap:
            return -1
        end += wrap
    if end <= high and step < 60 and end - start < 64:
        # No wrap, at most 64 values: every step-th bit from start, cut off above end.
        return (_EVERY[step] << start) & ((2 << end) - 1)
    bits = 0
    for value in range(start, end + 1, step):
        bits |= 1 << (value - wrap if value > high else value)
    return bits


def _set(index: int, text: str) -> int:
    """An ordinary field as a bitset; -1 when the fast path does not read it."""
    bits = _ATOMS[index].get(text, 0)
    if bits:
        return bits
    if "," not in text:
        return _element(index, text)
    atoms = _ATOMS[index]
    for element in text.split(","):
        part = atoms.get(element, 0) or _element(index, element)
        if part < 0:
            return -1
        bits |= part
    return bits


def _dom(text: str) -> DayRule | bool | None:
    """The day-of-month field; ``False`` when the fast path does not read it."""
    if text == "?":
        return None
    if text == "*":
        return _EVERY_DAY
    if text == "L":
        return _LAST_DAY
    if text == "LW":
        return _LAST_WEEKDAY
    mask = _set(3, text)
    if mask < 0:
        return False
    if mask == _ALL_DAYS_OF_MONTH:
        return _EVERY_DAY
    return DayRule(DayKind.DAYS_OF_MONTH, mask=mask)


def _dow(text: str) -> DayRule | bool | None:
    """The day-of-week field; ``False`` when the fast path does not read it."""
    if text == "?":
        return None
    if text == "*":
        return _EVERY_DAY
    if len(text) == 2 and text[1] == "L" and "1" <= text[0] <= "7":
        return DayRule(DayKind.LAST_OF_WEEKDAY, value=ord(text[0]) - 48)
    if len(text) == 3 and text[1] == "#" and "1" <= text[0] <= "7" and "1" <= text[2] <= "5":
        return DayRule(DayKind.NTH_OF_WEEKDAY, value=ord(text[0]) - 48, nth=ord(text[2]) - 48)
    if text == "L":
        return _SATURDAYS
    mask = _set(5, text)
    if mask < 0:
        return False
    if mask == 0b11111110:
        return _EVERY_DAY
    return DayRule(DayKind.DAYS_OF_WEEK, mask=mask)


def fast_parse(text: str) -> CronFields | None:
    """The fields of a commonly spelled valid expression; ``None`` for anything else."""
    if not (text.isascii() and text.isprintable()):
        return None  # tabs, other whitespace, non-ASCII: the full parser reads it
    tokens = text.split(" ")
    count = len(tokens)
    if count < 6 or count > 7 or "" in tokens:
        return None
    seconds = _ATOMS[0].get(tokens[0], 0) or _set(0, tokens[0])
    minutes = _ATOMS[1].get(tokens[1], 0) or _set(1, tokens[1])
    hours = _ATOMS[2].get(tokens[2], 0) or _set(2, tokens[2])
    months = _ATOMS[4].get(tokens[4], 0) or _set(4, tokens[4])
    years = (_set(6, tokens[6]) >> MIN_YEAR) if count == 7 else _ALL_YEARS
    if seconds < 0 or minutes < 0 or hours < 0 or months < 0 or years < 0:
        return None
    dom_text = tokens[3]
    dow_text = tokens[5]
    dom = _dom(dom_text)
    dow = _dow(dow_text)
    if dom is False or dow is False:
        return None
    # The documented relaxation (single spaces, as here): a `*` next to a restricted
    # (or `*`) other day field reads as `?`.
    if dom_text == "*" and dow is not None:
        dom = None
    elif dow_text == "*" and dom is not None:
        dow = None
    if dom is None:
        if dow is None:
            return None
        days = dow
    elif dow is None:
        days = dom
    else:
        return None
    assert isinstance(days, DayRule)  # for mypy: False was ruled out above
    return CronFields(seconds, minutes, hours, days, months, years)
