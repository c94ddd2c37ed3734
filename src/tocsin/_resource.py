# SPDX-License-Identifier: Apache-2.0
"""``async with`` for tocsin's long-lived objects (a leaf module: it imports nothing of
tocsin, so every layer may use it).

An :class:`ActorSystem` starts on entry and stops on exit, a :class:`Client` opens and
closes, a served :class:`Console` (running already) closes: one pair of dunder methods
here, and each class says only what entering and leaving do.
"""

from __future__ import annotations

from types import TracebackType
from typing import Self

__all__ = ["AsyncResource"]


class AsyncResource:
    """Mixin: ``async with resource:`` awaits :meth:`_enter` and returns the resource,
    and on the way out awaits :meth:`_exit` whatever the block did (its exception, if
    any, propagates: ``__aexit__`` never swallows it)."""

    __slots__ = ()

    async def __aenter__(self) -> Self:
        await self._enter()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._exit()

    async def _enter(self) -> None:
        """Start or open the resource (by default nothing: it is live once made)."""

    async def _exit(self) -> None:
        """Stop or close the resource."""
        raise NotImplementedError
