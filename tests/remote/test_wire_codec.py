# SPDX-License-Identifier: Apache-2.0
"""What crosses the wire: codec-safe values, PIDs, registered classes; nothing else."""

from __future__ import annotations

import dataclasses
import os
from datetime import UTC, datetime

import msgspec
import pytest
from remote_support import FakePID, Note, Ping

from tocsin import CodecError
from tocsin.remote._messages import MESSAGE_CODE, MessageRegistry, WireCodec


def codec(*classes: type) -> WireCodec:
    return WireCodec(MessageRegistry(classes or (Ping, Note)), FakePID, FakePID)


def test_registered_struct_and_dataclass_round_trip_with_exact_field_types() -> None:
    c = codec()
    value = {
        "ping": Ping(7),
        "note": Note("hi", (1, 2, 3)),
        "set": {1, 2},
        "when": datetime(2026, 1, 1, tzinfo=UTC),
        "pid": FakePID("tocsin://a@127.0.0.1:1/user/x"),
        (1, 2): [Note("nested", ())],
    }
    assert c.decode(c.encode(value)) == value
    assert type(c.decode(c.encode(Note("t", (1,)))).items) is tuple


def test_pids_inside_messages_are_rebuilt_by_the_node_resolver() -> None:
    seen: list[str] = []

    def resolve(text: str) -> object:
        seen.append(text)
        return FakePID(text.upper())

    c = WireCodec(MessageRegistry([Note]), FakePID, resolve)
    out = c.decode(c.encode([FakePID("tocsin://a@h:1/user/x")]))
    assert out == [FakePID("TOCSIN://A@H:1/USER/X")]
    assert seen == ["tocsin://a@h:1/user/x"]


@dataclasses.dataclass
class Unregistered:
    x: int


@pytest.mark.parametrize(
    "value", [Unregistered(1), [1, Unregistered(2)], object(), lambda: 1, {"k": {1: os}}]
)
def test_a_value_that_cannot_cross_is_a_codec_error_naming_what_is_allowed(value: object) -> None:
    with pytest.raises(CodecError, match="registered messages \\(Note, Ping\\)"):
        codec().encode(value)


def test_a_subclass_of_a_registered_class_is_not_registered() -> None:
    sub = type("SubPing", (Ping,), {})
    with pytest.raises(CodecError):
        codec().encode(sub(1))


def test_unknown_wire_name_is_a_codec_error_and_imports_nothing() -> None:
    sender = codec(Ping, Note)
    receiver = codec(Ping)
    with pytest.raises(CodecError, match="'Note' is not a registered message on this node"):
        receiver.decode(sender.encode(Note("x")))
    # A peer naming a module attribute gets nothing looked up or imported.
    hostile = msgspec.msgpack.encode(
        msgspec.msgpack.Ext(MESSAGE_CODE, msgspec.msgpack.encode(["os.system", "echo hi"]))
    )
    with pytest.raises(CodecError, match="not a registered message"):
        receiver.decode(hostile)


def test_field_count_mismatch_is_a_codec_error() -> None:
    hostile = msgspec.msgpack.encode(
        msgspec.msgpack.Ext(MESSAGE_CODE, msgspec.msgpack.encode(["Ping", 1, 2]))
    )
    with pytest.raises(CodecError, match="2 fields sent, this node's class has 1"):
        codec().decode(hostile)


def test_a_dataclass_post_init_that_rejects_decoded_fields_is_a_codec_error() -> None:
    @dataclasses.dataclass
    class Positive:
        n: int

        def __post_init__(self) -> None:
            if self.n <= 0:
                raise ValueError("n must be positive")

    c = codec(Positive)
    data = msgspec.msgpack.encode(
        msgspec.msgpack.Ext(MESSAGE_CODE, msgspec.msgpack.encode(["Positive", -1]))
    )
    with pytest.raises(CodecError, match="n must be positive"):
        c.decode(data)


def test_cycles_through_a_registered_message_are_rejected() -> None:
    @dataclasses.dataclass
    class Box:
        items: list[object]

    box = Box([])
    box.items.append(box)
    with pytest.raises(CodecError, match="circular"):
        codec(Box).encode(box)
