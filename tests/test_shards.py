# SPDX-License-Identifier: Apache-2.0
"""The suite's split into shards (tests/shards.py): every file in exactly one shard."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.shards import PER_TEST, Shard, files_of, parse, split


def test_parse_reads_k_of_n() -> None:
    assert parse("2/4") == Shard(2, 4)
    assert parse(" 1 / 1 ") == Shard(1, 1)


@pytest.mark.parametrize("spec", ["", "0/3", "4/3", "2", "a/b", "1/0", "-1/2"])
def test_parse_refuses_what_is_not_k_of_n(spec: str) -> None:
    with pytest.raises(ValueError, match="expected 'k/n'") as caught:
        parse(spec)
    assert repr(spec) in str(caught.value)


@given(
    st.dictionaries(st.text("abcdef/_.", min_size=1, max_size=8), st.integers(1, 50), max_size=30),
    st.integers(1, 6),
)
def test_every_file_lands_in_exactly_one_shard(counts: dict[str, int], count: int) -> None:
    shards = split(counts, count, weights={})
    assert len(shards) == count
    placed = [path for shard in shards for path in shard]
    assert sorted(placed) == sorted(counts)
    assert split(dict(reversed(counts.items())), count, weights={}) == shards


def test_heaviest_first_onto_the_lightest_shard() -> None:
    d_tests = round(4.0 / PER_TEST)  # an unlisted file of about 4 s
    counts = {"a.py": 1, "b.py": 1, "c.py": 1, "d.py": d_tests}
    weights = {"a.py": 10.0, "b.py": 6.0, "c.py": 5.0}
    # a (10), then b (6) on the other, c (5) onto b's (6 < 10), d (~4) onto a's (10 < 11).
    assert split(counts, 2, weights) == [{"a.py", "d.py"}, {"b.py", "c.py"}]


def test_files_of_counts_tests_per_file() -> None:
    assert files_of(["x.py", "y.py", "x.py"]) == {"x.py": 2, "y.py": 1}
