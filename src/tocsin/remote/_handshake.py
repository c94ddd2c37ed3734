# SPDX-License-Identifier: Apache-2.0
"""The handshake: mutual proof of the shared secret, and the session keys of the channel.

The exchange (raw bytes; nothing is decoded but lengths, a magic and two UTF-8 strings)::

    dialer   -> listener : MAGIC | nonce_d | u16 n | dialer_id \\0 dialled   (n bytes)
    listener -> dialer   : MAGIC | nonce_l | u16 n | listener_id | mac_l     (n + 32 bytes)
    dialer   -> listener : mac_d                                            (32 bytes)

``dialer_id`` and ``listener_id`` are the two system addresses
(``tocsin://name@host:port``) and ``dialled`` the address the dialer connected to
(``tcp://host:port``, ``unix:///path``). Both sides derive 128 bytes with HKDF-SHA256
(RFC 5869, :func:`hkdf`) from the secret, salted with both nonces, over an ``info`` that
holds all three strings (length-prefixed: no two transcripts share one)::

    k_proof_l | k_proof_d | k_dialer_to_listener | k_listener_to_dialer
    mac_l = HMAC(k_proof_l, "tocsin/3 listener")     mac_d = HMAC(k_proof_d, "tocsin/3 dialer")

So a proof is good only for one pair of fresh nonces (a recorded exchange cannot be
replayed), one pair of names and one dialled address, and only in its own direction (a
listener's proof reflected back as a dialer's is checked under another key). What it
buys against a relay (a process without the secret that gets a node to dial it and
forwards the bytes to a real node):

* the listener answers only to an address it is dialled at (its own; see
  ``RemoteNode.answers_to``): a relay at another address gets a refusal, and if it
  rewrites the dialled address the two sides derive different keys and the proofs fail;
* every byte after the handshake travels in records MACed under the direction's key
  (:mod:`._records`): a relay that forwarded a good handshake still cannot write a frame
  either side accepts, nor replay, reorder or drop one unnoticed.

The secret never crosses the wire and no key is used for two purposes. The proofs are
compared with :func:`hmac.compare_digest`. Prior art: Erlang distribution's challenge
over both nodes' cookies (``dist_util``), TLS 1.3's key schedule (HKDF over the
transcript; one key per direction), SCRAM's mutual proof.
"""

from __future__ import annotations

import hmac
import secrets
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, final

__all__ = [
    "HEAD_SIZE",
    "MAC_SIZE",
    "MAGIC",
    "MAX_BODY",
    "Handshake",
    "Opening",
    "Refused",
    "SessionKeys",
    "dialer_hello",
    "hkdf",
    "listener_reply",
    "new_nonce",
    "parse_dialer_body",
    "parse_head",
    "parse_listener_id",
    "proof_ok",
    "session_keys",
]

#: The opening bytes; the last two are the handshake's version (3: session keys, MACed
#: records). A node of an older version is refused as "not a tocsin peer".
MAGIC: Final = b"TOCSIN\x00\x03"
NONCE_SIZE: Final = 32
MAC_SIZE: Final = 32
#: MAGIC, a nonce and the 2-byte length of what follows (the ids, and for the
#: listener its proof after them).
HEAD_SIZE: Final = len(MAGIC) + NONCE_SIZE + 2
#: Longest id part accepted (two addresses): checked from the length before reading.
MAX_BODY: Final = 2048

_LISTENER: Final = b"tocsin/3 listener"
_DIALER: Final = b"tocsin/3 dialer"
_INFO: Final = b"tocsin/3 session"
_SHA256: Final = "sha256"
_u16: Final = struct.Struct(">H")


def new_nonce() -> bytes:
    return secrets.token_bytes(NONCE_SIZE)


def hkdf(ikm: bytes, salt: bytes, info: bytes, length: int) -> bytes:
    """HKDF-SHA256 as RFC 5869 writes it: extract, then expand to ``length`` bytes.

    Raises:
        ValueError: ``length`` is not in 1..8160 (255 blocks of 32 bytes).
    """
    if not 0 < length <= 255 * 32:
        raise ValueError(f"`length` must be 1..8160 bytes, got {length}")
    prk = hmac.digest(salt or bytes(32), ikm, _SHA256)  # extract
    okm = b""
    block = b""
    i = 0
    while len(okm) < length:  # expand: T(i) = HMAC(PRK, T(i-1) | info | i)
        i += 1
        block = hmac.digest(prk, block + info + bytes((i,)), _SHA256)
        okm += block
    return okm[:length]


