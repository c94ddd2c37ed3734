# SPDX-License-Identifier: Apache-2.0
"""Mutual HMAC-SHA256 challenge–response on the shared secret, before any frame is decoded.

The exchange (fixed-size raw bytes, nothing parsed but lengths and a magic)::

    dialer   -> listener : MAGIC | nonce_d                        (8 + 32 bytes)
    listener -> dialer   : MAGIC | nonce_l | mac_l                (8 + 32 + 32 bytes)
    dialer   -> listener : mac_d                                  (32 bytes)

    mac_l = HMAC(secret, "tocsin/1 listener" | nonce_d | nonce_l)
    mac_d = HMAC(secret, "tocsin/1 dialer"   | nonce_l | nonce_d)

Each side checks the other's MAC with :func:`hmac.compare_digest` against its own fresh
nonce (``secrets.token_bytes``), so a recorded exchange cannot be replayed, and the two
labels differ, so a listener's answer cannot be reflected back to it as a dialer's. Only
then does either side read a length-prefixed frame. The secret never crosses the wire.

What it does not do: encrypt or integrity-protect the frames that follow (an on-path
attacker could alter them); that is what the optional TLS is for.

Prior art: the challenge–response of Erlang distribution (``dist_util``: cookie digests
over both nodes' challenges) and the mutual-auth shape of SCRAM.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Final

__all__ = [
    "DIALER_HELLO_SIZE",
    "DIALER_PROOF_SIZE",
    "LISTENER_REPLY_SIZE",
    "MAGIC",
    "dialer_hello",
    "dialer_proof",
    "listener_reply",
    "new_nonce",
    "verify_dialer_hello",
    "verify_dialer_proof",
    "verify_listener_reply",
]

MAGIC: Final = b"TOCSIN\x00\x01"
NONCE_SIZE: Final = 32
MAC_SIZE: Final = 32
DIALER_HELLO_SIZE: Final = len(MAGIC) + NONCE_SIZE
LISTENER_REPLY_SIZE: Final = len(MAGIC) + NONCE_SIZE + MAC_SIZE
DIALER_PROOF_SIZE: Final = MAC_SIZE

_LISTENER_LABEL: Final = b"tocsin/1 listener"
_DIALER_LABEL: Final = b"tocsin/1 dialer"


def new_nonce() -> bytes:
    return secrets.token_bytes(NONCE_SIZE)


def _mac(secret: bytes, label: bytes, first: bytes, second: bytes) -> bytes:
    return hmac.new(secret, label + first + second, hashlib.sha256).digest()


def dialer_hello(nonce_d: bytes) -> bytes:
    """The dialer's opening bytes."""
    return MAGIC + nonce_d


def verify_dialer_hello(data: bytes) -> bytes | None:
    """The dialer's nonce, or ``None`` when ``data`` is not a tocsin opening."""
    if len(data) != DIALER_HELLO_SIZE or not hmac.compare_digest(data[: len(MAGIC)], MAGIC):
        return None
    return data[len(MAGIC) :]


def listener_reply(secret: bytes, nonce_d: bytes, nonce_l: bytes) -> bytes:
    """The listener's challenge and its proof of the secret."""
    return MAGIC + nonce_l + _mac(secret, _LISTENER_LABEL, nonce_d, nonce_l)


def verify_listener_reply(secret: bytes, nonce_d: bytes, data: bytes) -> bytes | None:
    """The listener's nonce when its proof is right, else ``None``."""
    if len(data) != LISTENER_REPLY_SIZE or not hmac.compare_digest(data[: len(MAGIC)], MAGIC):
        return None
    nonce_l = data[len(MAGIC) : len(MAGIC) + NONCE_SIZE]
    expected = _mac(secret, _LISTENER_LABEL, nonce_d, nonce_l)
    if not hmac.compare_digest(data[len(MAGIC) + NONCE_SIZE :], expected):
        return None
    return nonce_l


def dialer_proof(secret: bytes, nonce_d: bytes, nonce_l: bytes) -> bytes:
    """The dialer's proof of the secret, over the listener's fresh nonce."""
    return _mac(secret, _DIALER_LABEL, nonce_l, nonce_d)


def verify_dialer_proof(secret: bytes, nonce_d: bytes, nonce_l: bytes, data: bytes) -> bool:
    return len(data) == DIALER_PROOF_SIZE and hmac.compare_digest(
        data, _mac(secret, _DIALER_LABEL, nonce_l, nonce_d)
    )
