# SPDX-License-Identifier: Apache-2.0
"""Option values of every tier: the delivery enum (strings still accepted) and the
bounded pause note."""

from __future__ import annotations

import pytest

import tocsin
from tocsin.triggers import MAX_NOTE_BYTES, Delivery, check_delivery, check_note


def test_delivery_is_a_str_enum_and_its_strings_still_work() -> None:
    assert tocsin.Delivery is Delivery
    assert check_delivery("at_least_once") is Delivery.AT_LEAST_ONCE
    assert check_delivery(Delivery.AT_MOST_ONCE) is Delivery.AT_MOST_ONCE
    assert str(Delivery.AT_LEAST_ONCE) == "at_least_once"
    assert "at_least_once" in {Delivery.AT_LEAST_ONCE}  # equal, and hashes alike


@pytest.mark.parametrize("bad", ["exactly_once", "", None, 1])
def test_an_unknown_delivery_is_a_value_error_naming_the_choices(bad: object) -> None:
    with pytest.raises(ValueError, match=r"`delivery` must be Delivery.AT_MOST_ONCE or"):
        check_delivery(bad)


def test_a_note_is_bounded_in_utf8_bytes() -> None:
    assert check_note(None) is None
    assert check_note("x" * MAX_NOTE_BYTES) == "x" * MAX_NOTE_BYTES
    with pytest.raises(ValueError, match="at most 4,096 bytes"):
        check_note("€" * 1366)  # 4,098 bytes in UTF-8
    with pytest.raises(TypeError, match="`note` must be a str or None"):
        check_note(42)
