# SPDX-License-Identifier: Apache-2.0
"""Five-field Unix cron, read exactly as Debian's cron reads it, into :class:`CronFields`.

Prior art: Vixie cron's ``entry.c`` as Debian ships it, and cronsim (the reference the
shared vectors ``unix_vectors.tsv`` were computed with). Fields: minute 0-59, hour 0-23,
day-of-month 1-31, month 1-12 or JAN-DEC, day-of-week 0-7 or SUN-SAT (0 and 7 are
Sunday). Elements: ``*``, ``a``, ``a-b`` (never backwards: ``5-1`` is an error, unlike
Quartz's wrapping ranges), ``*/n``, ``a/n`` (``a`` to the top of the field), ``a-b/n``,
names anywhere a number may stand (``MON-FRI``, ``JAN/3``), comma lists. One reading
is cronsim's own and kept because the vectors pin it: a one-value range with a step
(``5-5/10``) runs to the top of the field, like ``5/10``.

The day rule (Vixie cron's, not Quartz's ``?``): when either day field *starts with*
``*`` (``*``, ``*/2``) a day must match both fields; otherwise a day matches if it
matches either (``0 0 1,15 * FRI`` fires on the 1st, the 15th and every Friday).

Rejected on purpose: Quartz's ``L``, ``W``, ``#`` and ``?`` (cronsim accepts some of them;
Debian's cron does not). The error says so and shows the six-field Quartz spelling,
because a five-field expression written with Quartz syntax is nearly always a Quartz
expression missing its seconds field. A day that no allowed month has (``0 0 30 2 *``)
is accepted, as Debian's cron accepts it, and simply never fires.

Every failure raises :class:`InvalidCronExpressionError` naming the field and position;
numbers are length-checked before ``int()``.
"""

from __future__ import annotations

from typing import Final, NoReturn

from tocsin.cron._fast import MONTH_NAMES
from tocsin.cron._fields import FIELD_NAMES, MAX_YEAR, MIN_YEAR, CronFields, DayKind, DayRule
from tocsin.errors import InvalidCronExpressionError

__all__ = ["UNIX_DAY_NAMES", "parse_unix"]

#: Day names as Unix cron numbers them (SUN=0 … SAT=6).
UNIX_DAY_NAMES: Final = {
    name: number for number, name in enumerate(("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"))
}

# Per field (minute, hour, day-of-month, month, day-of-week): low, high, names, allowed.
_SPECS: Final = (
    (0, 59, None, "0-59, lists, ranges, steps and *"),
    (0, 23, None, "0-23, lists, ranges, steps and *"),
    (1, 31, None, "1-31, lists, ranges, steps and *"),
    (1, 12, MONTH_NAMES, "1-12 or JAN-DEC, lists, ranges, steps and *"),
    (0, 7, UNIX_DAY_NAMES, "0-7 or SUN-SAT (0 and 7 are Sunday), lists, ranges, steps and *"),
)
_MAX_DIGITS: Final = 9


def _values(low: int, high: int, names: dict[str, int] | None) -> dict[str, int]:
    values = {str(number): number for number in range(low, high + 1)}
    values.update(names or {})
    return values


#: Per field: the canonical text of each single value (and name), to its number.
_VALUES: Final = tuple(_values(low, high, names) for low, high, names, _ in _SPECS)
#: Per field: every value, as a bitset.
_ALL: Final = tuple(((2 << high) - 1) ^ ((1 << low) - 1) for low, high, _, _ in _SPECS)
#: Per field: the elements that need no arithmetic (``*`` and single values), as bitsets.
_ATOMS: Final = tuple(
    {"*": every} | {text: 1 << number for text, number in values.items()}
    for every, values in zip(_ALL, _VALUES, strict=True)
)
#: Every ``step``-th bit from bit 0 up to bit 63, for steps up to 63.
_EVERY: Final = tuple(sum(1 << bit for bit in range(0, 64, max(step, 1))) for step in range(64))
_EVERY_DAY: Final = DayRule(DayKind.EVERY_DAY)
#: Every weekday in tocsin's (Quartz's) numbering: bit 1 = Sunday … bit 7 = Saturday.
_ALL_WEEKDAYS: Final = 0b11111110
_ALL_YEARS: Final = (1 << (MAX_YEAR - MIN_YEAR + 1)) - 1
#: Characters that only Quartz gives a meaning to, per field.
_QUARTZ_ONLY: Final = ("?", "?", "?LW", "?", "?L#")

_MIN, _HOUR, _DOM, _MONTH, _DOW = range(5)


def _fail(text: str, index: int, token: str, start: int, problem: str) -> NoReturn:
    name = FIELD_NAMES[index + 1]
    raise InvalidCronExpressionError(
        f"invalid {name} field {token!r} at position {start}: {problem}; "
        f"allowed (Unix cron, five fields): {_SPECS[index][3]}",
        expression=text,
        field=name,
        position=start,
    )


def _quartz_only(text: str, index: int, token: str, start: int, char: str) -> NoReturn:
    name = FIELD_NAMES[index + 1]
    raise InvalidCronExpressionError(
        f"invalid {name} field {token!r} at position {start}: {char!r} is Quartz cron only, "
        "and five fields are read as Unix cron (minute hour day-of-month month "
        "day-of-week). Meant Quartz? Write 6 fields starting with a seconds field, "
        f"e.g. {'0 ' + ' '.join(text.split())!r}",
        expression=text,
        field=name,
        position=start,
    )


