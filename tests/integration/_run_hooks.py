# SPDX-License-Identifier: Apache-2.0
"""``python _run_hooks.py FUNC RUN_DIR WORKERS [--sigterm-after K] [--high-fds]``: the
arbiter of ``_run_app:FUNC`` started through its private API, with test hooks that make
a race deterministic:

* ``--sigterm-after K``: the arbiter sends itself SIGTERM right after forking its K-th
  worker, as systemd would while a large run is still being forked;
* ``--join-timeout S``: the first start waits S seconds (not 30) for every worker to
  join before ``main`` runs in those that did;
* ``--restart-backoff LOW HIGH``: a worker's quick exits are restarted after LOW, 2 LOW,
  4 LOW... seconds, at most HIGH (not 0.5 up to 30), so a test of what a crash loop leads
  to (five failed boots end the run) does not wait the default 7.5 s of backoff;
* ``--high-fds``: descriptors up to 1100 are taken first, so every pipe and socket the
  arbiter and its workers open is above ``FD_SETSIZE`` (1024), where ``select.select``
  fails.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

from tocsin._run import _arbiter
from tocsin._run._arbiter import Arbiter
from tocsin._run._config import make_config, open_run_dir, setup_logging
from tocsin._run._target import check_targets

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("func")
    parser.add_argument("run_dir")
    parser.add_argument("workers", type=int)
    parser.add_argument("--sigterm-after", type=int, default=None)
    parser.add_argument("--high-fds", action="store_true")
    parser.add_argument("--join-timeout", type=float, default=None)
    parser.add_argument("--restart-backoff", type=float, nargs=2, default=None)
    args = parser.parse_args()
    if args.high_fds:
        # Keep the lowest free descriptors busy: every later open gets a number >= 1100.
        held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
        assert min(held) < 1024 < max(held)
    if args.join_timeout is not None:
        _arbiter.JOIN_TIMEOUT = args.join_timeout  # type: ignore[misc]
    label = check_targets(f"_run_app:{args.func}")
    low, high = args.restart_backoff or (0.5, 30.0)  # make_config's default
    config = make_config(
        label,
        workers=args.workers,
        run_dir=args.run_dir,
        name="hooks",
        restart_backoff=(low, high),
    )
    setup_logging()
    directory = open_run_dir(config.run_dir)
    arbiter = Arbiter(config, label, directory)
    if args.sigterm_after is not None:
        spawn = arbiter._spawn
        forked = 0

        def spawn_then_signal(slot: object) -> None:
            global forked
            spawn(slot)  # type: ignore[arg-type]
            forked += 1
            if forked == args.sigterm_after:
                os.kill(os.getpid(), signal.SIGTERM)

        arbiter._spawn = spawn_then_signal  # type: ignore[method-assign]
    sys.exit(arbiter.run())
