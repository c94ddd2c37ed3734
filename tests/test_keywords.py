# SPDX-License-Identifier: Apache-2.0
"""Options are keyword-only; the positional form works for one release, with a warning."""

from __future__ import annotations

from typing import Any

import pytest

from tocsin import Cluster, Remoting

SECRET = b"0123456789abcdef"


def test_remoting_by_keyword_is_silent_and_by_position_warns_naming_the_keywords() -> None:
    by_keyword = Remoting(listen="tcp://127.0.0.1:0", secret=SECRET)
    make: Any = Remoting
    with pytest.warns(DeprecationWarning, match=r"Remoting\(listen=\.\.\., secret=\.\.\.\)"):
        by_position = make("tcp://127.0.0.1:0", SECRET)
    assert by_position == by_keyword


def test_cluster_keeps_its_coordinator_positional_and_warns_for_the_rest() -> None:
    assert Cluster("memory://k", lease=3.0).lease == 3.0
    make: Any = Cluster
    with pytest.warns(DeprecationWarning, match=r"Cluster\(lease=\.\.\.\)"):
        assert make("memory://k", 3.0) == Cluster("memory://k", lease=3.0)


def test_an_option_given_twice_or_too_many_is_a_type_error() -> None:
    make: Any = Cluster
    with pytest.raises(TypeError, match=r"got \['lease'\] by position and by keyword"):
        make("memory://k", 3.0, lease=4.0)
    with pytest.raises(TypeError, match="takes at most"):
        make("memory://k", *range(20))
