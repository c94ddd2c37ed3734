# SPDX-License-Identifier: Apache-2.0
"""The challenge–response functions: both proofs, fresh nonces, no reflection."""

from __future__ import annotations

from tocsin.remote import _handshake as hs

SECRET = b"k" * 32
OTHER = b"o" * 32


def test_both_sides_prove_the_secret() -> None:
    nonce_d, nonce_l = hs.new_nonce(), hs.new_nonce()
    assert hs.verify_dialer_hello(hs.dialer_hello(nonce_d)) == nonce_d
    reply = hs.listener_reply(SECRET, nonce_d, nonce_l)
    assert hs.verify_listener_reply(SECRET, nonce_d, reply) == nonce_l
    proof = hs.dialer_proof(SECRET, nonce_d, nonce_l)
    assert hs.verify_dialer_proof(SECRET, nonce_d, nonce_l, proof)


def test_a_wrong_secret_fails_either_way() -> None:
    nonce_d, nonce_l = hs.new_nonce(), hs.new_nonce()
    assert (
        hs.verify_listener_reply(SECRET, nonce_d, hs.listener_reply(OTHER, nonce_d, nonce_l))
        is None
    )
    assert not hs.verify_dialer_proof(
        SECRET, nonce_d, nonce_l, hs.dialer_proof(OTHER, nonce_d, nonce_l)
    )


def test_a_recorded_reply_does_not_answer_a_fresh_nonce() -> None:
    old_d, nonce_l = hs.new_nonce(), hs.new_nonce()
    recorded = hs.listener_reply(SECRET, old_d, nonce_l)
    assert hs.verify_listener_reply(SECRET, hs.new_nonce(), recorded) is None
    assert hs.new_nonce() != hs.new_nonce()


def test_a_listener_proof_cannot_be_reflected_as_a_dialer_proof() -> None:
    nonce_d, nonce_l = hs.new_nonce(), hs.new_nonce()
    mac_l = hs.listener_reply(SECRET, nonce_d, nonce_l)[-32:]
    # Even with the nonces swapped the other way round, labels differ.
    assert not hs.verify_dialer_proof(SECRET, nonce_d, nonce_l, mac_l)
    assert not hs.verify_dialer_proof(SECRET, nonce_l, nonce_d, mac_l)


def test_bad_opening_bytes_are_refused() -> None:
    assert hs.verify_dialer_hello(b"GET / HTTP/1.1\r\n" + b"x" * 24) is None
    assert hs.verify_dialer_hello(b"") is None
