"""The shared SQL of the database stores."""

from __future__ import annotations

from tocsin.stores import TaskRow
from tocsin.stores import _queries as q


def test_task_columns_are_in_task_row_field_order() -> None:
    # Rows are built positionally (TaskRow(*row)) and written with astuple(row).
    assert tuple(c.strip() for c in q.COLUMNS.split(",")) == TaskRow.__struct_fields__


def test_numbered_turns_question_marks_into_postgres_placeholders_in_order() -> None:
    assert q.numbered("a = ? AND b = ? LIMIT ?") == "a = $1 AND b = $2 LIMIT $3"
    assert q.numbered(q.WRITES[next(iter(q.WRITES))]).count("$13") == 1
