"""The shared SQL of the database stores."""

from __future__ import annotations

import msgspec
import pytest

from tocsin.stores import TaskRow, UpsertTask
from tocsin.stores import _queries as q


def test_task_columns_are_in_task_row_field_order() -> None:
    # Rows are built positionally (TaskRow(*row)) and written with astuple(row).
    assert tuple(c.strip() for c in q.COLUMNS.split(",")) == TaskRow.__struct_fields__


def test_numbered_turns_question_marks_into_postgres_placeholders_in_order() -> None:
    assert q.numbered("a = ? AND b = ? LIMIT ?") == "a = $1 AND b = $2 LIMIT $3"
    assert q.numbered(q.WRITES[next(iter(q.WRITES))]).count("$13") == 1


def test_the_postgres_upsert_parameters_are_the_row_in_column_order_with_floats() -> None:
    """The PostgreSQL store spells a task row's parameters out (#24): they must stay the
    row's fields in COLUMNS order, its times as floats (asyncpg's float8 wants them)."""
    pytest.importorskip("asyncpg")
    from tocsin.stores.postgres import _params

    row = TaskRow(
        kind="k", identity="i", id="t", name="n", payload=b"p", due=5, every=2,
        attempts=1, max_retries=3, created_at=4, state="pending", last_error="e",
        timeout=7, cron="* * * * * ?", timezone="UTC", policy=b"x",
    )  # fmt: skip
    params = _params(UpsertTask(row))
    assert params == msgspec.structs.astuple(row)
    floats = {"due", "every", "created_at", "timeout"}
    for name, value in zip(TaskRow.__struct_fields__, params, strict=True):
        assert (type(value) is float) == (name in floats), name
