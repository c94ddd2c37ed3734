# SPDX-License-Identifier: Apache-2.0
"""The durable payload codec: exact round trips, early typed refusals, hostile bytes."""

from __future__ import annotations

import collections
import contextlib
import enum
import math
import re
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.strategies import codec_values

from tocsin._codec import MAX_DEPTH, decode, encode
from tocsin.errors import CodecError


def assert_same(a: Any, b: Any, path: str = "v") -> None:
    """Equal *and* of identical types all the way down (``==`` alone says 1 == True)."""
    assert type(a) is type(b), f"{path}: {type(a)} != {type(b)}"
    if isinstance(a, float):
        assert (math.isnan(a) and math.isnan(b)) or (a == b and str(a) == str(b)), path
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{path}[{i}]")
    elif isinstance(a, dict):
        assert list(a) == list(b), path
        for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True):
            assert_same(ka, kb, f"{path}<key>")
            assert_same(va, vb, f"{path}[{ka!r}]")
    elif isinstance(a, datetime):
        assert a == b, path
        assert a.utcoffset() == b.utcoffset(), path
        assert a.fold == b.fold, path
        assert (a.tzinfo is None) == (b.tzinfo is None), path
        assert a.replace(tzinfo=None) == b.replace(tzinfo=None), path
    elif isinstance(a, set | frozenset):
        assert a == b, path
        for x in a:
            assert any(type(x) is type(y) and x == y for y in b), f"{path}<item {x!r}>"
    else:
        assert a == b, path


@settings(max_examples=300)
@given(codec_values)
def test_any_codec_safe_value_round_trips_with_exact_types(value: Any) -> None:
    assert_same(value, decode(encode(value)))


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        False,
        0,
        2**64 - 1,
        2**64,
        -(2**63),
        -(2**63) - 1,
        10**100,
        -(10**100),
        1.5,
        float("inf"),
        float("-inf"),
        -0.0,
        "",
        "naïve ☃ 𝄞",
        b"\x00\xff",
        [],
        (),
        (1,),
        {},
        set(),
        frozenset(),
        [(1, 2), {3}, frozenset({4}), {"k": (5,)}],
        {1: "int key", (1, "a"): "tuple key", frozenset({2}): "fs key", None: 0, b"b": 1},
        {True: "bool key stays bool"},
        datetime(2024, 1, 2, 3, 4, 5, 6),
        datetime(2024, 1, 2, tzinfo=UTC),
        datetime(2024, 1, 2, tzinfo=timezone(timedelta(hours=-3, minutes=-30, seconds=-7))),
        datetime(2024, 11, 3, 1, 30, fold=1),
        date(1999, 12, 31),
    ],
    ids=repr,
)
def test_examples_round_trip_with_exact_types(value: Any) -> None:
    assert_same(value, decode(encode(value)))


def test_nan_round_trips() -> None:
    out = decode(encode([float("nan")]))
    assert isinstance(out, list)
    assert math.isnan(out[0])


def test_zoneinfo_datetime_keeps_instant_and_offset_but_not_the_zone_name() -> None:
    dt = datetime(2024, 7, 1, 12, tzinfo=ZoneInfo("Europe/Paris"))
    out = decode(encode(dt))
    assert isinstance(out, datetime)
    assert out == dt
    assert out.utcoffset() == timedelta(hours=2)
    assert out.tzinfo == timezone(timedelta(hours=2))


def test_shared_subvalue_is_fine_and_decodes_as_two_copies() -> None:
    shared = [1, 2]
    out = decode(encode({"a": shared, "b": shared}))
    assert out == {"a": [1, 2], "b": [1, 2]}


class _Point(NamedTuple):
    x: int


class _Color(enum.IntEnum):
    RED = 1


def _fn() -> None: ...


class _Custom:
    def __reduce__(self) -> Any:
        return (print, ("pwned",))


