# SPDX-License-Identifier: Apache-2.0
"""The ``tocsin`` command: ``demo``, ``cron next|explain``,
``tasks list|retry|discard|trigger|backfill``, ``schedules list|show|history|why|pause|
resume|trigger|backfill|remove|plan|apply``, ``console``.

Standard library only (argparse), so the ``cli`` extra pulls in nothing; it exists so
that ``pip install tocsin[cli]`` keeps working if the CLI grows a dependency.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .._version import __version__
from ..errors import TocsinError
from . import _cluster, _console, _cron, _demo, _run, _schedules, _tasks

__all__ = ["main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tocsin",
        description="tocsin: an asyncio actor runtime with timers, Quartz cron and durable tasks.",
    )
    parser.add_argument("--version", action="version", version=f"tocsin {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    _demo.register(subparsers)
    _cron.register(subparsers)
    _tasks.register(subparsers)
    _schedules.register(subparsers)
    _cluster.register(subparsers)
    _console.register(subparsers)  # issue 14
    _run.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 failure, 2 usage error).

    Each command reports its own errors as one line on stderr. A tocsin error that a
    command did not expect is reported the same way (exit 1), never as a traceback; an
    interrupt exits 130, as shells expect.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        status: int = func(args)
    except TocsinError as exc:
        print(f"tocsin: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("tocsin: interrupted", file=sys.stderr)
        return 130
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
