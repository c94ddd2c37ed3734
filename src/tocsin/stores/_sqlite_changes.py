# SPDX-License-Identifier: Apache-2.0
"""How a SQLite store hears that another process changed it: ``PRAGMA data_version``.

``data_version`` is a counter of one connection that moves whenever *another*
connection commits to the file. The store reads it on its loop-side connection (~20 µs,
measured on the project VM) when its owner calls ``check_changes`` (about once a
second) and calls the watchers if it moved. Why not a trigger or a table that writers
bump: ``tocsin tasks`` (or any SQLite client) would have to cooperate; ``data_version``
sees every commit, whoever makes it.

The store's worker thread is "another connection" too (large batches,
``synchronous=FULL``, contended writes): its commits cannot be told apart from an
outside one and are reported as well. A false alarm costs the owner one poll of the
store, at most once per look; missing an outside change would cost up to a full poll
interval. The loop-side connection's own commits (the common small writes) never show.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import final

__all__ = ["DataVersionWatch"]


@final
class DataVersionWatch:
    """Watchers and the last ``data_version`` seen (``read()`` returns ``None`` when
    there is nothing to read: a ``":memory:"`` database nobody else can write)."""

    __slots__ = ("_last", "_read", "_watchers")

    def __init__(self, read: Callable[[], int | None]) -> None:
        self._read = read
        self._last: int | None = None
        self._watchers: list[Callable[[], None]] = []

    def watch(self, callback: Callable[[], None]) -> Callable[[], None]:
        if not self._watchers:
            self._last = self._read()
        self._watchers.append(callback)

        def unwatch() -> None:
            if callback in self._watchers:
                self._watchers.remove(callback)

        return unwatch

    def check(self) -> None:
        if not self._watchers:
            return
        version = self._read()
        if version is not None and version != self._last:
            self._last = version
            for callback in list(self._watchers):
                callback()

    def clear(self) -> None:
        self._watchers.clear()
        self._last = None
