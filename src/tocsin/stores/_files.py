# SPDX-License-Identifier: Apache-2.0
"""Files are ours: how tocsin creates and opens the files it writes (docs/security.md).

* **Created private.** A SQLite file is created here, empty, with mode 0600 before
  SQLite opens it; SQLite gives the ``-wal`` and ``-shm`` files it makes beside it the
  database file's mode, so they are 0600 too. Lock files are created 0600. The umask can
  only remove bits from these modes, never add them.
* **Never through a symlink.** Every file tocsin will write is opened with
  ``O_NOFOLLOW`` (a lock file), or refused when its last component is a symlink (a
  SQLite file: SQLite itself follows links). A planted link can make tocsin fail, never
  write the file it points to.
* **Never leaving files the owner cannot open.** SQLite makes ``-wal``/``-shm`` as the
  user who opens the database. When that is not the file's owner (and not root, whose
  files SQLite hands to the owner), the service could no longer open its own store
  ("attempt to write a readonly database"). So a read-write open by another user is
  refused unless the file is group-writable (a deliberate shared-group setup, where the
  new files are group-writable too), and a read-only open by another user reads through
  the existing ``-wal``/``-shm`` when the service has them open, or with SQLite's
  ``immutable=1`` (no lock, no file created) when the database has no WAL at that
  moment; a ``-wal`` without its ``-shm`` is refused with a message saying whom to run
  as.

Prior art: OpenSSH's ``StrictModes`` (refuse what others can write), PostgreSQL's data
directory checks (owner and 0700), and ``O_NOFOLLOW`` as systemd uses it for its state.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Final

__all__ = [
    "FILE_MODE",
    "check_owned_for_writing",
    "create_private_file",
    "open_lock_file",
    "read_only_uri",
]

#: The mode of every file tocsin creates (SQLite stores, coordinators, locks).
FILE_MODE: Final = 0o600

# Not on Windows: there no uid is checked (as if root) and O_NOFOLLOW is a no-op.
_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)


def _euid() -> int:
    geteuid = getattr(os, "geteuid", None)
    return 0 if geteuid is None else int(geteuid())


def _is_memory(path: str) -> bool:
    return path == ":memory:" or path.startswith("file:")


def create_private_file(path: str) -> None:
    """Create ``path`` empty with mode 0600 unless it exists; refuse a symlink there.

    Raises:
        OSError: the last component is a symbolic link (``ELOOP``, the message says so),
            or the file cannot be created (missing directory, permissions).
    """
    if _is_memory(path):
        return
    try:
        fd = os.open(
            path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | os.O_CLOEXEC, FILE_MODE
        )
    except FileExistsError:
        if os.path.islink(path):
            raise _symlink(path) from None
        return
    os.close(fd)


def check_owned_for_writing(path: str) -> None:
    """Refuse a read-write open that would leave ``-wal``/``-shm`` the owner cannot open.

    Raises:
        OSError: ``path`` is a symlink, or belongs to another user and is not
            group-writable while this process is not root (``EPERM``, naming both users).
    """
    if _is_memory(path):
        return
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        raise _symlink(path)
    me = _euid()
    if me == 0 or info.st_uid == me or info.st_mode & 0o020:
        return
    raise OSError(
        errno.EPERM,
        f"it belongs to {_user(info.st_uid)} and this process runs as {_user(me)}: the "
        f"-wal and -shm files SQLite would create beside it would be {_user(me)}'s and "
        f"the owner could no longer open the store; run this as {_user(info.st_uid)}",
        path,
    )


def read_only_uri(path: str) -> str:
    """The SQLite URI that reads ``path`` without creating any file beside it.

    ``mode=ro`` for the file's owner and root (SQLite gives root's new files to the
    owner); for another user, ``mode=ro`` when ``-wal`` and ``-shm`` both exist (the
    service has the store open: reading goes through them and creates nothing), else
    ``mode=ro&immutable=1`` when neither exists (everything is in the file itself).

    Raises:
        OSError: another user, and a ``-wal`` without its ``-shm`` (or the reverse):
            reading would create the missing one as this user (``EPERM``).
    """
    uri = Path(path).absolute().as_uri() + "?mode=ro"
    try:
        owner = os.stat(path).st_uid
    except OSError:
        return uri  # the open itself reports it
    me = _euid()
    if me in (0, owner):
        return uri
    wal, shm = os.path.exists(path + "-wal"), os.path.exists(path + "-shm")
    if wal and shm:
        return uri
    if not wal and not shm:
        return uri + "&immutable=1"
    raise OSError(
        errno.EPERM,
        f"it belongs to {_user(owner)}, and reading it as {_user(me)} would create "
        f"{'-shm' if wal else '-wal'} beside it, which the owner could not open; run this "
        f"as {_user(owner)}, or while the service has the store open",
        path,
    )


def open_lock_file(path: str) -> int:
    """Open (creating it 0600) a lock file tocsin writes: ``O_NOFOLLOW``, a regular file
    owned by this user with one link, so nothing planted there can be truncated.

    Raises:
        OSError: a symlink (``ELOOP``), not a regular file, another owner, or hard links.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _symlink(path) from None
        raise
    info = os.fstat(fd)
    problem = None
    if not stat.S_ISREG(info.st_mode):
        problem = "is not a regular file"
    elif info.st_uid != _euid():
        problem = f"belongs to {_user(info.st_uid)}, not to {_user(_euid())}"
    elif info.st_nlink != 1:
        problem = f"has {info.st_nlink} hard links (another name could point at it)"
    if problem is not None:
        os.close(fd)
        raise OSError(errno.EPERM, f"the lock file {problem}; remove it", path)
    return fd


def _symlink(path: str) -> OSError:
    return OSError(
        errno.ELOOP,
        "is a symbolic link: tocsin never writes a file through one; name the real path "
        f"({os.path.realpath(path)})",
        path,
    )


def _user(uid: int) -> str:
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"