@final
@dataclass(frozen=True, slots=True)
class SessionKeys:
    """The four keys of one connection, derived by :func:`session_keys`."""

    listener_proof: bytes
    dialer_proof: bytes
    dialer_to_listener: bytes
    listener_to_dialer: bytes

    def mac_l(self) -> bytes:
        """The listener's proof."""
        return hmac.digest(self.listener_proof, _LISTENER, _SHA256)

    def mac_d(self) -> bytes:
        """The dialer's proof."""
        return hmac.digest(self.dialer_proof, _DIALER, _SHA256)


def _lp(text: bytes) -> bytes:
    return _u16.pack(len(text)) + text


def session_keys(
    secret: bytes, nonce_d: bytes, nonce_l: bytes, dialer_id: str, listener_id: str, dialled: str
) -> SessionKeys:
    """The keys of the connection the transcript describes (both sides compute the same
    ones only if they hold the same secret and saw the same nonces, names and address)."""
    info = _INFO + _lp(dialer_id.encode()) + _lp(listener_id.encode()) + _lp(dialled.encode())
    okm = hkdf(secret, nonce_d + nonce_l, info, 4 * 32)
    return SessionKeys(okm[:32], okm[32:64], okm[64:96], okm[96:])


@final
@dataclass(frozen=True, slots=True)
class Opening:
    """A parsed opening: the peer's nonce and how many bytes of ids (and proof) follow."""

    nonce: bytes
    body: int


def _encode_id(text: str) -> bytes:
    raw = text.encode()
    if b"\x00" in raw:
        raise ValueError(f"an address must not hold a NUL byte, got {text!r}")
    return raw


def dialer_hello(nonce_d: bytes, dialer_id: str, dialled: str) -> bytes:
    """The dialer's opening bytes."""
    body = _encode_id(dialer_id) + b"\x00" + _encode_id(dialled)
    return MAGIC + nonce_d + _u16.pack(len(body)) + body


def listener_reply(nonce_l: bytes, listener_id: str, keys: SessionKeys) -> bytes:
    """The listener's challenge, its id and its proof."""
    body = _encode_id(listener_id)
    return MAGIC + nonce_l + _u16.pack(len(body)) + body + keys.mac_l()


def parse_head(data: bytes) -> Opening | None:
    """The fixed-size head of either opening, or ``None`` when it is not tocsin's (or
    announces more than :data:`MAX_BODY` bytes of ids)."""
    if len(data) != HEAD_SIZE or not hmac.compare_digest(data[: len(MAGIC)], MAGIC):
        return None
    (body,) = _u16.unpack_from(data, HEAD_SIZE - 2)
    if not 0 < body <= MAX_BODY:
        return None
    return Opening(data[len(MAGIC) : len(MAGIC) + NONCE_SIZE], body)


def parse_dialer_body(body: bytes) -> tuple[str, str] | None:
    """``(dialer_id, dialled)`` from the dialer's body, or ``None`` if malformed."""
    parts = body.split(b"\x00")
    if len(parts) != 2:
        return None
    try:
        return parts[0].decode(), parts[1].decode()
    except UnicodeDecodeError:
        return None


def parse_listener_id(body: bytes) -> str | None:
    """The listener's id from its body (the proof after it is checked by the caller)."""
    if b"\x00" in body:
        return None
    try:
        return body.decode()
    except UnicodeDecodeError:
        return None


def proof_ok(got: bytes, expected: bytes) -> bool:
    """Constant-time comparison of a proof."""
    return len(got) == MAC_SIZE and hmac.compare_digest(got, expected)


class Refused(Exception):
    """The handshake failed; the text says why (for the log line and the dialer's error)."""


# Stages of :class:`Handshake`.
_HEAD: Final = 0  # MAGIC | nonce | u16 n (either side's opening)
_BODY: Final = 1  # the ids (and, from a listener, its proof)
_PROOF: Final = 2  # listener: the dialer's proof
_DONE: Final = 3