@pytest.mark.parametrize(
    ("value", "where", "what"),
    [
        ({"a": [1, 2, _fn]}, "payload['a'][2]", "<class 'function'>"),
        ([_Custom()], "payload[0]", "_Custom"),
        (object(), "payload", "<class 'object'>"),
        ({"k": {1: {2.5: [lambda: 0]}}}, "payload['k'][1][2.5][0]", "function"),
        ({(1, 2): {object()}}, "payload[(1, 2)]<item #0>", "object"),
        ({1: 0, _fn: 1}, "payload<key #1>", "function"),
        (collections.OrderedDict(a=1), "payload", "subclass of dict"),
        (collections.defaultdict(list), "payload", "subclass of dict"),
        ([_Point(1)], "payload[0]", "subclass of tuple"),
        (_Color.RED, "payload", "subclass of int"),
        (bytearray(b"x"), "payload", "bytearray"),
        (memoryview(b"x"), "payload", "memoryview"),
        (1 + 2j, "payload", "complex"),
        (timedelta(1), "payload", "timedelta"),
        ({"p": re.compile("a+")}, "payload['p']", "re.Pattern"),
    ],
)
def test_non_codec_safe_values_raise_codec_error_naming_type_and_place(
    value: Any, where: str, what: str
) -> None:
    with pytest.raises(CodecError) as info:
        encode(value)
    message = str(info.value)
    assert message.startswith(f"{where}: cannot encode"), message
    assert what in message
    assert isinstance(info.value, TypeError)


def test_circular_reference_is_detected() -> None:
    loop: list[Any] = [1]
    loop.append({"again": loop})
    with pytest.raises(CodecError, match=r"payload\[1\]\['again'\]: circular reference"):
        encode(loop)


def test_nesting_deeper_than_max_depth_is_refused() -> None:
    value: Any = 0
    for _ in range(MAX_DEPTH + 1):
        value = [value]
    with pytest.raises(CodecError, match="nested deeper"):
        encode(value)


def test_error_uses_the_given_name() -> None:
    with pytest.raises(CodecError, match=r"^storage\['k'\]: cannot encode"):
        encode(object(), name="storage['k']")


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\xc1",
        b"\x92\x01",
        b"\xd4\x63\x00",  # unknown extension code
        b"\xd4\x01\x05",  # tuple extension holding an int
        b"\x91" * 100_000 + b"\xc0",  # deep native nesting
        msgspec.msgpack.encode(msgspec.msgpack.Ext(6, msgspec.msgpack.encode([1, 2]))),
        msgspec.msgpack.encode(
            msgspec.msgpack.Ext(6, msgspec.msgpack.encode([2024, 13, 1, 0, 0, 0, 0, 0, None]))
        ),
        msgspec.msgpack.encode(
            msgspec.msgpack.Ext(6, msgspec.msgpack.encode([2024, 1, 1, 0, 0, 0, 0, 0, 10**12]))
        ),
        msgspec.msgpack.encode(msgspec.msgpack.Ext(2, msgspec.msgpack.encode([[1]]))),
        msgspec.msgpack.encode(msgspec.msgpack.Ext(4, msgspec.msgpack.encode([1]))),
        msgspec.msgpack.encode(msgspec.msgpack.Ext(7, msgspec.msgpack.encode(["2024", 1, 1]))),
    ],
)
def test_malformed_bytes_raise_codec_error_only(data: bytes) -> None:
    with pytest.raises(CodecError):
        decode(data)


def test_deeply_nested_extensions_are_refused_not_a_recursion_crash() -> None:
    data = msgspec.msgpack.encode([])
    for _ in range(MAX_DEPTH + 5):
        data = msgspec.msgpack.encode(msgspec.msgpack.Ext(1, msgspec.msgpack.encode([1]) + data))
    data = msgspec.msgpack.encode(msgspec.msgpack.Ext(1, b"\x91" + data[:0] + b"\xc0"))
    deep = b"\xc0"
    for _ in range(MAX_DEPTH + 5):
        inner = b"\x91" + deep
        deep = msgspec.msgpack.encode(msgspec.msgpack.Ext(1, inner))
    with pytest.raises(CodecError, match=r"too deep|deeper"):
        decode(deep)


@settings(max_examples=500)
@given(st.binary(max_size=64))
def test_random_bytes_decode_or_raise_codec_error(data: bytes) -> None:
    with contextlib.suppress(CodecError):
        decode(data)


def test_decoding_never_imports_or_calls_anything() -> None:
    # Pickle's opcode for "call a global" is meaningless to msgpack: it is just bad bytes.
    import pickle  # noqa: TID251 - to make the hostile bytes, never to read any

    with pytest.raises(CodecError):
        decode(pickle.dumps(_Custom.__reduce__))
