# SPDX-License-Identifier: Apache-2.0
"""Every row of the Quartz 2.3.2 conformance vectors (``../shared/cron/quartz_vectors.tsv``).

One test per row, with the line number as its id. The file is looked up in
``TOCSIN_QUARTZ_VECTORS``, then as ``shared/cron/quartz_vectors.tsv`` beside the
repository or any of its parent directories. When it is missing the tests fail under
``TOCSIN_REQUIRE_VECTORS`` (``.ci/run`` sets it whenever it finds the file) and are
skipped otherwise.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tocsin.cron import CronExpression, InvalidCronExpressionError

_REPO = Path(__file__).resolve().parents[2]
_RELATIVE = Path("shared") / "cron" / "quartz_vectors.tsv"


def _vectors_path() -> Path | None:
    override = os.environ.get("TOCSIN_QUARTZ_VECTORS")
    if override and Path(override).is_file():
        return Path(override)
    for directory in _REPO.parents:
        if (directory / _RELATIVE).is_file():
            return directory / _RELATIVE
    return None


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


def _rows() -> list[Row]:
    path = _vectors_path()
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


ROWS = _rows()


def _missing_vectors() -> None:
    reason = f"Quartz vectors not found: no $TOCSIN_QUARTZ_VECTORS, no {_RELATIVE} above {_REPO}"
    if os.environ.get("TOCSIN_REQUIRE_VECTORS"):
        pytest.fail(reason)
    pytest.skip(reason)


def _fire_times(cron: CronExpression, start_ms: int, n: int) -> list[int]:
    moment: datetime | None = datetime.fromtimestamp(start_ms / 1000, UTC)
    times = []
    for _ in range(n):
        assert moment is not None
        moment = cron.next_after(moment)
        if moment is None:
            break
        times.append(int(moment.timestamp() * 1000))
    return times


def test_the_vector_file_is_present_and_complete() -> None:
    if _vectors_path() is None:
        _missing_vectors()
    assert len(ROWS) > 2000
    assert {row.expect for row in ROWS} == {"OK", "INVALID", "EITHER"}


@pytest.mark.parametrize("row", ROWS, ids=[f"line{row.line}" for row in ROWS])
def test_row_agrees_with_quartz(row: Row) -> None:
    if row.expect == "INVALID":
        with pytest.raises(InvalidCronExpressionError):
            CronExpression.parse(row.expr, row.tz)
        return
    try:
        cron = CronExpression.parse(row.expr, row.tz)
    except InvalidCronExpressionError:
        assert row.expect == "EITHER", f"rejected a valid expression {row.expr!r}"
        return
    assert _fire_times(cron, row.start_ms, row.n) == list(row.fire_times)
