# SPDX-License-Identifier: Apache-2.0
"""The handshake's functions: HKDF against RFC 5869, keys bound to every part of the
transcript, proofs that cannot be replayed or reflected, records that cannot be forged."""

from __future__ import annotations

import hmac

import pytest

from tocsin.remote import _handshake as hs
from tocsin.remote import _records as records

SECRET = b"k" * 32
OTHER = b"o" * 32
D_ID = "tocsin://shop@127.0.0.1:7101"
L_ID = "tocsin://shop@127.0.0.1:7100"
DIALLED = "tcp://127.0.0.1:7100"


def test_hkdf_matches_the_rfc_5869_test_vectors() -> None:
    # RFC 5869, appendix A.1 (basic) and A.3 (zero-length salt and info).
    okm = hs.hkdf(
        bytes.fromhex("0b" * 22),
        bytes.fromhex("000102030405060708090a0b0c"),
        bytes.fromhex("f0f1f2f3f4f5f6f7f8f9"),
        42,
    )
    assert okm == bytes.fromhex(
        "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"
    )
    assert hs.hkdf(bytes.fromhex("0b" * 22), b"", b"", 42) == bytes.fromhex(
        "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"
    )


def test_hkdf_matches_the_rfc_5869_long_vector() -> None:
    # RFC 5869, appendix A.2: 80-byte inputs, 82 bytes out (three blocks).
    okm = hs.hkdf(bytes(range(0x50)), bytes(range(0x60, 0xB0)), bytes(range(0xB0, 0x100)), 82)
    assert okm == bytes.fromhex(
        "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c"
        "59045a99cac7827271cb41c65e590e09da3275600c2f09b8367793a9aca3db71"
        "cc30c58179ec3e87c14c01d5c1f3434f1d87"
    )


def test_hkdf_refuses_a_length_it_cannot_give() -> None:
    with pytest.raises(ValueError, match=r"`length` must be 1\.\.8160"):
        hs.hkdf(SECRET, b"", b"", 255 * 32 + 1)


def keys(**change: object) -> hs.SessionKeys:
    parts: dict[str, object] = {
        "secret": SECRET,
        "nonce_d": b"d" * 32,
        "nonce_l": b"l" * 32,
        "dialer_id": D_ID,
        "listener_id": L_ID,
        "dialled": DIALLED,
    }
    parts.update(change)
    return hs.session_keys(**parts)  # type: ignore[arg-type]


def test_both_sides_derive_the_same_keys_from_the_same_transcript() -> None:
    assert keys() == keys()
    k = keys()
    four = {k.listener_proof, k.dialer_proof, k.dialer_to_listener, k.listener_to_dialer}
    assert len(four) == 4  # no key serves two purposes
    assert k.mac_l() != k.mac_d()


@pytest.mark.parametrize(
    "change",
    [
        {"secret": OTHER},
        {"nonce_d": b"D" * 32},  # a replayed exchange: the other side's nonce is fresh
        {"nonce_l": b"L" * 32},
        {"dialer_id": "tocsin://other@127.0.0.1:7101"},
        {"listener_id": "tocsin://other@127.0.0.1:7100"},
        {"dialled": "tcp://127.0.0.1:7999"},  # a relay at another address
        {"dialer_id": L_ID, "listener_id": D_ID},  # the roles swapped (reflection)
        {"nonce_d": b"l" * 32, "nonce_l": b"d" * 32},
    ],
)
def test_every_part_of_the_transcript_changes_every_key(change: dict[str, object]) -> None:
    good, other = keys(), keys(**change)
    assert good.mac_l() != other.mac_l()
    assert good.mac_d() != other.mac_d()
    assert good.dialer_to_listener != other.dialer_to_listener
    assert good.listener_to_dialer != other.listener_to_dialer


def test_the_length_prefixes_keep_two_transcripts_apart() -> None:
    # The same bytes split differently between the names give other keys.
    assert keys(dialer_id="tocsin://ab@h:1", listener_id="c") != keys(
        dialer_id="tocsin://a", listener_id="b@h:1c"
    )


def test_a_listener_proof_cannot_be_reflected_as_a_dialer_proof() -> None:
    k = keys()
    assert not hs.proof_ok(k.mac_l(), k.mac_d())
    swapped = keys(dialer_id=L_ID, listener_id=D_ID, nonce_d=b"l" * 32, nonce_l=b"d" * 32)
    assert not hs.proof_ok(k.mac_l(), swapped.mac_d())


