# SPDX-License-Identifier: Apache-2.0
"""What crosses the wire: codec-safe values, PIDs, registered classes; nothing else."""

from __future__ import annotations

import dataclasses
import os
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest
from tests.remote.remote_support import FakePID, Note, Ping

from tocsin import CodecError
from tocsin.remote._messages import MESSAGE_CODE, MessageRegistry, WireCodec


def codec(*classes: type, resolve: Any = FakePID) -> WireCodec:
    return WireCodec(MessageRegistry(classes or (Ping, Note)), FakePID, resolve)


def round_trip(c: WireCodec, value: object) -> object:
    return c.decode(*c.encode(value))


class WithPid(msgspec.Struct):
    who: FakePID
    tags: frozenset[str]
    when: datetime


def test_a_registered_message_is_named_and_encoded_by_msgspec() -> None:
    c = codec()
    name, payload = c.encode(Ping(7))
    assert name == "Ping"
    assert msgspec.msgpack.decode(payload) == {"type": "Ping", "n": 7}
    assert round_trip(c, Note("hi", (1, 2, 3))) == Note("hi", (1, 2, 3))
    assert type(round_trip(c, Note("t", (1,))).items) is tuple  # type: ignore[attr-defined]


def test_registered_fields_are_decoded_by_their_annotations_pids_included() -> None:
    c = codec(WithPid)
    value = WithPid(
        FakePID("tocsin://a@h:1/user/x"), frozenset({"a"}), datetime(2026, 1, 1, tzinfo=UTC)
    )
    out = round_trip(c, value)
    assert out == value
    assert type(out.who) is FakePID


def test_codec_values_keep_exact_types_and_may_hold_pids_and_registered_messages() -> None:
    c = codec()
    value = {
        "ping": Ping(7),
        "set": {1, 2},
        "when": datetime(2026, 1, 1, tzinfo=UTC),
        "pid": FakePID("tocsin://a@127.0.0.1:1/user/x"),
        (1, 2): [Note("nested", ())],
    }
    name, _ = c.encode(value)
    assert name == ""
    assert round_trip(c, value) == value


def test_pids_are_rebuilt_by_the_node_resolver() -> None:
    seen: list[str] = []

    def resolve(text: str) -> object:
        seen.append(text)
        return FakePID(text.upper())

    c = codec(resolve=resolve)
    assert round_trip(c, [FakePID("tocsin://a@h:1/user/x")]) == [FakePID("TOCSIN://A@H:1/USER/X")]
    assert seen == ["tocsin://a@h:1/user/x"]


@dataclasses.dataclass
class Unregistered:
    x: int


@pytest.mark.parametrize(
    "value", [Unregistered(1), [1, Unregistered(2)], object(), lambda: 1, {"k": {1: os}}]
)
def test_a_value_that_cannot_cross_is_a_codec_error_naming_what_is_allowed(value: object) -> None:
    with pytest.raises(CodecError, match=r"registered messages \(Note, Ping\)"):
        codec().encode(value)


def test_a_registered_message_with_an_unencodable_field_is_a_codec_error() -> None:
    with pytest.raises(CodecError, match="cannot encode Note"):
        codec().encode(Note(object()))  # type: ignore[arg-type]


def test_a_subclass_of_a_registered_class_is_not_registered() -> None:
    sub = type("SubPing", (Ping,), {})
    with pytest.raises(CodecError):
        codec().encode(sub(1))


def test_unknown_wire_name_is_a_codec_error_and_imports_nothing() -> None:
    sender = codec(Ping, Note)
    receiver = codec(Ping)
    with pytest.raises(CodecError, match="'Note' is not a registered message on this node"):
        receiver.decode(*sender.encode(Note("x")))
    with pytest.raises(CodecError, match="not a registered message"):
        receiver.decode("os.system", msgspec.msgpack.encode(["echo hi"]))
    nested = msgspec.msgpack.encode(
        [msgspec.msgpack.Ext(MESSAGE_CODE, msgspec.msgpack.encode(["os.system", b"\x90"]))]
    )
    with pytest.raises(CodecError, match="not a registered message"):
        receiver.decode("", nested)


def test_fields_that_do_not_fit_this_nodes_class_are_a_codec_error() -> None:
    with pytest.raises(CodecError, match="cannot decode message 'Ping'"):
        codec().decode("Ping", msgspec.msgpack.encode({"type": "Ping", "n": "seven"}))
    with pytest.raises(CodecError, match="cannot decode message 'Ping'"):
        codec().decode("Ping", b"\xc1")


def test_a_dataclass_post_init_that_rejects_decoded_fields_is_a_codec_error() -> None:
    @dataclasses.dataclass
    class Positive:
        n: int

        def __post_init__(self) -> None:
            if self.n <= 0:
                raise ValueError("n must be positive")

    c = codec(Positive)
    with pytest.raises(CodecError, match="n must be positive"):
        c.decode("Positive", msgspec.msgpack.encode({"n": -1}))


def test_cycles_in_codec_values_are_rejected() -> None:
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(CodecError, match="circular"):
        codec().encode(loop)
