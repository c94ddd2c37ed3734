# SPDX-License-Identifier: Apache-2.0
"""Where the commands read store and coordinator URLs: a flag, a file, or the environment.

A URL may carry a password, and a command line is visible to every local user (``ps``,
``/proc/PID/cmdline``). So every command that takes ``--store`` / ``--coordinator`` also
takes ``--store-file PATH`` / ``--coordinator-file PATH`` and reads ``TOCSIN_STORE`` /
``TOCSIN_COORDINATOR``; only the flag itself shows the URL to others.

Precedence: the flag, else the file, else the variable; the flag and the file together
are a usage error. A file holds the URL on its first non-empty line (surrounding blanks
ignored, so ``echo URL > file`` works). A file whose URL carries a password must be
readable by its owner only (as ``--secret-file``: ``chmod 600``); one without a password
may be shared. A symlink is followed (Kubernetes mounts its secrets through them).
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from pathlib import Path
from typing import Final

from ..stores._spi import has_secret

__all__ = ["ENVIRONMENT", "UrlSourceError", "add_url_option", "resolve_urls", "url_usage"]

#: The variable each URL option falls back to.
ENVIRONMENT: Final = {"store": "TOCSIN_STORE", "coordinator": "TOCSIN_COORDINATOR"}

#: Namespace attribute listing which URL options a command declared.
_DECLARED: Final = "_url_options"


class UrlSourceError(Exception):
    """A URL option is given twice, or its file cannot be used (exit 2)."""


def add_url_option(parser: argparse.ArgumentParser, name: str, help: str) -> None:
    """Add ``--NAME URL`` and ``--NAME-file PATH`` to ``parser`` (``name``: a key of
    :data:`ENVIRONMENT`); :func:`resolve_urls` fills ``args.NAME`` after parsing."""
    variable = ENVIRONMENT[name]
    parser.add_argument(
        f"--{name}",
        default=None,
        metavar="URL",
        help=f"{help} (default: ${variable}); prefer ${variable} or --{name}-file when the "
        "URL holds a password: other local users can read a command line",
    )
    parser.add_argument(
        f"--{name}-file",
        default=None,
        metavar="PATH",
        help=f"read the {name} URL from this file (mode 0600 if it holds a password)",
    )
    declared = parser.get_default(_DECLARED) or ()
    parser.set_defaults(**{_DECLARED: (*declared, name)})


def resolve_urls(args: argparse.Namespace) -> None:
    """Set ``args.NAME`` of every declared URL option from its flag, file or variable.

    Raises:
        UrlSourceError: both the flag and the file given; the file missing, unreadable,
            not a regular file, empty, or holding a password while readable by others.
    """
    for name in getattr(args, _DECLARED, ()):
        given = getattr(args, name)
        path = getattr(args, f"{name}_file")
        if given is not None and path is not None:
            raise UrlSourceError(f"--{name} and --{name}-file were both given: choose one")
        if path is not None:
            setattr(args, name, read_url_file(Path(path), f"--{name}-file"))
            setattr(args, f"{name}_file", None)  # resolved: a second call changes nothing
        elif given is None:
            setattr(args, name, os.environ.get(ENVIRONMENT[name]) or None)


def url_usage(args: argparse.Namespace, prog: str) -> int | None:
    """:func:`resolve_urls` for a command: ``None`` when done, else the usage exit status
    (2) after one line on stderr naming ``prog``."""
    try:
        resolve_urls(args)
    except UrlSourceError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    return None


def read_url_file(path: Path, option: str) -> str:
    """The URL on the first non-empty line of ``path``.

    Raises:
        UrlSourceError: see :func:`resolve_urls`.
    """
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise UrlSourceError(f"{option} {str(path)!r} is not a regular file")
        lines = [line.strip() for line in path.read_text().splitlines()]
    except OSError as exc:
        raise UrlSourceError(f"{option} {str(path)!r} cannot be read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise UrlSourceError(f"{option} {str(path)!r} is not UTF-8 text") from None
    url = next((line for line in lines if line), "")
    if not url:
        raise UrlSourceError(f"{option} {str(path)!r} is empty; write the URL on one line")
    if has_secret(url) and info.st_mode & 0o077:
        raise UrlSourceError(
            f"{option} {str(path)!r} holds a password and has mode "
            f"{info.st_mode & 0o777:04o}: other users could read it; make it readable by "
            f"its owner only (chmod 600 {path})"
        )
    return url
