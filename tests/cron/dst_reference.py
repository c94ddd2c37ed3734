# SPDX-License-Identifier: Apache-2.0
"""A brute-force reference for cron under DST policies, and the script that writes
``tests/cron/dst_vectors.tsv`` from it. Not the engine under test: nothing here imports
tocsin.

Method: walk *wall times* minute by minute with :mod:`zoneinfo`. A wall minute's
instants are found by round trip (read it with ``fold=0`` and ``fold=1``, keep each
instant that converts back to the same wall minute): none is a gap minute, one an
ordinary minute, two a fold minute. A gap's end ``G1`` is the first existing minute
after it (walking forward), its instant ``T``; the offset before it is the one of the
last existing minute before it (walking back), so "shift" reads a gap minute with that
offset. The policies (the table in ``src/tocsin/cron/_dst.py`` and ``docs/cron.md``):
the fire times are the set of instants every matching minute gives, minus, for
``gap="quartz"`` and a start before ``T``, the matches in ``[G1, W1 + L)`` (``W1`` the
first matching gap minute); ``fold="quartz"`` moves a start inside the earlier
occurrence to its twin in the later one. ``DSTPolicy()`` itself (both ``"quartz"``) is
computed the way Quartz walks, literally: step wall minutes from the start's; a matching
ordinary minute fires, a fold minute fires at its later instant, a gap minute moves the
walk forward by the gap's length (and the moved minute is tested again).

Expressions: only what the vectors use, read by a parser of its own: seconds ``0``;
minutes and hours as ``*``, ``a``, ``a-b``, ``*/n``, ``a/n``, ``a-b/n`` and lists; day of
month ``*``/``?``, month ``*``, day of week ``?``/``*``; or the same as five Unix fields.

Run: ``python tests/cron/dst_reference.py`` (rewrites the vector file; a minute or two).
"""

from __future__ import annotations

import bisect
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

MINUTE = 60
GAPS = ("quartz", "next", "shift", "skip")
FOLDS = ("quartz", "first", "last", "both")
_NAIVE_EPOCH = datetime(1970, 1, 1)


def _values(text: str, low: int, high: int) -> set[int]:
    out: set[int] = set()
    for part in text.split(","):
        head, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if head == "*":
            start, end = low, high
        elif "-" in head:
            a, b = head.split("-")
            start, end = int(a), int(b)
        else:
            start = int(head)
            end = high if step_text else start
        out.update(range(start, end + 1, step))
    return out


@dataclass(frozen=True)
class Matcher:
    """Which wall minutes an expression matches (its own small parser)."""

    minutes: frozenset[int]
    hours: frozenset[int]

    @classmethod
    def parse(cls, expr: str) -> Matcher:
        tokens = expr.split(" ")
        if len(tokens) == 5:  # Unix: minute hour dom month dow
            tokens = ["0", *tokens]
        second, minute, hour, dom, month, dow = tokens
        if second != "0" or dom not in "*?" or month != "*" or dow not in "*?":
            raise ValueError(f"the reference does not read {expr!r}")
        return cls(frozenset(_values(minute, 0, 59)), frozenset(_values(hour, 0, 23)))

    def __call__(self, wall: datetime) -> bool:
        return wall.minute in self.minutes and wall.hour in self.hours


def _wall_key(wall: datetime) -> int:
    """A naive wall time as whole seconds since 1970-01-01 (no zone involved)."""
    return int((wall - _NAIVE_EPOCH).total_seconds())


