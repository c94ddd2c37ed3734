# SPDX-License-Identifier: Apache-2.0
"""Every row of the Unix cron vectors (``../shared/cron/unix_vectors.tsv``, by cronsim).

One test per row, with the line number as its id. The file is found through
``TOCSIN_UNIX_VECTORS`` or above the repository (see ``cron_vectors.py``); required in
CI like the Quartz vectors.
"""

from __future__ import annotations

import pytest
from tests.cron.cron_vectors import Row, check_row, load_rows, missing, vectors_path

_NAME, _VARIABLE = "unix_vectors.tsv", "TOCSIN_UNIX_VECTORS"
ROWS = load_rows(vectors_path(_NAME, _VARIABLE))


def test_the_vector_file_is_present_and_complete() -> None:
    if vectors_path(_NAME, _VARIABLE) is None:
        missing(_NAME, _VARIABLE)
    assert len(ROWS) > 500
    assert {row.expect for row in ROWS} <= {"OK", "INVALID", "EITHER"}
    assert sum(row.expect == "OK" for row in ROWS) > 500


@pytest.mark.parametrize("row", ROWS, ids=[f"line{row.line}" for row in ROWS])
def test_row_agrees_with_debian_cron(row: Row) -> None:
    check_row(row, ("unix", "macro"))
