# SPDX-License-Identifier: Apache-2.0
"""The settings of a ``tocsin run`` spanning machines: ``--listen``, ``--advertise``,
``--secret-file`` (checked in the arbiter before any worker starts).

By default the workers of one run listen on Unix sockets in the run directory and share
a secret made for that run: nothing outside the machine can reach them. Workers of
several machines form one cluster when each machine listens on TCP, says which host the
others dial, and reads the same secret from a file its owner alone can read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Final

from ..remote._spi import NodeAddress
from ._errors import RunUsageError

__all__ = ["MIN_SECRET", "check_advertise", "check_listen", "read_secret_file", "tcp_host_port"]


def tcp_host_port(listen: str) -> tuple[str, int]:
    """``("HOST", PORT)`` of a checked ``tcp://HOST:PORT``."""
    host, _, port = listen.removeprefix("tcp://").rpartition(":")
    return host, int(port)


def check_listen(listen: object, workers: int) -> None:
    """``tcp://HOST:PORT`` with a real port: worker n takes PORT + n - 1."""
    allowed = "'tcp://HOST:PORT' (worker n listens on PORT + n - 1)"
    if not isinstance(listen, str) or not listen.startswith("tcp://"):
        raise RunUsageError(f"`listen` must be {allowed}, got {listen!r}")
    try:
        address = NodeAddress.parse(listen, param="listen")
    except ValueError as exc:
        raise RunUsageError(str(exc)) from None
    if address.port == 0:
        raise RunUsageError(
            f"`listen` needs a real port (worker n listens on PORT + n - 1, which other "
            f"machines must know), got {listen!r}"
        )
    if address.port + workers - 1 > 65535:
        raise RunUsageError(
            f"`listen` {listen!r} leaves no room for {workers} ports (PORT + {workers - 1} "
            "must be at most 65535)"
        )


def check_advertise(advertise: object, listen: str | None) -> None:
    """A host name or address other machines dial (no scheme, no port)."""
    if listen is None:
        raise RunUsageError(
            f"`advertise` {advertise!r} needs `listen` (tcp://HOST:PORT): workers on Unix "
            "sockets are reached on this machine only"
        )
    if (
        not isinstance(advertise, str)
        or not advertise
        or "/" in advertise
        or advertise.strip() != advertise
    ):
        raise RunUsageError(
            f"`advertise` must be the host other machines dial (e.g. 10.0.0.5 or "
            f"node-a.internal, without scheme or port), got {advertise!r}"
        )
    try:
        NodeAddress.parse(f"tcp://{advertise}:1", param="advertise")
    except ValueError as exc:
        raise RunUsageError(f"`advertise` must be a host without port: {exc}") from None


#: Fewest characters a shared secret file holds (what ``Remoting`` asks: 16 bytes).
MIN_SECRET: Final = 16


def read_secret_file(path: Path, option: str = "secret_file") -> str:
    """The secret in ``path``: readable by its owner only, at least 16 characters.

    ``option`` names the argument in the messages (``console_token_file`` also uses it).

    Raises:
        RunUsageError: missing, not a regular file, readable by group or others, or too
            short (the message says which and how to fix it).
    """
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise RunUsageError(f"`{option}` {str(path)!r} is not a regular file")
        if info.st_mode & 0o077:
            raise RunUsageError(
                f"`{option}` {str(path)!r} has mode {info.st_mode & 0o777:04o}: other users "
                f"could read it; make it readable by its owner only (chmod 600 {path})"
            )
        text = path.read_text().strip()
    except OSError as exc:
        raise RunUsageError(f"`{option}` {str(path)!r} cannot be read: {exc.strerror}") from None
    if len(text) < MIN_SECRET:
        raise RunUsageError(
            f"`{option}` {str(path)!r} holds {len(text)} characters, at least {MIN_SECRET} "
            "needed (e.g. the output of `python -c 'import secrets; print(secrets.token_hex(32))'`)"
        )
    return text
