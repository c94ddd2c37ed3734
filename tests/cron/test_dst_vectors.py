# SPDX-License-Identifier: Apache-2.0
"""Every row of ``tests/cron/dst_vectors.tsv``: the engine under each DST policy.

The file was written by ``tests/cron/dst_reference.py``, a brute-force minute-by-minute
walk over wall times with ``zoneinfo`` that imports nothing of tocsin; its header says
how it works. Columns: ``expr tz gap fold start_ms n fire_times category`` (tab
separated, fire times in epoch milliseconds, each strictly after the previous one).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

import pytest

from tocsin.cron import CronExpression, DSTPolicy
from tocsin.cron._dst import FoldPolicy, GapPolicy

PATH = Path(__file__).with_name("dst_vectors.tsv")


@dataclass(frozen=True, slots=True)
class Row:
    line: int
    expr: str
    tz: str
    gap: str
    fold: str
    start_ms: int
    n: int
    fire_times: tuple[int, ...]
    category: str


def _rows() -> list[Row]:
    rows = []
    lines = PATH.read_text(encoding="utf-8").split("\n")
    assert lines[0] == "expr\ttz\tgap\tfold\tstart_ms\tn\tfire_times\tcategory"
    for number, line in enumerate(lines[1:], start=2):
        if line:
            expr, tz, gap, fold, start, n, fires, category = line.split("\t")
            times = tuple(int(t) for t in fires.split(","))
            rows.append(Row(number, expr, tz, gap, fold, int(start), int(n), times, category))
    return rows


ROWS = _rows()


def _fires(row: Row) -> list[int]:
    cron = CronExpression.parse(row.expr, row.tz)
    policy = DSTPolicy(gap=cast("GapPolicy", row.gap), fold=cast("FoldPolicy", row.fold))
    moment: datetime | None = datetime.fromtimestamp(row.start_ms / 1000, UTC)
    out = []
    for _ in range(row.n):
        assert moment is not None
        moment = cron.next_after(moment, dst=policy)
        assert moment is not None
        out.append(int(moment.timestamp()) * 1000)
    return out


def test_the_vector_file_covers_every_combination_and_enough_zones() -> None:
    assert len(ROWS) > 3000
    combos = Counter((row.gap, row.fold) for row in ROWS)
    assert len(combos) == 16
    assert len(set(combos.values())) == 1  # every combination on the same cases
    assert len({row.tz for row in ROWS}) >= 20
    southern = {"Australia/Sydney", "Pacific/Auckland", "America/Santiago"}
    assert southern <= {row.tz for row in ROWS}
    assert "Australia/Lord_Howe" in {row.tz for row in ROWS}
    kinds = {row.category.split("-", 1)[1] for row in ROWS}
    assert {"daily", "hourly", "minute", "step"} <= kinds


def test_the_policies_differ_on_the_vectors() -> None:
    # The file would pin nothing if every policy gave the same fire times.
    by_case: dict[tuple[str, str, int], set[tuple[int, ...]]] = {}
    for row in ROWS:
        by_case.setdefault((row.expr, row.tz, row.start_ms), set()).add(row.fire_times)
    assert sum(len(answers) > 1 for answers in by_case.values()) > len(by_case) // 3


@pytest.mark.parametrize("row", ROWS, ids=[f"line{row.line}" for row in ROWS])
def test_row_agrees_with_the_reference(row: Row) -> None:
    assert _fires(row) == list(row.fire_times), f"{row.category} {row.gap}/{row.fold}"