@final
class Handshake:
    """One side's handshake as a state machine over bytes, with no I/O of its own: the
    connection hands it each step's bytes (:attr:`need` of them) and writes what
    :meth:`step` returns, until :attr:`done`.

    Args:
        secret: the shared secret.
        dialer: this side dialled.
        own_id: this node's system address.
        peer: the peer in words, for failure texts (the dialled address, or host:port).
        dialled: (dialer) the address it connected to, as ``str(NodeAddress)``.
        answers_to: (listener) whether it listens at an address a dialer names.
    """

    __slots__ = (
        "_answers_to",
        "_dialer",
        "_dialled",
        "_keys",
        "_nonce",
        "_own_id",
        "_peer",
        "_peer_nonce",
        "_secret",
        "_stage",
        "key_in",
        "key_out",
        "need",
        "peer_id",
    )

    def __init__(
        self,
        secret: bytes,
        *,
        dialer: bool,
        own_id: str,
        peer: str,
        dialled: str = "",
        answers_to: Callable[[str], bool] = lambda dialled: False,
    ) -> None:
        self._secret = secret
        self._dialer = dialer
        self._own_id = own_id
        self._peer = peer
        self._dialled = dialled
        self._answers_to = answers_to
        self._nonce = new_nonce()
        self._peer_nonce = b""
        self._keys: SessionKeys | None = None
        self._stage = _HEAD
        #: Bytes the next step needs.
        self.need = HEAD_SIZE
        #: The peer's system address, as its proof covers it.
        self.peer_id = ""
        #: The session keys of each direction, once :attr:`done`.
        self.key_in = b""
        self.key_out = b""

    @property
    def done(self) -> bool:
        return self._stage == _DONE

    @property
    def challenged(self) -> bool:
        """(Listener) the challenge went out and the dialer's proof is awaited: a dialer
        that closes now is one that found our proof wrong (another secret)."""
        return self._stage == _PROOF

    def opening(self) -> bytes:
        """(Dialer) the first bytes to write."""
        return dialer_hello(self._nonce, self._own_id, self._dialled)

    def step(self, data: bytes) -> bytes:
        """Take the :attr:`need` bytes of the next step; the bytes to write back (maybe
        none).

        Raises:
            Refused: the peer is not a tocsin peer, does not prove the secret, or
                reached this node through an address it does not listen at.
        """
        if self._stage == _HEAD:
            head = parse_head(data)
            if head is None:
                raise Refused("not a tocsin peer (bad opening bytes)")
            self._peer_nonce = head.nonce
            self._stage = _BODY
            self.need = head.body + (MAC_SIZE if self._dialer else 0)
            return b""
        if self._stage == _BODY:
            return self._listener_reply(data) if self._dialer else self._dialer_opening(data)
        if self._stage == _PROOF:
            assert self._keys is not None
            if not proof_ok(data, self._keys.mac_d()):
                raise Refused("authentication failed: the dialer does not hold this node's secret")
            self._finish(self._keys.dialer_to_listener, self._keys.listener_to_dialer)
            return b""
        raise AssertionError("the handshake is over")

    def _dialer_opening(self, body: bytes) -> bytes:
        """Listener: the dialer's id and the address it dialled; answer with our proof."""
        ids = parse_dialer_body(body)
        if ids is None:
            raise Refused("not a tocsin peer (malformed opening)")
        dialer_id, dialled = ids
        if dialer_id == self._own_id:
            raise Refused("a dialer that claims this node's own name (a reflected handshake)")
        if not self._answers_to(dialled):
            raise Refused(
                f"the dialer connected to {dialled!r}, an address this node does not listen "
                f"at ({self._own_id}): a relay in between, or a peer dialling an address "
                "this node does not advertise"
            )
        self.peer_id = dialer_id
        self._keys = keys = session_keys(
            self._secret, self._peer_nonce, self._nonce, dialer_id, self._own_id, dialled
        )
        self._stage, self.need = _PROOF, MAC_SIZE
        return listener_reply(self._nonce, self._own_id, keys)

    def _listener_reply(self, body: bytes) -> bytes:
        """Dialer: the listener's id and proof; answer with ours."""
        listener_id = parse_listener_id(body[:-MAC_SIZE])
        keys = None
        if listener_id is not None:
            keys = session_keys(
                self._secret, self._nonce, self._peer_nonce, self._own_id, listener_id,
                self._dialled,
            )  # fmt: skip
        if listener_id is None or keys is None or not proof_ok(body[-MAC_SIZE:], keys.mac_l()):
            raise Refused(
                f"authentication failed: the node at {self._peer} does not prove it holds "
                "this node's secret (another secret, a relay, or not a tocsin node)"
            )
        self.peer_id = listener_id
        self._finish(keys.listener_to_dialer, keys.dialer_to_listener)
        return keys.mac_d()

    def _finish(self, key_in: bytes, key_out: bytes) -> None:
        self.key_in, self.key_out = key_in, key_out
        self._keys = None
        self._stage = _DONE
