# SPDX-License-Identifier: Apache-2.0
"""A durable actor's persistent key-value ``storage`` and its transaction helper."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, final

from .._codec import decode, encode
from ..stores import DeleteState, PutState
from ._checks import check_size, check_text
from ._writes import MISSING as _MISSING

if TYPE_CHECKING:
    from ..stores import Op, Store
    from ._writes import Writes

__all__ = ["Storage", "StorageHost"]


class StorageHost(Protocol):
    """What a :class:`Storage` uses of its identity (``DurableHandle`` is the one)."""

    @property
    def kind(self) -> str: ...
    @property
    def identity(self) -> str: ...
    @property
    def store(self) -> Store: ...
    @property
    def writes(self) -> Writes: ...
    @property
    def max_value_bytes(self) -> int: ...
    async def write(self, ops: Sequence[Op]) -> None: ...


@final
class Storage:
    """Persistent key-value storage of one durable actor (``self.storage``).

    Keys are ``str``; values are codec-safe (see ``docs/durable.md``) and checked when
    written, so a bad value raises :class:`~tocsin.CodecError` at ``put``. Inside
    ``async with self.transaction():`` writes are buffered and committed together with
    the task changes made in the same block; reads there see the buffered writes.
    """

    __slots__ = ("_handle",)

    def __init__(self, handle: StorageHost) -> None:
        self._handle = handle

    async def get(self, key: str, default: Any = None) -> Any:
        """The value stored under ``key``, or ``default``."""
        _check_key(key)
        handle = self._handle
        buffered = handle.writes.buffered_state(key)
        if buffered is not _MISSING:
            return default if buffered is None else decode(buffered)
        data = await handle.store.get_state(handle.kind, handle.identity, key)
        return default if data is None else decode(data)

    async def put(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key`` (replacing any previous value)."""
        _check_key(key)
        handle = self._handle
        what = f"storage[{key!r}]"
        data = check_size(encode(value, name=what), handle.max_value_bytes, what)
        await handle.write([PutState(handle.kind, handle.identity, key, data)])

    async def delete(self, key: str) -> bool:
        """Delete ``key``; return whether it existed."""
        _check_key(key)
        handle = self._handle
        existed = (await self.get(key, _MISSING)) is not _MISSING
        await handle.write([DeleteState(handle.kind, handle.identity, key)])
        return existed

    async def list(self, prefix: str = "") -> dict[str, Any]:
        """Every key starting with ``prefix`` and its value, sorted by key."""
        if not isinstance(prefix, str):
            raise TypeError(f"`prefix` must be a str, got {prefix!r}")
        if prefix:
            _check_key(prefix)
        handle = self._handle
        items = dict(await handle.store.list_state(handle.kind, handle.identity, prefix))
        for key, data in handle.writes.buffered_items(prefix):
            if data is None:
                items.pop(key, None)
            else:
                items[key] = data
        return {key: decode(items[key]) for key in sorted(items)}


def _check_key(key: object) -> None:
    if not isinstance(key, str):
        raise TypeError(f"storage keys must be str, got {key!r}")
    if not key.isascii() or "\x00" in key:
        # Empty keys stay allowed (they always were); NUL and lone surrogates are not.
        if "\x00" in key:
            raise ValueError(f"storage keys must not contain NUL characters, got {key!r}")
        check_text(key, "key")