def test_openings_round_trip_and_bad_ones_are_refused() -> None:
    nonce = hs.new_nonce()
    opening = hs.dialer_hello(nonce, D_ID, DIALLED)
    head = hs.parse_head(opening[: hs.HEAD_SIZE])
    assert head is not None
    assert head.nonce == nonce
    assert hs.parse_dialer_body(opening[hs.HEAD_SIZE :]) == (D_ID, DIALLED)
    reply = hs.listener_reply(hs.new_nonce(), L_ID, keys())
    head = hs.parse_head(reply[: hs.HEAD_SIZE])
    assert head is not None
    assert hs.parse_listener_id(reply[hs.HEAD_SIZE : -hs.MAC_SIZE]) == L_ID
    assert hs.parse_head(b"GET / HTTP/1.1\r\n" + b"x" * 26) is None
    assert hs.parse_head(b"") is None
    too_long = hs.MAGIC + nonce + (hs.MAX_BODY + 1).to_bytes(2, "big")
    assert hs.parse_head(too_long) is None  # refused from the length, before the body
    assert hs.parse_head(hs.MAGIC[:-1] + b"\x02" + nonce + b"\x00\x10") is None  # version 2
    assert hs.parse_dialer_body(b"only-one-part") is None
    assert hs.parse_dialer_body(b"\xff\xfe\x00x") is None
    with pytest.raises(ValueError, match="NUL"):
        hs.dialer_hello(nonce, "a\x00b", DIALLED)


def test_a_record_is_bound_to_its_key_its_number_and_every_byte() -> None:
    key = keys().dialer_to_listener
    sealed = records.seal(records.keyed(key), 7, b"\x00\x00\x00\x01\xc0")
    head, body, mac = sealed[:12], sealed[12:-32], sealed[-32:]
    assert records.unpack_head(head, 0) == (5, 7)
    assert body == b"\x00\x00\x00\x01\xc0"
    assert hmac.compare_digest(mac, hmac.digest(key, head + body, "sha256"))
    assert records.mac_of(records.keyed(key), head + body) == mac
    assert records.seal(records.keyed(key), 8, body)[-32:] != mac  # another number
    other = records.keyed(keys().listener_to_dialer)
    assert records.seal(other, 7, body)[-32:] != mac  # other direction
    assert records.seal(records.keyed(key), 7, b"\x00\x00\x00\x01\xc1")[-32:] != mac


def _pair(dialled: str = DIALLED, secret_l: bytes = SECRET) -> tuple[hs.Handshake, hs.Handshake]:
    dialer = hs.Handshake(SECRET, dialer=True, own_id=D_ID, peer=DIALLED, dialled=dialled)
    listener = hs.Handshake(
        secret_l, dialer=False, own_id=L_ID, peer="?", answers_to=lambda a: a == DIALLED
    )
    return dialer, listener


def _run(dialer: hs.Handshake, listener: hs.Handshake) -> None:
    """Carry the bytes each side writes to the other until both are done."""
    wire = dialer.opening()
    sides = [listener, dialer]
    turn = 0
    while not (dialer.done and listener.done):
        side = sides[turn % 2]
        out = b""
        while wire and not side.done:
            step, wire = wire[: side.need], wire[side.need :]
            out += side.step(step)
        wire = out
        turn += 1


def test_two_handshakes_agree_on_names_and_keys() -> None:
    dialer, listener = _pair()
    _run(dialer, listener)
    assert dialer.peer_id == L_ID
    assert listener.peer_id == D_ID
    assert dialer.key_out == listener.key_in
    assert dialer.key_in == listener.key_out
    assert dialer.key_in != dialer.key_out


def test_a_listener_refuses_an_address_it_does_not_listen_at_and_its_own_name() -> None:
    dialer, listener = _pair(dialled="tcp://127.0.0.1:7999")
    with pytest.raises(hs.Refused, match="a relay in between"):
        _run(dialer, listener)
    reflected = hs.Handshake(SECRET, dialer=True, own_id=L_ID, peer="x", dialled=DIALLED)
    _, listener = _pair()
    with pytest.raises(hs.Refused, match="reflected handshake"):
        _run(reflected, listener)


def test_a_dialer_refuses_a_listener_with_another_secret() -> None:
    dialer, listener = _pair(secret_l=OTHER)
    with pytest.raises(hs.Refused, match="authentication failed: the node at"):
        _run(dialer, listener)
    assert listener.challenged  # what the listener sees: a dialer that went quiet
