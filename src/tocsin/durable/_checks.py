# SPDX-License-Identifier: Apache-2.0
"""The limits of durable data, checked once, in the durable layer, at the call that is
wrong, identically whatever the store (issue 10, items 9 and 10).

Why here and not in each store: the stores disagreed. A lone surrogate in an identity
was accepted by the memory store, refused by SQLite with ``UnicodeEncodeError`` and by
PostgreSQL with ``StoreError``; NUL passed memory and SQLite but not PostgreSQL. Now:

* text that names something (identity, task id, storage key): ``str``, non-empty where
  it must be, no NUL, no lone surrogate (it must encode to UTF-8), else ``ValueError``
  (a wrong type stays a ``TypeError``);
* values (payloads, storage values): codec-safe (``CodecError``, lone surrogates
  included, see :func:`tocsin._codec.encode`) and at most ``max_value_bytes`` encoded
  (default :data:`MAX_VALUE_BYTES`), else ``CodecError``;
* ``max_retries``: an ``int`` in ``[0, MAX_RETRIES]``, else ``ValueError`` naming it.
"""

from __future__ import annotations

from typing import Any, Final

from ..errors import CodecError
from ..triggers import check_note as engine_check_note

__all__ = [
    "MAX_RETRIES",
    "MAX_VALUE_BYTES",
    "check_note",
    "check_retries",
    "check_size",
    "check_text",
]

#: Default cap on one encoded payload or storage value (``DurableActor.max_value_bytes``).
#: A 50 MB payload held the event loop for ~350 ms while it was written; a durable task
#: is a message, not a blob store.
MAX_VALUE_BYTES: Final = 1024 * 1024
#: Largest ``max_retries`` (the stores keep it in a 32-bit integer; with backoff capped at
#: 300 s that is 20,000 years of retrying).
MAX_RETRIES: Final = 2**31 - 1


def check_note(note: Any) -> str | None:
    """A pause note: the policy engine's bound (``None`` or a str of at most
    :data:`~tocsin.triggers.MAX_NOTE_BYTES` UTF-8 bytes, the same on every surface), and
    text every store can hold (no NUL, no lone surrogate): ``TypeError`` for another
    type, else ``ValueError`` naming ``note``."""
    text = engine_check_note(note)
    return check_text(text, "note") if text else text


def check_text(value: Any, what: str) -> str:
    """``value`` if it is a non-empty ``str`` every store can hold.

    Raises:
        TypeError: not a ``str``.
        ValueError: empty, contains NUL, or a lone surrogate (not encodable as UTF-8).
    """
    if not isinstance(value, str):
        raise TypeError(f"`{what}` must be a str, got {value!r}")
    if not value:
        raise ValueError(f"`{what}` must be a non-empty str, got {value!r}")
    if value.isascii():
        if "\x00" in value:
            raise ValueError(f"`{what}` must not contain NUL characters, got {value!r}")
        return value  # the common case: ASCII always encodes
    if "\x00" in value:
        raise ValueError(f"`{what}` must not contain NUL characters, got {value!r}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = value[exc.start : exc.end]
        raise ValueError(
            f"`{what}` must be text that UTF-8 can encode, got {value!r} "
            f"(lone surrogate {bad!r} at index {exc.start})"
        ) from None
    return value


def check_size(data: bytes, limit: int, what: str) -> bytes:
    """``data`` if at most ``limit`` bytes, else :class:`CodecError` saying both sizes."""
    if len(data) > limit:
        raise CodecError(
            f"{what} is {len(data):,} bytes encoded; the limit is {limit:,} bytes "
            "(DurableActor.max_value_bytes): store large data elsewhere and pass a reference"
        )
    return data


def check_retries(max_retries: Any) -> int:
    """``max_retries`` if it is an ``int`` in ``[0, MAX_RETRIES]``, else ``ValueError``."""
    if (
        isinstance(max_retries, bool)
        or not isinstance(max_retries, int)
        or not 0 <= max_retries <= MAX_RETRIES
    ):
        raise ValueError(
            f"`max_retries` must be an int from 0 to {MAX_RETRIES:,} (2**31 - 1), "
            f"got {max_retries!r}"
        )
    return max_retries
