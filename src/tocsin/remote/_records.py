# SPDX-License-Identifier: Apache-2.0
"""MACed records: how frames travel after the handshake.

A connection writes its frames in *records*, one per write batch (what one loop iteration
corked, or one chunk of a long backlog)::

    record = u32 n | u64 seq | frames (n bytes) | HMAC-SHA256(key, u32 n | u64 seq | frames)
    frames = (u32 size | envelope (size bytes))*      (a frame never spans two records)

``key`` is the sending direction's session key (:mod:`._handshake`); ``seq`` counts the
records of that direction from 1. The receiver checks ``n`` against its cap as soon as
the 12-byte head is in (before buffering the body), then the MAC (constant-time) over
the whole record, then that ``seq`` is the next one; only then is any frame decoded. A
wrong MAC, a sequence out of order (a replayed, reordered or dropped record) or a frame
that does not tile the record closes the connection.

Why per batch and not per frame: HMAC-SHA256 costs about 2 µs of fixed overhead per
call here (OpenSSL 3 through ``hashlib``; ``hmac.digest``'s one-shot path is slower
still, 3.1 µs, as it fetches the digest each call, so a keyed ``hmac.HMAC`` is made once
per direction and copied per record) plus about 1 ns per byte; under load a batch holds
hundreds of frames, so the MAC costs a few nanoseconds per frame there, and one call
for a lone frame (an ask's round trip). Prior art: TLS records (a MAC per record with
an implicit sequence number), SSH's per-packet MAC over the sequence number.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from typing import Final

__all__ = ["CHUNK", "HEAD", "MAC", "cap", "keyed", "mac_of", "pack_head", "seal", "unpack_head"]

#: Bytes of a record's head (length, sequence number) and of its MAC.
HEAD: Final = 12
MAC: Final = 32
#: Bytes of frames a sender puts in one record when a long backlog is written.
CHUNK: Final = 256 * 1024

_head: Final = struct.Struct(">IQ")
pack_head: Final = _head.pack
unpack_head: Final = _head.unpack_from


def keyed(key: bytes) -> hmac.HMAC:
    """HMAC-SHA256 keyed with ``key``, to be copied per record (:func:`seal`,
    ``mac_of``): the key's padding is hashed once, not per record."""
    return hmac.new(key, digestmod=hashlib.sha256)


def mac_of(base: hmac.HMAC, data: bytes | memoryview) -> bytes:
    """The MAC of ``data`` under ``base``'s key."""
    mac = base.copy()
    mac.update(data)
    return mac.digest()


def cap(max_frame: int) -> int:
    """The longest record body a receiver accepts: a backlog chunk plus one whole frame
    (a sender stops filling a record once it holds :data:`CHUNK` bytes)."""
    return CHUNK + 4 + max_frame


def seal(base: hmac.HMAC, seq: int, frames: bytes) -> bytes:
    """The record carrying ``frames`` (``u32 size | envelope`` each) as number ``seq``,
    MACed under ``base``'s key (:func:`keyed`)."""
    record = pack_head(len(frames), seq) + frames
    mac = base.copy()
    mac.update(record)
    return record + mac.digest()
