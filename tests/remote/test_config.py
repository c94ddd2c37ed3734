# SPDX-License-Identifier: Apache-2.0
"""Remoting(...) validates everything at construction."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import msgspec
import pytest

from tocsin import Remoting

SECRET = b"s" * 16


class A(msgspec.Struct):
    x: int


class Tagged(msgspec.Struct, tag="orders.A"):
    x: int


@dataclasses.dataclass
class D:
    y: str


def test_secret_of_16_bytes_or_a_str_is_accepted() -> None:
    assert Remoting(listen="tcp://127.0.0.1:0", secret=SECRET).secret_bytes == SECRET
    assert Remoting(listen="tcp://127.0.0.1:0", secret="é" * 8).secret_bytes == ("é" * 8).encode()


@pytest.mark.parametrize("secret", [b"", b"short", "x" * 15])
def test_short_secret_is_a_value_error_giving_the_length(secret: bytes | str) -> None:
    with pytest.raises(ValueError, match="at least 16 bytes, got"):
        Remoting(listen="tcp://127.0.0.1:0", secret=secret)


@pytest.mark.parametrize("secret", [None, 1234567890123456, ["x" * 16]])
def test_secret_of_another_type_is_a_type_error(secret: object) -> None:
    with pytest.raises(TypeError, match="`secret` must be bytes or str"):
        Remoting(listen="tcp://127.0.0.1:0", secret=secret)  # type: ignore[arg-type]


def test_repr_never_shows_the_secret() -> None:
    text = repr(
        Remoting(listen="tcp://127.0.0.1:0", secret=b"super-secret-value!", messages=[A, D])
    )
    assert "super-secret" not in text
    assert "messages=[A, D]" in text


def test_two_classes_of_one_wire_name_are_a_value_error() -> None:
    other = type("A", (msgspec.Struct,), {"__annotations__": {"y": int}})
    with pytest.raises(ValueError, match="two classes named 'A'"):
        Remoting(listen="tcp://127.0.0.1:0", secret=SECRET, messages=[A, other])


def test_msgspec_tag_names_a_struct_on_the_wire() -> None:
    config = Remoting(listen="tcp://127.0.0.1:0", secret=SECRET, messages=[A, Tagged, D, A])
    assert config.registry.names == ("A", "D", "orders.A")


@pytest.mark.parametrize("bad", [int, dict, "A", A(1), object])
def test_messages_must_be_struct_or_dataclass_classes(bad: object) -> None:
    with pytest.raises(TypeError, match=r"msgspec\.Struct subclasses or dataclasses"):
        Remoting(listen="tcp://127.0.0.1:0", secret=SECRET, messages=[bad])  # type: ignore[list-item]


def test_wildcard_listen_needs_advertise() -> None:
    with pytest.raises(ValueError, match="give `advertise`"):
        Remoting(listen="tcp://0.0.0.0:7100", secret=SECRET)
    config = Remoting(listen="tcp://0.0.0.0:7100", secret=SECRET, advertise="tcp://10.0.0.5:7100")
    assert config.dial_address.host == "10.0.0.5"


def test_advertise_needs_a_real_port() -> None:
    with pytest.raises(ValueError, match="`advertise` needs the real port"):
        Remoting(listen="tcp://127.0.0.1:0", secret=SECRET, advertise="tcp://10.0.0.5:0")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_frame", 0),
        ("max_frame", 1.5),
        ("max_buffer", True),
        ("heartbeat", 0),
        ("heartbeat", float("nan")),
        ("reconnect_max", -1),
        ("connect_timeout", "1"),
    ],
)
def test_sizes_and_times_must_be_positive(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"`{field}` must be"):
        Remoting(listen="tcp://127.0.0.1:0", secret=SECRET, **{field: value})  # type: ignore[arg-type]


def test_tls_needs_all_three_existing_files(tmp_path: Path) -> None:
    pem = tmp_path / "x.pem"
    pem.write_text("x")
    with pytest.raises(ValueError, match="TLS needs all of"):
        Remoting(listen="tcp://127.0.0.1:0", secret=SECRET, tls_cert=str(pem))
    with pytest.raises(ValueError, match="`tls_ca` must name an existing PEM file"):
        Remoting(
            listen="tcp://127.0.0.1:0",
            secret=SECRET,
            tls_cert=pem,
            tls_key=pem,
            tls_ca=tmp_path / "no",
        )


def test_remoting_is_frozen() -> None:
    config = Remoting(listen="tcp://127.0.0.1:0", secret=SECRET)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.listen = "tcp://127.0.0.1:1"  # type: ignore[misc]
    assert config.replace(listen="unix:///tmp/x.sock").listen_address.kind == "unix"


def test_max_pending_handshakes_is_a_keyword_of_at_least_one() -> None:
    assert Remoting(listen="tcp://127.0.0.1:0", secret=SECRET).max_pending_handshakes == 64
    assert (
        Remoting(
            listen="tcp://127.0.0.1:0", secret=SECRET, max_pending_handshakes=1
        ).max_pending_handshakes
        == 1
    )
    for bad in (0, -3, True, 2.5, "8"):
        with pytest.raises(ValueError, match="`max_pending_handshakes` must be an int >= 1"):
            Remoting(listen="tcp://127.0.0.1:0", secret=SECRET, max_pending_handshakes=bad)  # type: ignore[arg-type]
    fields = {f.name: f for f in dataclasses.fields(Remoting)}
    assert fields["max_pending_handshakes"].kw_only
