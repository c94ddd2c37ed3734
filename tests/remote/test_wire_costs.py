# SPDX-License-Identifier: Apache-2.0
"""Remote frames decode in linear time too (docs/security.md, "Decoding costs what it reads").

msgspec builds a registered message's sets, frozensets and dicts (and an ``Any`` field's
tuple-keyed maps) before any hook runs; a peer could send thousands of members with one
hash. Each attack below is refused with ``CostlyDecodeError`` (never timed), its honest
twin of the same size decodes, and a node that receives one closes the connection.
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.eventually import eventually
from tests.remote.remote_support import FakePID, config, host_of, make_node
from tests.test_codec_costs import MODULUS, colliding_pairs

from tocsin import CodecError
from tocsin._codec import HASH_CHECK_FROM, SCAN_ABOVE, CostlyDecodeError
from tocsin.remote._envelopes import Tell
from tocsin.remote._messages import MessageRegistry, WireCodec
from tocsin.remote._node import RemoteNode

COUNT = 2000


class Pairs(msgspec.Struct, tag=True):
    members: set[tuple[int, int]]


class Loose(msgspec.Struct, tag=True):
    payload: Any


class Ids(msgspec.Struct, tag=True):
    ids: frozenset[uuid.UUID] = frozenset()
    owners: dict[uuid.UUID, int] = {}


class Table(msgspec.Struct, tag=True):
    cells: dict[tuple[int, int], int]


@dataclasses.dataclass(frozen=True)
class Nested:
    groups: list[set[tuple[int, int]] | None]


class Small(msgspec.Struct, tag=True):
    n: int
    text: str


def codec() -> WireCodec:
    classes = (Pairs, Loose, Ids, Table, Nested, Small)
    return WireCodec(MessageRegistry(classes), FakePID, FakePID)


def colliding_uuids(count: int) -> list[uuid.UUID]:
    """UUIDs hash as their 128-bit int, so ints equal modulo 2**61 - 1 collide."""
    return [uuid.UUID(int=12345 + k * MODULUS) for k in range(1, count + 1)]


def sent(c: WireCodec, value: object) -> tuple[str, bytes]:
    name, data = c.encode(value)
    assert len(data) > SCAN_ABOVE
    return name, data


def test_a_set_of_colliding_tuples_is_refused_and_its_honest_twin_decodes() -> None:
    c = codec()
    assert len({hash(p) for p in colliding_pairs(COUNT)}) == 1
    with pytest.raises(CostlyDecodeError, match="share one hash"):
        c.decode(*sent(c, Pairs(set(colliding_pairs(COUNT)))))
    honest = Pairs({(i, i * 7) for i in range(COUNT)})
    assert c.decode(*sent(c, honest)) == honest


def test_colliding_uuids_are_refused_as_set_members_and_as_dict_keys() -> None:
    # On the wire they are strings (randomized hashes): only converting each to the
    # field's type, as the typed decoder would, shows the collision.
    c = codec()
    ids = colliding_uuids(COUNT)
    assert len({hash(u) for u in ids}) == 1
    with pytest.raises(CostlyDecodeError):
        c.decode(*sent(c, Ids(ids=frozenset(ids))))
    with pytest.raises(CostlyDecodeError):
        c.decode(*sent(c, Ids(owners=dict.fromkeys(ids, 1))))
    honest = Ids(ids=frozenset(uuid.UUID(int=i) for i in range(COUNT)))
    assert c.decode(*sent(c, honest)) == honest


def test_a_big_map_keyed_by_arrays_is_refused_before_msgspec_builds_it() -> None:
    c = codec()
    pairs = colliding_pairs(COUNT)
    with pytest.raises(CostlyDecodeError, match="tuple-keyed"):
        c.decode(*sent(c, Loose(dict.fromkeys(pairs, 0))))
    with pytest.raises(CostlyDecodeError, match="list of pairs"):
        c.decode(*sent(c, Table(dict.fromkeys(pairs, 0))))
    # Fewer than HASH_CHECK_FROM such keys cost nothing, whatever their hashes.
    few = Loose([dict.fromkeys(pairs[: HASH_CHECK_FROM - 1], 0), "x" * SCAN_ABOVE])
    assert c.decode(*sent(c, few)) == few


def test_a_big_any_field_with_scalar_keys_and_lists_decodes() -> None:
    c = codec()
    value = Loose({"ints": {i: [i, str(i)] for i in range(COUNT)}, "b": b"x" * 100})
    assert c.decode(*sent(c, value)) == value


def test_colliding_sets_nested_in_a_dataclass_union_are_refused() -> None:
    c = codec()
    bad = Nested([None, {(1, 2)}, set(colliding_pairs(COUNT))])
    with pytest.raises(CostlyDecodeError):
        c.decode(*sent(c, bad))
    honest = Nested([None, {(i, -i) for i in range(COUNT)}])
    assert c.decode(*sent(c, honest)) == honest


def test_a_registered_message_inside_a_codec_value_is_guarded_too() -> None:
    c = codec()
    name, data = c.encode([Pairs(set(colliding_pairs(COUNT)))])
    assert name == ""
    with pytest.raises(CostlyDecodeError):
        c.decode(name, data)


def test_small_frames_and_classes_without_hashed_containers_skip_the_guard() -> None:
    c = codec()
    assert c.decode(*c.encode(Small(1, "x"))) == Small(1, "x")
    big = Small(2, "y" * (4 * SCAN_ABOVE))
    assert c.decode(*c.encode(big)) == big
    assert "Small" not in c._guarded  # a str-keyed Struct: msgspec builds nothing hashed


def test_a_malformed_big_frame_still_says_why() -> None:
    c = codec()
    _, data = sent(c, Pairs({(i, i) for i in range(COUNT)}))
    with pytest.raises(CodecError, match="cannot decode message 'Pairs'") as info:
        c.decode("Pairs", data[:-3])
    assert not isinstance(info.value, CostlyDecodeError)


@pytest.mark.parametrize(
    "annotation", [re.Pattern[str], list[re.Pattern[bytes]] | None, dict[str, re.Pattern[str]]]
)
def test_a_re_pattern_field_is_refused_at_registration(annotation: Any) -> None:
    struct = msgspec.defstruct("WithPattern", [("p", annotation)])
    with pytest.raises(TypeError, match=r"re\.Pattern.*source string"):
        MessageRegistry([struct])
    data = dataclasses.make_dataclass("DataPattern", [("p", annotation)])
    with pytest.raises(TypeError, match=r"re\.Pattern"):
        MessageRegistry([data])


def tell(node: RemoteNode, message: object) -> bytes:
    name, payload = node.codec.encode(message)
    return node.encode(Tell("/user/p", "", "", name, msgspec.Raw(payload)))


async def test_a_node_closes_the_connection_that_sends_a_colliding_set() -> None:
    messages = [Pairs, Small]
    receiver = make_node(config(messages=messages), "r")
    sender = make_node(config(messages=messages), "s")
    await receiver.start()
    await sender.start()
    try:
        endpoint = sender.endpoint(receiver.node_address)
        host = host_of(receiver)
        assert endpoint.send(tell(sender, Small(1, "ok")), None)
        await host.wait_tells(1)
        assert host.tells[0][3] == Small(1, "ok")

        attack = tell(sender, Pairs(set(colliding_pairs(COUNT))))
        assert len(attack) > SCAN_ABOVE
        assert endpoint.send(attack, None)
        metrics = receiver.metrics
        await eventually(lambda: metrics().protocol_errors == 1, "connection closed")
        assert metrics().undecodable == 1
        assert len(host.tells) == 1
    finally:
        await sender.stop()
        await receiver.stop()


class Mixed(msgspec.Struct, tag=True):
    members: set[tuple[int, int]]
    table: dict[int, list[str]]
    loose: Any
    pad: str


scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.text())
untyped = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=20,
)


@given(
    members=st.sets(st.tuples(st.integers(-(2**40), 2**40), st.integers(-5, 5)), max_size=200),
    table=st.dictionaries(st.integers(-(2**63), 2**63 - 1), st.lists(st.text()), max_size=100),
    loose=untyped,
)
@settings(max_examples=50, deadline=None)
def test_honest_big_frames_of_a_guarded_class_decode_unchanged(
    members: set[tuple[int, int]], table: dict[int, list[str]], loose: Any
) -> None:
    c = WireCodec(MessageRegistry([Mixed]), FakePID, FakePID)
    value = Mixed(members, table, loose, "p" * SCAN_ABOVE)
    assert c.decode(*sent(c, value)) == value