@dataclass
class Zone:
    """Round-trip classification of wall minutes in one zone, cached."""

    name: str
    zone: ZoneInfo = field(init=False)
    cache: dict[int, tuple[int, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.zone = ZoneInfo(self.name)

    def instants(self, key: int) -> tuple[int, ...]:
        """Epoch seconds of the instants whose wall time is this wall minute, sorted."""
        found = self.cache.get(key)
        if found is None:
            wall = _NAIVE_EPOCH + timedelta(seconds=key)
            candidates = set()
            for fold in (0, 1):
                instant = wall.replace(tzinfo=self.zone, fold=fold).astimezone(UTC)
                if instant.astimezone(self.zone).replace(tzinfo=None, fold=0) == wall:
                    candidates.add(int(instant.timestamp()))
            found = tuple(sorted(candidates))
            self.cache[key] = found
        return found

    def wall_of(self, instant: int) -> int:
        local = datetime.fromtimestamp(instant, UTC).astimezone(self.zone)
        return _wall_key(local.replace(tzinfo=None, fold=0))

    def gap_of(self, key: int) -> tuple[int, int, int, int]:
        """For a gap minute: (G0, G1, T, offset before), walking minute by minute."""
        g0 = key
        while not self.instants(g0 - MINUTE):
            g0 -= MINUTE
        g1 = key
        while not self.instants(g1):
            g1 += MINUTE
        (before,) = self.instants(g0 - MINUTE)[-1:]
        offset_before = (g0 - MINUTE) - before
        (transition,) = self.instants(g1)[:1]
        return g0, g1, transition, offset_before


def _minute_ceiling(key: int) -> int:
    return -(-key // MINUTE) * MINUTE


def quartz_walk(zone: Zone, match: Matcher, after: int, limit: int) -> int:
    """Quartz's own walk: the first fire time strictly after ``after`` (epoch seconds)."""
    start = after + 1
    cursor = _minute_ceiling(zone.wall_of(start))
    end = cursor + limit
    while cursor <= end:
        wall = _NAIVE_EPOCH + timedelta(seconds=cursor)
        if match(wall):
            instants = zone.instants(cursor)
            if instants:
                return instants[-1]
            g0, g1, _, _ = zone.gap_of(cursor)
            cursor += g1 - g0  # moved by the gap's length, then tested again
            continue
        cursor += MINUTE
    raise AssertionError("no fire time within the reference's window")


@dataclass
class Window:
    """The fire-time sets of one expression over a window of wall minutes."""

    zone: Zone
    match: Matcher
    first: int
    last: int

    def fires(self, gap: str, fold: str) -> tuple[list[int], list[tuple[int, set[int]]]]:
        """(sorted instants, [(T, instants suppressed for starts before T)])."""
        instants: set[int] = set()
        shadows: list[tuple[int, set[int]]] = []
        first_gap_match: dict[int, int] = {}  # G0 -> first matching gap minute
        gaps: dict[int, tuple[int, int, int, int]] = {}
        for key in range(self.first, self.last + 1, MINUTE):
            if not self.match(_NAIVE_EPOCH + timedelta(seconds=key)):
                continue
            found = self.zone.instants(key)
            if len(found) == 1:
                instants.add(found[0])
            elif len(found) == 2:
                if fold in ("first", "both"):
                    instants.add(found[0])
                if fold in ("last", "both", "quartz"):
                    instants.add(found[1])
            else:
                g0, g1, transition, offset_before = self.zone.gap_of(key)
                gaps[g0] = (g0, g1, transition, offset_before)
                first_gap_match.setdefault(g0, key)
                if gap == "next":
                    instants.add(transition)
                elif gap == "shift":
                    instants.add(key - offset_before)
        if gap == "quartz":
            for g0, w1 in first_gap_match.items():
                _, g1, transition, _ = gaps[g0]
                length = g1 - g0
                hidden: set[int] = set()
                for key in range(g1, w1 + length, MINUTE):
                    if self.match(_NAIVE_EPOCH + timedelta(seconds=key)):
                        hidden.update(self.zone.instants(key))
                shadows.append((transition, hidden))
        return sorted(instants), shadows

    def next_after(self, gap: str, fold: str, after: int, *, literal: bool = True) -> int:
        """The first fire time strictly after ``after``; ``literal``: walk as Quartz does
        for the default policy (else the set rules, which must agree: see ``main``)."""
        if literal and gap == "quartz" and fold == "quartz":
            return quartz_walk(self.zone, self.match, after, 10 * 86400)
        start = after + 1
        if fold == "quartz":
            key = self.zone.wall_of(start)
            pair = self.zone.instants(key - key % MINUTE)
            if len(pair) == 2 and start - key % MINUTE == pair[0]:
                start += pair[1] - pair[0]  # the early occurrence: go on from the twin
        fires, shadows = self._cached(gap, fold)
        hidden: set[int] = set()
        for transition, suppressed in shadows:
            if start < transition:
                hidden |= suppressed
        index = bisect.bisect_left(fires, start)
        while index < len(fires) and fires[index] in hidden:
            index += 1
        if index >= len(fires):
            raise AssertionError("no fire time within the reference's window")
        result = fires[index]
        if not self.zone.wall_of(result) < self.last - 2 * 86400:
            raise AssertionError("a fire time too close to the end of the window")
        return result

    _memo: dict[tuple[str, str], tuple[list[int], list[tuple[int, set[int]]]]] = field(
        default_factory=dict
    )

    def _cached(self, gap: str, fold: str) -> tuple[list[int], list[tuple[int, set[int]]]]:
        key = (gap, fold)
        if key not in self._memo:
            self._memo[key] = self.fires(gap, fold)
        return self._memo[key]


# ---------------------------------------------------------------------------------------
# The vector file.

#: (zone, years to take transitions from, why it is here)
ZONES = [
    ("Europe/Paris", (2025,), "CET/CEST"),
    ("Europe/London", (2026,), "GMT/BST"),
    ("Europe/Dublin", (2025,), "negative DST in tzdata"),
    ("Europe/Kyiv", (2024,), "EET/EEST"),
    ("Europe/Moscow", (2010, 2011, 2014), "DST abolished 2011, rules changed 2014"),
    ("America/New_York", (2025,), "EST/EDT"),
    ("America/Chicago", (2024,), "CST/CDT"),
    ("America/Los_Angeles", (2026,), "PST/PDT"),
    ("America/St_Johns", (2025,), "half-hour offset"),
    ("America/Havana", (2025,), "changes at midnight"),
    ("America/Sao_Paulo", (2018, 2019), "southern, at midnight, abolished 2019"),
    ("America/Santiago", (2025,), "southern, at midnight"),
    ("America/Mexico_City", (2022,), "abolished 2022"),
    ("America/Nuuk", (2023, 2024), "rules changed 2023"),
    ("Atlantic/Azores", (2025,), "changes at midnight"),
    ("Africa/Cairo", (2024,), "reinstated 2023, at midnight"),
    ("Africa/Casablanca", (2025,), "Ramadan, negative DST"),
    ("Asia/Jerusalem", (2025,), "Friday rule"),
    ("Asia/Tehran", (2021, 2022), "half-hour offset, abolished 2022"),
    ("Asia/Amman", (2022,), "permanent DST from 2022"),
    ("Australia/Sydney", (2025,), "southern"),
    ("Australia/Adelaide", (2025,), "southern, half-hour offset"),
    ("Australia/Lord_Howe", (2025,), "half-hour DST"),
    ("Pacific/Auckland", (2025,), "southern"),
    ("Pacific/Chatham", (2025,), "+12:45/+13:45"),
    ("Pacific/Apia", (2011, 2021), "skipped 30 Dec 2011, DST abolished 2021"),
    ("Antarctica/Troll", (2025,), "two-hour DST"),
]


def transitions(zone: ZoneInfo, years: tuple[int, ...]) -> list[tuple[int, int, int]]:
    """(T, offset before, offset after) of every offset change in those years, to the second."""
    out = []
    for year in years:
        start = int(datetime(year, 1, 1, tzinfo=UTC).timestamp())
        end = int(datetime(year + 1, 1, 1, tzinfo=UTC).timestamp())

        def offset(s: int) -> int:
            value = datetime.fromtimestamp(s, UTC).astimezone(zone).utcoffset()
            assert value is not None
            return int(value.total_seconds())

        previous = offset(start)
        for s in range(start + 3600, end + 1, 3600):
            current = offset(s)
            if current != previous:
                low, high = s - 3600, s
                while high - low > 1:
                    middle = (low + high) // 2
                    if offset(middle) == previous:
                        low = middle
                    else:
                        high = middle
                out.append((high, previous, current))
                previous = current
    return out


def _hm(key: int) -> tuple[int, int]:
    wall = _NAIVE_EPOCH + timedelta(seconds=key)
    return wall.hour, wall.minute


def cases(transition: int, before: int, after: int) -> list[tuple[str, str, int, int]]:
    """(category, expression, start, n) around one change of offset."""
    size = abs(after - before)
    if after > before:  # a gap: walls [T + before, T + after) do not exist
        inside_wall = transition + before + (size // 2) // MINUTE * MINUTE
        edge_wall = transition + before
        inside_start = transition + MINUTE
        kind = "gap"
    else:  # a fold: walls [T + after, T + before) occur twice
        inside_wall = transition + after + (size // 2) // MINUTE * MINUTE
        edge_wall = transition + after
        inside_start = transition - size + MINUTE
        kind = "fold"
    hour, minute = _hm(inside_wall)
    edge_hour, edge_minute = _hm(edge_wall)
    return [
        (f"{kind}-daily", f"0 {minute} {hour} * * ?", transition - 26 * 3600, 4),
        (f"{kind}-daily-unix", f"{edge_minute} {edge_hour} * * *", transition - 26 * 3600, 3),
        (f"{kind}-hourly", "0 0 * * * ?", transition - 150 * MINUTE + 17, 5),
        (f"{kind}-minute", "0 * * * * ?", transition - 3 * MINUTE, 8),
        (f"{kind}-step", "0 */15 * * * ?", transition - 61 * MINUTE, 8),
        (f"{kind}-list", "0 10,35 * * * ?", transition - 70 * MINUTE, 6),
        (f"{kind}-daily-inside", f"0 {minute} {hour} * * ?", inside_start, 3),
        (f"{kind}-minute-inside", "0 * * * * ?", inside_start + size // 2, 6),
    ]


def main(path: Path) -> None:
    lines = ["expr\ttz\tgap\tfold\tstart_ms\tn\tfire_times\tcategory"]
    zones_used = set()
    for name, years, _ in ZONES:
        zone = Zone(name)
        found = transitions(zone.zone, years)
        # One gap and one fold a year at most (Casablanca has two of each).
        chosen: dict[tuple[int, bool], tuple[int, int, int]] = {}
        for transition, before, after in found:
            year = datetime.fromtimestamp(transition, UTC).year
            chosen.setdefault((year, after > before), (transition, before, after))
        for transition, before, after in chosen.values():
            for category, expr, start, n in cases(transition, before, after):
                window = Window(
                    zone,
                    Matcher.parse(expr),
                    _minute_ceiling(transition + min(before, after) - 4 * 86400),
                    _minute_ceiling(transition + max(before, after) + 6 * 86400),
                )
                for gap in GAPS:
                    for fold in FOLDS:
                        times = []
                        moment = start
                        for _ in range(n):
                            fire = window.next_after(gap, fold, moment)
                            if gap == fold == "quartz":  # the two readings agree
                                assert fire == window.next_after(gap, fold, moment, literal=False)
                            times.append(fire * 1000)
                            moment = fire
                        fires = ",".join(map(str, times))
                        lines.append(
                            f"{expr}\t{name}\t{gap}\t{fold}\t{start * 1000}\t{n}\t{fires}\t"
                            f"{category}"
                        )
                zones_used.add(name)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(lines) - 1} rows, {len(zones_used)} zones -> {path}", file=sys.stderr)


if __name__ == "__main__":
    main(Path(__file__).with_name("dst_vectors.tsv"))
