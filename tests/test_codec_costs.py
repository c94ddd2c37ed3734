# SPDX-License-Identifier: Apache-2.0
"""Decoding costs what it reads: nothing compiled, nothing quadratic (docs/security.md).

Each test is an attack from the security review, decoded through the public codec: it is
either refused with ``CodecError`` or decoded, and what would have made it slow (the regex
compiler, a set built from colliding members) is shown not to run, never timed.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.strategies import codec_values
from tests.test_codec import assert_same

from tocsin import _codec
from tocsin._codec import HASH_CHECK_FROM, MAX_EQUAL_HASHES, SCAN_ABOVE, Codec, decode, encode
from tocsin.errors import CodecError

Ext = msgspec.msgpack.Ext
pack = msgspec.msgpack.encode

# ints equal modulo 2**61 - 1 share one hash (CPython's numeric hash); beyond 64 bits they
# travel as the codec's big-int extension, so any number of them can be sent.
MODULUS = 2**61 - 1
P1, P2, P5 = 11400714785074694791, 14029467366897019727, 2870177450012600261
U64 = 2**64


def colliding_pairs(count: int, target: int = 12345) -> list[tuple[int, int]]:
    """``count`` distinct 2-tuples of small ints with one hash (CPython's xxHash tuple hash
    is invertible lane by lane, so the second item can be solved for)."""

    def rotl(x: int) -> int:
        return ((x << 31) | (x >> 33)) % U64

    def rotr(x: int) -> int:
        return ((x >> 31) | (x << 33)) % U64

    inv1, inv2 = pow(P1, -1, U64), pow(P2, -1, U64)
    pairs: list[tuple[int, int]] = []
    first = 1
    while len(pairs) < count:
        acc = rotl((P5 + hash(first) * P2) % U64) * P1 % U64
        lane = (rotr(target * inv1 % U64) - acc) * inv2 % U64
        signed = lane - U64 if lane >= 2**63 else lane
        if -MODULUS < signed < MODULUS and signed != -1:
            pairs.append((first, signed))
        first += 1
    return pairs


def compiled(source: str, flags: int = 0) -> bool:
    """Whether ``re`` compiled this pattern in this process (its cache remembers it)."""
    cache: dict[Any, Any] = re._cache  # type: ignore[attr-defined]
    return (str, source, flags) in cache


def test_an_8kb_pathological_regex_payload_is_refused_without_compiling() -> None:
    # Nested groups and counted repeats: the shape that took seconds to compile.
    source = ("(?:(?:a{1,100}){1,100}|" * 400)[:8192]
    data = pack(["job", Ext(8, pack([source, 0]))])
    assert len(data) > 8192
    with pytest.raises(CodecError, match=r"re\.Pattern \(extension 8\)"):
        decode(data)
    assert not compiled(source)


def test_a_regex_payload_cannot_set_re_debug(capsys: pytest.CaptureFixture[str]) -> None:
    source = "tocsin-never-compiled+"
    with pytest.raises(CodecError, match="no longer decodes"):
        decode(pack(Ext(8, pack([source, re.DEBUG]))))
    assert capsys.readouterr() == ("", "")
    assert not compiled(source, re.DEBUG)


def test_encoding_a_pattern_is_refused_and_names_the_source_string_way() -> None:
    with pytest.raises(CodecError, match=r"payload\[0\]: cannot encode a re.Pattern.*source"):
        encode([re.compile("a+")])


def test_the_wire_codec_refuses_a_pattern_too() -> None:
    with pytest.raises(CodecError, match=r"re\.Pattern"):
        Codec().decode(pack(Ext(8, pack(["x", 0]))))


def _set_ext(items: list[Any], code: int = 2) -> bytes:
    return pack(Ext(code, pack(items)))


def test_a_set_of_colliding_ints_is_refused() -> None:
    members = [1 + k * MODULUS for k in range(5_000)]
    assert len({hash(m) for m in members}) == 1
    # The payload as a peer would craft it (encode itself would build the set first).
    items = [Ext(5, m.to_bytes((m.bit_length() + 8) // 8, "big", signed=True)) for m in members]
    for code in (2, 3):
        with pytest.raises(CodecError, match="share one hash"):
            decode(_set_ext(items, code))


def test_a_set_and_dict_of_colliding_tuples_are_refused() -> None:
    pairs = colliding_pairs(2_000)
    assert len({hash(p) for p in pairs}) == 1
    tuples = [Ext(1, pack(list(p))) for p in pairs]
    with pytest.raises(CodecError, match="share one hash"):
        decode(_set_ext(tuples))
    flat: list[Any] = []
    for t in tuples:
        flat += [t, 0]
    with pytest.raises(CodecError, match="share one hash"):
        decode(pack(Ext(4, pack(flat))))


def test_a_native_map_with_colliding_tuple_keys_is_refused_before_msgspec_builds_it() -> None:
    pairs = colliding_pairs(2_000)
    body = b"".join(pack(list(p)) + b"\x00" for p in pairs)
    data = b"\xdf" + len(pairs).to_bytes(4, "big") + body
    assert len(data) > SCAN_ABOVE
    with pytest.raises(CodecError, match="key that is not a str"):
        decode(data)
    # The same, inside an extension (a tuple holding it) and inside a str-keyed map.
    with pytest.raises(CodecError, match="key that is not a str"):
        decode(pack(Ext(1, b"\x91" + data)))
    with pytest.raises(CodecError, match="key that is not a str"):
        decode(b"\x81\xa1k" + data)


def test_sets_with_a_few_equal_hashes_decode() -> None:
    # -1 and -2 share a hash in CPython; a large set holding both is legitimate.
    value = set(range(-2, HASH_CHECK_FROM * 10)) | {(i, i) for i in range(100)}
    assert decode(encode(value)) == value
    few = [1 + k * MODULUS for k in range(MAX_EQUAL_HASHES)] + list(range(HASH_CHECK_FROM))
    assert decode(encode(set(few))) == set(few)


@settings(max_examples=100, deadline=None)
@given(codec_values)
def test_large_inputs_are_scanned_and_every_encoding_passes_the_scan(value: Any) -> None:
    padded = [value, "x" * SCAN_ABOVE]
    assert_same(padded, decode(encode(padded)))


@settings(max_examples=300)
@given(st.binary(max_size=64), st.sampled_from([b"\x00", b"\xa1", b"\x91", b"\xc0"]))
def test_large_random_bytes_decode_or_raise_codec_error_only(head: bytes, fill: bytes) -> None:
    with contextlib.suppress(CodecError):
        decode(head + fill * SCAN_ABOVE)


def test_large_truncated_input_is_a_codec_error() -> None:
    data = encode({"k": ["x" * SCAN_ABOVE, (1, 2), {3}]})
    for cut in (1, 5, len(data) // 2, len(data) - 1):
        with pytest.raises(CodecError):
            decode(data[:cut] if cut > SCAN_ABOVE else data[:cut] + b"\x00" * SCAN_ABOVE)


def test_module_constants_are_the_documented_bounds() -> None:
    assert (_codec.SCAN_ABOVE, _codec.HASH_CHECK_FROM, _codec.MAX_EQUAL_HASHES) == (8192, 64, 32)
