# SPDX-License-Identifier: Apache-2.0
"""Quartz fields to :class:`~tocsin.cron._fields.CronFields`, or an error naming the field.

:mod:`tocsin.cron._dialects` splits the text and picks the dialect by field count; the 6
or 7 fields of a Quartz expression are read here (five fields: :mod:`tocsin.cron._unix`).

Prior art: ``org.quartz.CronExpression`` 2.3.2 (what is valid, and what the values mean)
and go-quartz's parser (errors that name the field). The grammar is written out here
rather than ported: Quartz's parser reads character by character and silently ignores
whatever it does not understand, which is how ``*X`` or ``0W`` get through. tocsin keeps
only the leniencies that Quartz's own test suite relies on (see ``docs/cron.md``,
"Differences from Quartz"); everything else is rejected with the field and position.

Every failure path raises :class:`InvalidCronExpressionError`: numbers are length-checked
before ``int()`` (CPython refuses to convert more than 4,300 digits), only ASCII is
accepted (``str.upper`` can change a string's length on other scripts), and nothing
indexes past the end of a string.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, NoReturn, final

from tocsin.cron._fast import DAY_NAMES as _DAY_NAMES
from tocsin.cron._fast import MONTH_NAMES as _MONTH_NAMES
from tocsin.cron._fields import (
    FIELD_NAMES,
    MAX_YEAR,
    MIN_YEAR,
    CronFields,
    DayKind,
    DayRule,
)
from tocsin.errors import InvalidCronExpressionError

__all__ = ["fail_whole", "parse_quartz"]

_DIGITS: Final = re.compile(r"[0-9]+")
# More digits than this cannot be a valid value; checked before int() is called.
_MAX_DIGITS: Final = 9

_SEC, _MIN, _HOUR, _DOM, _MONTH, _DOW, _YEAR = range(7)


@final
@dataclass(frozen=True, slots=True)
class _Spec:
    """What one field accepts: value bounds, the modulus of wrapping ranges, names."""

    low: int
    high: int
    wrap: int  # 0: ranges may not wrap (years)
    names: dict[str, int] | None
    allowed: str


_SPECS: Final = (
    _Spec(0, 59, 60, None, "0-59, lists, ranges, steps and *"),
    _Spec(0, 59, 60, None, "0-59, lists, ranges, steps and *"),
    _Spec(0, 23, 24, None, "0-23, lists, ranges, steps and *"),
    _Spec(1, 31, 31, None, "1-31, lists, ranges, steps, *, ?, L, L-n, LW, nW"),
    _Spec(1, 12, 12, _MONTH_NAMES, "1-12 or JAN-DEC, lists, ranges, steps and *"),
    _Spec(1, 7, 7, _DAY_NAMES, "1-7 or SUN-SAT (SUN=1), lists, ranges, steps, *, ?, L, nL, n#k"),
    _Spec(MIN_YEAR, MAX_YEAR, 0, None, f"{MIN_YEAR}-{MAX_YEAR}, lists, ranges, steps and *"),
)


@final
class _Field:
    """One field being parsed: its index, its text and where the text starts."""

    __slots__ = ("expression", "index", "start", "text")

    def __init__(self, expression: str, index: int, text: str, start: int) -> None:
        self.expression = expression
        self.index = index
        self.text = text
        self.start = start

    def fail(self, problem: str) -> NoReturn:
        spec = _SPECS[self.index]
        name = FIELD_NAMES[self.index]
        raise InvalidCronExpressionError(
            f"invalid {name} field {self.text!r} at position {self.start}: {problem}; "
            f"allowed: {spec.allowed}",
            expression=self.expression,
            field=name,
            position=self.start,
        )


def fail_whole(expression: str, message: str, position: int | None) -> NoReturn:
    """Raise the error for a problem with the expression as a whole (no one field)."""
    raise InvalidCronExpressionError(message, expression=expression, position=position)


def parse_quartz(text: str, tokens: list[tuple[str, int]]) -> CronFields:
    """Read six or seven ``(token, position)`` pairs of ``text`` as Quartz fields.

    Raises:
        InvalidCronExpressionError: a field is invalid (named, with its position).
    """
    fields = [_Field(text, index, tok, start) for index, (tok, start) in enumerate(tokens)]
    for field in fields:
        if not (field.text.isascii() and field.text.isprintable()):
            bad = next(c for c in field.text if not (c.isascii() and c.isprintable()))
            field.fail(f"unexpected character {bad!r}")
    values = [_parse_set(field) for field in (fields[_SEC], fields[_MIN], fields[_HOUR])]
    months = _parse_set(fields[_MONTH])
    years = _parse_set(fields[_YEAR]) if len(fields) == 7 else _ALL[_YEAR]
    # The `*` shorthand in a day field is GoAkt's documented spelling, which always puts
    # single spaces between fields; the Quartz vectors read it only in that form.
    canonical = text == " ".join(tok for tok, _ in tokens)
    days = _parse_days(fields[_DOM], fields[_DOW], relaxed=canonical)
    years >>= MIN_YEAR
    return CronFields(
        seconds=values[0],
        minutes=values[1],
        hours=values[2],
        days=days,
        months=months,
        years=years,
    )


def _all(index: int) -> int:
    spec = _SPECS[index]
    return ((1 << (spec.high + 1)) - 1) ^ ((1 << spec.low) - 1)


#: Every value of each field, as a bitset (``*``).
_ALL: Final = tuple(_all(index) for index in range(7))


def _number(field: _Field, text: str, what: str = "value") -> int:
    if not _DIGITS.fullmatch(text):
        if not text:
            field.fail(f"a {what} is missing")
        field.fail(f"{text!r} is not a number")
    if len(text) > _MAX_DIGITS:
        field.fail(f"{what} {text} is out of range")
    return int(text)


def _value(field: _Field, text: str) -> int:
    """A single value: digits, or (month, day-of-week) a three-letter name."""
    spec = _SPECS[field.index]
    if spec.names is not None and text[:1].isalpha():
        number = spec.names.get(text.upper())
        if number is None:
            field.fail(f"{text!r} is not a {FIELD_NAMES[field.index]} name")
        return number
    number = _number(field, text)
    if not spec.low <= number <= spec.high:
        _out_of_range(field, number)
    return number


def _out_of_range(field: _Field, number: int) -> NoReturn:
    if number == 0 and field.index == _DOW:
        # The near miss: a Unix weekday (0 = Sunday) in a Quartz expression.
        field.fail(
            "0 is out of range: Quartz numbers the days SUN=1 … SAT=7 (0 for Sunday is "
            "Unix cron, which has five fields and no seconds field)"
        )
    field.fail(f"{number} is out of range")


def _range_bits(field: _Field, start: int, end: int, step: int) -> int:
    spec = _SPECS[field.index]
    if end < start:
        if not spec.wrap:
            field.fail(f"the range {start}-{end} goes backwards")
        # A wrapping range (22-2, FRI-MON, NOV-FEB) runs past the top and continues
        # from the bottom, stepping over the seam as Quartz does.
        end += spec.wrap
    bits = 0
    for value in range(start, end + 1, step):
        if value > spec.high:
            value -= spec.wrap
        bits |= 1 << value
    return bits


def _step(field: _Field, text: str) -> int:
    spec = _SPECS[field.index]
    step = _number(field, text, "step")
    if step < 1:
        field.fail("a step must be at least 1")
    if spec.wrap and step > spec.wrap - (1 if spec.low == 0 else 0):
        field.fail(f"step {step} is larger than the field")
    return step


def _parse_element(field: _Field, element: str) -> int:
    """One comma-separated element of an ordinary field, as a bitset."""
    spec = _SPECS[field.index]
    if element.isdigit() and len(element) <= 4:
        # Fast path for the most common element, a plain number (the text is ASCII).
        number = int(element)
        if not spec.low <= number <= spec.high:
            _out_of_range(field, number)
        return 1 << number
    if not element:
        field.fail("empty list element")
    if element == "*":
        return _ALL[field.index]
    if element.startswith("*/"):
        return _range_bits(field, spec.low, spec.high, _step(field, element[2:]))
    if element[0] == "*":
        field.fail(f"unexpected text after '*' in {element!r}")
    if element[0] == "?":
        field.fail("'?' is only allowed, alone, in the day-of-month or day-of-week field")
    if element[0].isalpha() and spec.names is not None:
        return _parse_named(field, element.upper())
    head, slash, step_text = element.partition("/")
    start_text, dash, end_text = head.partition("-")
    if dash and "-" in end_text:
        # Quartz reads "1-2-3" as "1-2" and ignores the rest (including a step); its
        # test suite relies on it, so tocsin keeps the reading.
        end_text = end_text.partition("-")[0]
        slash, step_text = "", ""
    start = _value(field, start_text)
    end = _value(field, end_text) if dash else (spec.high if slash else start)
    step = _step(field, step_text) if slash else 1
    return _range_bits(field, start, end, step)


def _parse_named(field: _Field, element: str) -> int:
    """A name element, read as Quartz reads it (this is the documented leniency).

    Quartz looks at three letters, then at one more character: ``-`` starts a range to
    another name, anything else ends the element (so ``MONDAY`` is ``MON`` and
    ``FEB123-MAY`` is ``FEB``). Its own test suite depends on this.
    """
    start = _value(field, element[:3])
    if element[3:4] == "-":
        end = _value(field, element[4:7])
        return _range_bits(field, start, end, 1)
    return 1 << start


def _parse_set(field: _Field) -> int:
    if "," not in field.text:
        return _parse_element(field, field.text)
    bits = 0
    for element in field.text.split(","):
        bits |= _parse_element(field, element)
    return bits


_LAST_DAY: Final = re.compile(r"L(?:-([0-9]+))?(W)?")
_NEAREST: Final = re.compile(r"([0-9]+)W")
_NTH: Final = re.compile(r"([0-9]+|[A-Z]{3})#([0-9]+)")
_LAST_OF: Final = re.compile(r"([0-9]+|[A-Z]{3})L")
_NAME_LAST: Final = re.compile(r"([A-Z]{3})L.*")
_NAME_NTH: Final = re.compile(r"([A-Z]{3})#(.*)")


def _parse_dom(field: _Field) -> DayRule | None:
    """The day-of-month field; ``None`` for ``?``, ``EVERY_DAY`` for ``*``."""
    text = field.text.upper()
    if text == "?":
        return None
    if text == "*":
        return DayRule(DayKind.EVERY_DAY)
    if "L" not in text and "W" in text and "," in text:
        return _parse_nearest_list(field, text)
    if "L" in text or "W" in text:
        if "," in text:
            field.fail("L cannot be combined with other days")
        match = _LAST_DAY.fullmatch(text)
        if match:
            offset = 0 if match.group(1) is None else _number(field, match.group(1), "offset")
            if offset > 30:
                field.fail("the offset in L-n must be 0-30")
            kind = DayKind.LAST_WEEKDAY if match.group(2) else DayKind.LAST_DAY
            return DayRule(kind, value=offset)
        match = _NEAREST.fullmatch(text)
        if match:
            day = _number(field, match.group(1), "day")
            if not 1 <= day <= 31:
                field.fail(f"{day}W: the day must be 1-31")
            return DayRule(DayKind.NEAREST_WEEKDAY, value=day)
        field.fail("L is written L, L-n, LW or L-nW; W is written nW or LW, alone")
    return DayRule(DayKind.DAYS_OF_MONTH, mask=_parse_set(field))


def _parse_nearest_list(field: _Field, text: str) -> DayRule:
    """A list with ``nW`` in it, such as ``2W,16``, read as Quartz reads it.

    Quartz keeps one "nearest weekday" flag for the whole field and applies it to the
    smallest day listed; the other days never fire. Its test suite relies on this, so
    tocsin accepts such lists (plain days and ``nW`` only) with the same meaning.
    """
    days = []
    for element in text.split(","):
        match = _NEAREST.fullmatch(element)
        day = _number(field, match.group(1) if match else element, "day")
        if not 1 <= day <= 31:
            field.fail(f"day {day} is out of range")
        days.append(day)
    return DayRule(DayKind.NEAREST_WEEKDAY, value=min(days))


def _parse_dow(field: _Field) -> DayRule | None:
    """The day-of-week field; ``None`` for ``?``, ``EVERY_DAY`` for ``*``."""
    text = field.text.upper()
    if text == "?":
        return None
    if text == "*":
        return DayRule(DayKind.EVERY_DAY)
    if "#" in text or "L" in text:
        if "," in text:
            field.fail("L and # cannot be combined with other days")
        if text == "L":
            # Quartz: "L" alone in day-of-week is day 7, Saturday, every week.
            return DayRule(DayKind.DAYS_OF_WEEK, mask=1 << 7)
        return _parse_dow_special(field, text)
    return DayRule(DayKind.DAYS_OF_WEEK, mask=_parse_set(field))


def _parse_dow_special(field: _Field, text: str) -> DayRule:
    nth = _NTH.fullmatch(text) or _NAME_NTH.fullmatch(text)
    if nth:
        day_text, k_text = nth.group(1), nth.group(2)
        if day_text.isdigit():
            day = _number(field, day_text, "day")
            # Quartz accepts any number before '#' (its suite has "50#2"); a day above
            # 7 never occurs, so such an expression simply never fires.
            if day < 1:
                field.fail(f"{day}#{k_text}: the day must be 1-7 (SUN=1)")
        else:
            day = _value(field, day_text)
        k = _number(field, k_text, "occurrence") if k_text.isdigit() else 0
        if not 1 <= k <= 5:
            field.fail(f"'#' must be followed by 1-5, got {k_text!r}")
        return DayRule(DayKind.NTH_OF_WEEKDAY, value=day, nth=k)
    last = _LAST_OF.fullmatch(text) or _NAME_LAST.fullmatch(text)
    if last:
        day = _value(field, last.group(1))
        return DayRule(DayKind.LAST_OF_WEEKDAY, value=day)
    if text[:1].isalpha() and "L" not in text[:3] and "#" not in text[:3]:
        # A name followed by text Quartz ignores, e.g. "MONDAY" or "SUNL..."
        return DayRule(DayKind.DAYS_OF_WEEK, mask=_parse_set(field))
    field.fail("L is written L or nL (last weekday n of the month); # is written n#k, k 1-5")


def _parse_days(dom_field: _Field, dow_field: _Field, *, relaxed: bool) -> DayRule:
    dom = _parse_dom(dom_field)
    dow = _parse_dow(dow_field)
    if relaxed:
        # The documented relaxation: a `*` next to a restricted (or `*`) other day
        # field reads as `?`.
        if dom_field.text == "*" and dow is not None:
            dom = None
        elif dow_field.text == "*" and dom is not None:
            dow = None
    if dom is None and dow is None:
        dow_field.fail("'?' may be used in only one of day-of-month and day-of-week")
    if dom is not None and dow is not None:
        dow_field.fail(
            "day-of-month and day-of-week cannot both be given: put '?' in one of them "
            "(Unix cron's rule, either day matches, needs five fields, without seconds)"
        )
    rule = dom if dom is not None else dow
    assert rule is not None  # for mypy: exactly one of them is set here
    if rule.kind is DayKind.DAYS_OF_WEEK and rule.mask == 0b11111110:
        return DayRule(DayKind.EVERY_DAY)
    if rule.kind is DayKind.DAYS_OF_MONTH and rule.mask == _ALL[_DOM]:
        return DayRule(DayKind.EVERY_DAY)
    return rule
