# SPDX-License-Identifier: Apache-2.0
"""``tocsin run MODULE:FUNC``: the command line of :func:`tocsin.run` (``tocsin._run``)."""

from __future__ import annotations

import argparse
import sys

from .._run import (
    Arbiter,
    RunUsageError,
    check_environment,
    check_targets,
    explicit_options,
    make_config,
    open_run_dir,
    setup_logging,
)
from ._urls import add_url_option, url_usage

__all__ = ["register"]

EXIT_USAGE = 2


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``run`` command to a ``tocsin`` parser."""
    parser = subparsers.add_parser(
        "run",
        help="run MODULE:FUNC in one worker process per core, supervised",
        description=(
            "Start N worker processes, each an ActorSystem calling `async def FUNC(system)`; "
            "restart a worker that dies; SIGTERM/SIGINT stop all gracefully (exit 0), "
            "SIGHUP restarts them one at a time."
        ),
    )
    parser.add_argument("target", metavar="MODULE:FUNC", help="e.g. shop.app:main")
    parser.add_argument(
        "--workers", type=int, default=None, help="default: one per core; at most 4 per core"
    )
    parser.add_argument(
        "--allow-many-workers",
        action="store_true",
        help="accept more than 4 workers per core",
    )
    parser.add_argument("--name", default="tocsin", help="system name prefix (default: tocsin)")
    add_url_option(
        parser,
        "store",
        "durable store URL shared by every worker; without one: sqlite:///RUN_DIR/store.db",
    )
    add_url_option(
        parser,
        "coordinator",
        "cluster coordinator URL; without one: sqlite:///RUN_DIR/coordinator.db",
    )
    parser.add_argument(
        "--run-dir", default=None, help="lock, secret, sockets, stores (default: ./.tocsin/NAME)"
    )
    parser.add_argument(
        "--stop-timeout", type=float, default=10.0, help="grace for a stop, seconds (default 10)"
    )
    parser.add_argument(
        "--messages",
        default=None,
        metavar="MODULE:ATTR",
        help="classes that may cross between workers (an iterable of classes)",
    )
    parser.add_argument(
        "--listen",
        default=None,
        metavar="tcp://HOST:PORT",
        help="listen on TCP (worker n on PORT+n-1) instead of Unix sockets in RUN_DIR",
    )
    parser.add_argument(
        "--advertise", default=None, metavar="HOST", help="the host other machines dial"
    )
    parser.add_argument(
        "--secret-file",
        default=None,
        metavar="PATH",
        help="the secret the machines of one cluster share (mode 0600; default: new per run)",
    )
    parser.add_argument(
        "--metrics",
        default=None,
        metavar="HOST:PORT",
        help="each worker's Prometheus /metrics; {worker} is its number, "
        "e.g. 127.0.0.1:91{worker:02d} (worker 1 on 9101)",
    )
    parser.add_argument(
        "--console",
        default=None,
        metavar="HOST:PORT",
        help="each worker's web console, as --metrics (e.g. 127.0.0.1:88{worker:02d})",
    )
    parser.add_argument(
        "--console-token-file",
        default=None,
        metavar="PATH",
        help="one token for every worker's console (mode 0600); else each makes its own",
    )
    parser.add_argument(
        "--metrics-token-file",
        default=None,
        metavar="PATH",
        help="the token /metrics asks as Authorization: Bearer (mode 0600); default: the "
        "consoles' token (--console-token-file)",
    )
    parser.add_argument(
        "--metrics-public",
        action="store_true",
        help="serve /metrics without a token (it names every schedule reference)",
    )
    parser.add_argument(
        "--log-level",
        default="INFO",
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        help="default INFO",
    )
    parser.set_defaults(func=_command)


def _command(args: argparse.Namespace) -> int:
    setup_logging(args.log_level, force=True)
    if (status := url_usage(args, "tocsin run")) is not None:
        return status
    try:
        label = check_targets(args.target, args.messages or ())
        config = make_config(
            label,
            workers=args.workers,
            name=args.name,
            store=args.store,
            coordinator=args.coordinator,
            run_dir=args.run_dir,
            stop_timeout=args.stop_timeout,
            messages=args.messages or (),
            listen=args.listen,
            advertise=args.advertise,
            secret_file=args.secret_file,
            allow_many_workers=args.allow_many_workers,
            metrics=args.metrics,
            console=args.console,
            console_token_file=args.console_token_file,
            metrics_token_file=args.metrics_token_file,
            metrics_public=args.metrics_public,
        )
        check_environment(
            config, explicit=explicit_options(store=args.store, coordinator=args.coordinator)
        )
        directory = open_run_dir(config.run_dir, config.secret_file)
    except RunUsageError as exc:
        print(f"tocsin run: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return Arbiter(config, args.target, directory).run()
    finally:
        directory.close()