def _number(text: str, index: int, token: str, start: int, value: str, what: str) -> int:
    if not value:
        _fail(text, index, token, start, f"a {what} is missing")
    if not (value.isascii() and value.isdigit()):
        _fail(text, index, token, start, f"{value!r} is not a number")
    if len(value) > _MAX_DIGITS:
        _fail(text, index, token, start, f"{what} {value} is out of range")
    return int(value)


def _value(text: str, index: int, token: str, start: int, value: str) -> int:
    number = _VALUES[index].get(value, -1)
    if number >= 0:
        return number
    low, high, names, _ = _SPECS[index]
    if names is not None and value[:1].isalpha():
        _fail(text, index, token, start, f"{value!r} is not a {FIELD_NAMES[index + 1]} name")
    number = _number(text, index, token, start, value, "value")  # leading zeros: "05"
    if not low <= number <= high:
        _fail(text, index, token, start, f"{number} is out of range")
    return number


def _element(text: str, index: int, token: str, start: int, element: str) -> int:
    """One comma-separated element, as a bitset in Unix numbering (bit n = value n)."""
    bits = _ATOMS[index].get(element, 0)
    if bits:
        return bits
    low, high, _, _ = _SPECS[index]
    head, slash, step_text = element.partition("/")
    step = 1
    if slash:
        step = _number(text, index, token, start, step_text, "step")
        if step < 1:
            _fail(text, index, token, start, "a step must be at least 1")
    if head == "*":
        first, last = low, high
    else:
        first_text, dash, last_text = head.partition("-")
        first = _value(text, index, token, start, first_text)
        if dash:
            last = _value(text, index, token, start, last_text)
            if last < first:
                _fail(
                    text,
                    index,
                    token,
                    start,
                    f"the range {head} goes backwards (Unix cron "
                    "ranges never wrap; list both parts instead)",
                )
            if last == first and slash:
                # cronsim reads a one-value range with a step ("5-5/10") as it reads
                # "5/10": from 5 to the top of the field. The shared vectors pin it.
                last = high
        else:
            last = high if slash else first  # "a/n": from a to the top of the field
    if step == 1:
        return ((2 << last) - 1) ^ ((1 << first) - 1)
    if step < 64:
        # Every step-th bit from `first`, cut off above `last` (fields fit in 64 bits).
        return (_EVERY[step] << first) & ((2 << last) - 1)
    return 1 << first  # a step wider than the field: the first value only


def _field(text: str, index: int, token: str, start: int) -> int:
    """A whole field, as a bitset in Unix numbering; names are read in any case."""
    token = token.upper()
    bits = _ATOMS[index].get(token, 0)
    if bits:
        return bits
    for char in _QUARTZ_ONLY[index]:
        if char in token:
            _quartz_only(text, index, token, start, char)
    for element in token.split(","):
        if not element:
            _fail(text, index, token, start, "empty list element")
        bits |= _element(text, index, token, start, element)
    return bits


def _weekdays(unix: int) -> int:
    """Unix weekday bits (0-7, 0 and 7 Sunday) to tocsin's (1 = Sunday … 7 = Saturday)."""
    return ((unix & 0x7F) << 1) | ((unix >> 7) << 1)


def parse_unix(text: str, tokens: list[tuple[str, int]]) -> CronFields:
    """Read five ``(token, position)`` pairs of ``text`` as Unix cron.

    Raises:
        InvalidCronExpressionError: a field is invalid or uses Quartz-only syntax.
    """
    if not (text.isascii() and text.replace("\t", " ").isprintable()):
        for index, (token, start) in enumerate(tokens):
            if not (token.isascii() and token.isprintable()):
                bad = next(c for c in token if not (c.isascii() and c.isprintable()))
                _fail(text, index, token, start, f"unexpected character {bad!r}")
    (m_text, m_at), (h_text, h_at), (dom_text, dom_at), (mon_text, mon_at), (dow_text, dow_at) = (
        tokens
    )
    # Single values and "*" are one table look-up each; anything else is read in full.
    minutes = _ATOMS[_MIN].get(m_text, 0) or _field(text, _MIN, m_text, m_at)
    hours = _ATOMS[_HOUR].get(h_text, 0) or _field(text, _HOUR, h_text, h_at)
    dom = _ATOMS[_DOM].get(dom_text, 0) or _field(text, _DOM, dom_text, dom_at)
    months = _ATOMS[_MONTH].get(mon_text, 0) or _field(text, _MONTH, mon_text, mon_at)
    dow = _ATOMS[_DOW].get(dow_text, 0) or _field(text, _DOW, dow_text, dow_at)
    weekdays = _weekdays(dow)
    all_dom = dom == _ALL[_DOM]
    all_dow = weekdays == _ALL_WEEKDAYS
    # Vixie cron: a day field starting with "*" (DOM_STAR / DOW_STAR) makes the two
    # fields AND-ed; two restricted fields are OR-ed.
    if dom_text[:1] == "*" or dow_text[:1] == "*":
        if all_dom:
            days = _EVERY_DAY if all_dow else DayRule(DayKind.DAYS_OF_WEEK, mask=weekdays)
        elif all_dow:
            days = DayRule(DayKind.DAYS_OF_MONTH, mask=dom)
        else:
            days = DayRule(DayKind.DAYS_OF_MONTH_AND_WEEK, mask=dom, weekdays=weekdays)
    elif all_dom or all_dow:
        days = _EVERY_DAY
    else:
        days = DayRule(DayKind.DAYS_OF_MONTH_OR_WEEK, mask=dom, weekdays=weekdays)
    return CronFields(
        seconds=1, minutes=minutes, hours=hours, days=days, months=months, years=_ALL_YEARS
    )
