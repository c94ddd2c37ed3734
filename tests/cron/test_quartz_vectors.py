# SPDX-License-Identifier: Apache-2.0
"""Every row of the Quartz 2.3.2 conformance vectors (``../shared/cron/quartz_vectors.tsv``).

One test per row, with the line number as its id. The file is found through
``TOCSIN_QUARTZ_VECTORS`` or above the repository (see ``cron_vectors.py``). The few
five-field rows it once had now live in ``unix_vectors.tsv`` (``test_unix_vectors.py``).
"""

from __future__ import annotations

import pytest
from tests.cron.cron_vectors import Row, check_row, load_rows, missing, vectors_path

_NAME, _VARIABLE = "quartz_vectors.tsv", "TOCSIN_QUARTZ_VECTORS"
ROWS = load_rows(vectors_path(_NAME, _VARIABLE))


def test_the_vector_file_is_present_and_complete() -> None:
    if vectors_path(_NAME, _VARIABLE) is None:
        missing(_NAME, _VARIABLE)
    assert len(ROWS) > 2000
    assert {row.expect for row in ROWS} == {"OK", "INVALID", "EITHER"}
    # Five fields are Unix cron now; those rows are in unix_vectors.tsv.
    assert not [row.line for row in ROWS if len(row.expr.split()) == 5]


@pytest.mark.parametrize("row", ROWS, ids=[f"line{row.line}" for row in ROWS])
def test_row_agrees_with_quartz(row: Row) -> None:
    check_row(row, ("quartz", "macro"))
