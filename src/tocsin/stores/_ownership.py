# SPDX-License-Identifier: Apache-2.0
"""Store ownership outside cluster mode: one running system per store (issue 10, item 6).

Two systems started on one store each ran every due task, once per system. Outside
cluster mode a store therefore belongs to one system at a time: the system opens its
store with ``open(exclusive=True)``, which takes a lock that dies with its holder, and a
second system's ``open(exclusive=True)`` raises :class:`~tocsin.errors.StoreError`
naming the holder (host, pid) and pointing to cluster mode. Operators' tools
(``tocsin tasks``) and cluster nodes open with ``exclusive=False`` and take no lock.

Which lock, per store, and why it cannot outlive its holder:

* SQLite: ``flock`` on a side file ``<database>-owner`` (never on the database file
  itself: SQLite's own POSIX locks on it would be released by any ``close`` of another
  descriptor of that file in the same process). The kernel drops an ``flock`` when its
  last descriptor closes, so a killed holder never blocks. ``flock`` belongs to an open
  file description, so two stores of one process on one file exclude each other too.
  The side file holds the holder's ``{"host", "pid"}`` for the message; it is left in
  place on close (unlinking a lock file races with the next locker).
* PostgreSQL: a session advisory lock held by a dedicated connection; the server drops
  it when that session ends, however it ends. The holder's host and pid are written to
  the one-row table ``tocsin_owner`` once the lock is held.
* Memory: a flag on the store object (it lives and dies with the process).

Rejected: a lease row with a heartbeat (a dead holder blocks until the lease expires, and
a paused one loses the lease while still running); PID files (PIDs are reused).
"""

from __future__ import annotations

import json
import os
import socket
from typing import Final, final

from ..errors import StoreError
from ._files import open_lock_file

__all__ = ["OWNER_SUFFIX", "FileLock", "Holder", "ownership_error"]

#: Suffix of the SQLite side file whose ``flock`` marks the owner.
OWNER_SUFFIX: Final = "-owner"

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


@final
class Holder:
    """Who holds a store: host name and process id (``None`` when not yet recorded)."""

    __slots__ = ("host", "pid")

    def __init__(self, host: str | None, pid: int | None) -> None:
        self.host = host
        self.pid = pid

    @classmethod
    def me(cls) -> Holder:
        return cls(socket.gethostname(), os.getpid())

    def to_json(self) -> str:
        return json.dumps({"host": self.host, "pid": self.pid})

    @classmethod
    def from_json(cls, text: str) -> Holder:
        """Parse what :meth:`to_json` wrote; anything else reads as "not recorded"."""
        try:
            data = json.loads(text)
        except ValueError:
            return cls(None, None)
        if not isinstance(data, dict):
            return cls(None, None)
        host, pid = data.get("host"), data.get("pid")
        return cls(
            host if isinstance(host, str) else None,
            pid if type(pid) is int else None,
        )

    def describe(self) -> str:
        if self.host is None and self.pid is None:
            return "another system (holder not recorded yet)"
        return f"host {self.host or '?'} pid {self.pid if self.pid is not None else '?'}"


def ownership_error(url: str, holder: Holder) -> StoreError:
    """The one wording of "this store already belongs to a running system"."""
    return StoreError(
        f"store {url} is already owned by a running system ({holder.describe()}); outside "
        "cluster mode a store belongs to one system at a time, or both would run every "
        "task: stop that system, give this one another store, or run both as nodes of "
        "one cluster (ActorSystem(cluster=...)), which share a store safely"
    )


@final
class FileLock:
    """An exclusive ``flock`` on a side file, released by :meth:`release` or by death."""

    __slots__ = ("_fd", "path")

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, url: str) -> None:
        """Take the lock without waiting and record this process as the holder.

        Raises:
            StoreError: another open file description holds it (the message names the
                holder), or the side file cannot be opened or written.
        """
        if self._fd is not None:
            raise ownership_error(url, Holder.me())
        try:
            fd = open_lock_file(self.path)  # 0600, O_NOFOLLOW, ours: stores/_files.py
        except OSError as exc:
            raise StoreError(f"store {url}: cannot open its owner lock file: {exc}") from exc
        try:
            if fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise ownership_error(url, _read_holder(fd)) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, Holder.me().to_json().encode(), 0)
        except OSError as exc:
            os.close(fd)
            raise StoreError(f"store {url}: cannot lock {self.path!r}: {exc}") from exc
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def release(self) -> None:
        """Drop the lock (idempotent). The side file stays, empty."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.ftruncate(fd, 0)
        except OSError:
            pass  # the lock goes with the descriptor anyway
        finally:
            os.close(fd)


def _read_holder(fd: int) -> Holder:
    try:
        return Holder.from_json(os.pread(fd, 4096, 0).decode("utf-8", "replace"))
    except OSError:
        return Holder(None, None)
