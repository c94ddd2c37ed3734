# SPDX-License-Identifier: Apache-2.0
"""Loading the shared cron conformance vectors (``../shared/cron/*.tsv``), used in place.

A vector file is looked up in its environment variable, then as ``shared/cron/<name>``
in any directory above the repository (never copied into it). When it is missing its
tests fail under ``TOCSIN_REQUIRE_VECTORS`` (``.ci/run`` sets it whenever it finds the
files) and are skipped otherwise.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tocsin.cron import CronExpression, InvalidCronExpressionError

_REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, slots=True)
class Row:
    line: int
    expr: str
    tz: str
    start_ms: int
    n: int
    expect: str
    fire_times: tuple[int, ...]
    category: str


def vectors_path(name: str, variable: str) -> Path | None:
    """The file ``shared/cron/<name>``: from ``$<variable>``, else above the repository."""
    override = os.environ.get(variable)
    if override and Path(override).is_file():
        return Path(override)
    relative = Path("shared") / "cron" / name
    for directory in _REPO.parents:
        if (directory / relative).is_file():
            return directory / relative
    return None


def load_rows(path: Path | None) -> list[Row]:
    if path is None:
        return []
    lines = path.read_text(encoding="utf-8").split("\n")
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        if not line:
            continue
        # Split exactly as the README says: no stripping, expressions may have spaces.
        expr, tz, start_ms, n, expect, fire_times, category = line.rstrip("\n").split("\t")
        times = tuple(int(t) for t in fire_times.split(",")) if fire_times else ()
        rows.append(Row(number, expr, tz, int(start_ms), int(n), expect, times, category))
    return rows


def missing(name: str, variable: str) -> None:
    """Fail (under ``TOCSIN_REQUIRE_VECTORS``) or skip: the vector file was not found."""
    reason = f"{name} not found: no ${variable}, no shared/cron/{name} above {_REPO}"
    if os.environ.get("TOCSIN_REQUIRE_VECTORS"):
        pytest.fail(reason)
    pytest.skip(reason)


def fire_times(cron: CronExpression, start_ms: int, n: int) -> list[int]:
    """Up to ``n`` fire times after ``start_ms``, each strictly after the previous one."""
    moment: datetime | None = datetime.fromtimestamp(start_ms / 1000, UTC)
    times = []
    for _ in range(n):
        assert moment is not None
        moment = cron.next_after(moment)
        if moment is None:
            break
        times.append(int(moment.timestamp() * 1000))
    return times


def check_row(row: Row, dialects: tuple[str, ...]) -> None:
    """Assert that tocsin agrees with one vector row, read in one of ``dialects``.

    An ``INVALID`` row must be refused; an ``EITHER`` row may be; any other row must
    parse and give exactly the row's fire times.
    """
    if row.expect == "INVALID":
        with pytest.raises(InvalidCronExpressionError):
            CronExpression.parse(row.expr, row.tz)
        return
    try:
        cron = CronExpression.parse(row.expr, row.tz)
    except InvalidCronExpressionError:
        assert row.expect == "EITHER", f"rejected a valid expression {row.expr!r}"
        return
    assert cron.dialect in dialects
    assert fire_times(cron, row.start_ms, row.n) == list(row.fire_times)
