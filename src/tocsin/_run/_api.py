# SPDX-License-Identifier: Apache-2.0
""":func:`tocsin.run`: one worker process per core, supervised.

The arbiter (``_arbiter.py``) forks the workers (``_worker.py``) after everything was
checked here (``_config.py``). ``tocsin run`` (``tocsin/cli/_run.py``) is the same, parsed
from a command line. See ``docs/deploying.md``.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterable

from ._arbiter import Arbiter
from ._config import (
    MainFunc,
    check_environment,
    make_config,
    open_run_dir,
    setup_logging,
)
from ._target import check_targets

__all__ = ["explicit_options", "run"]


def run(
    main: MainFunc | str,
    *,
    workers: int | None = None,
    name: str = "tocsin",
    store: str | None = None,
    coordinator: str | None = None,
    run_dir: str | os.PathLike[str] | None = None,
    stop_timeout: float = 10.0,
    restart_backoff: tuple[float, float] = (0.5, 30.0),
    messages: str | Iterable[type] = (),
    listen: str | None = None,
    advertise: str | None = None,
    secret_file: str | os.PathLike[str] | None = None,
    allow_many_workers: bool = False,
    metrics: str | None = None,
    console: str | None = None,
    console_token_file: str | os.PathLike[str] | None = None,
    metrics_token_file: str | os.PathLike[str] | None = None,
    metrics_public: bool = False,
) -> int:
    """Run ``main`` in ``workers`` processes until SIGTERM or SIGINT; return the exit status.

    Each worker process builds an :class:`~tocsin.ActorSystem` named ``f"{name}-{n}"``
    (n = 1..workers), starts it, then awaits ``main(system)``; once ``main`` returns the
    worker serves until asked to stop. ``main`` starts in each worker once every worker
    has joined the cluster (after 30 s in those that did); a worker that joins later (a
    replacement) runs it at once. This process becomes the arbiter: it restarts a
    worker that exits or is killed (at once if it had run for 10 s, else after a backoff
    growing from ``restart_backoff[0]`` to ``restart_backoff[1]`` seconds), answers
    SIGTERM/SIGINT by stopping every worker gracefully and SIGHUP by restarting them one at
    a time. Workers die with the arbiter, even when it is SIGKILLed.

    Blocks; call it from the main thread of a program with no event loop running (as
    ``asyncio.run``), before starting threads: workers are forked.

    Args:
        main: ``async def main(system) -> None``, or its name as ``"module:func"``. A name
            is imported by each worker after its fork (checked once beforehand in a
            throw-away child), so a rolling restart runs the code now on disk; a function
            object runs the code this process holds.
        workers: number of worker processes (default: one per core available). More
            than 4 per core is refused (a typo such as 10000 would fork thousands of
            processes) unless ``allow_many_workers`` is true.
        name: prefix of the workers' system names; also the default run directory's name.
        store: the durable store URL every worker shares (``sqlite:///…`` on this
            machine, ``postgresql://…``). Default: ``sqlite:///<run_dir>/store.db``. Each
            durable identity is active on one worker at a time (placed by rendezvous
            hashing over the live workers) and its writes are fenced by its claim.
        coordinator: the cluster coordinator URL the workers join (membership, cron once
            per tick across them); default ``sqlite:///<run_dir>/coordinator.db``.
        run_dir: directory for the lock, the per-run secret (mode 0600), sockets and the
            default stores (default: ``./.tocsin/<name>``, created with mode 0700).
        stop_timeout: grace (seconds) each worker has to stop; the arbiter kills a
            worker still running 5 s after it.
        restart_backoff: ``(min, max)`` seconds between restarts of a crash-looping worker.
        messages: the classes that may cross between workers besides codec-safe values
            (``Remoting(messages=...)``), or their name as ``"module:ATTR"``.
        listen: ``"tcp://HOST:PORT"`` to listen on TCP instead of Unix sockets (worker n
            on PORT + n - 1), so that workers of other machines can reach these.
        advertise: the host other machines dial, when it differs from ``listen``'s (a
            wildcard ``0.0.0.0`` needs it).
        secret_file: a file holding the secret every machine of the cluster shares
            (readable by its owner only, 16 characters or more); default: a fresh secret
            per run, written to ``<run_dir>/secret``.
        allow_many_workers: accept more than 4 workers per core.
        metrics: ``"HOST:PORT"`` template of each worker's Prometheus endpoint
            (``http://HOST:PORT/metrics``), ``{worker}`` standing for its number:
            ``"127.0.0.1:91{worker:02d}"`` serves worker 1 on 9101, worker 2 on 9102.
            Needs the ``metrics`` extra.
        console: the same for each worker's web console (with ``/metrics``); needs the
            ``console`` extra, and ``console_token_file`` unless it binds loopback.
        console_token_file: a file holding the consoles' token (mode 0600, 16
            characters or more).
        metrics_token_file: a file holding the token ``/metrics`` asks as
            ``Authorization: Bearer`` (mode 0600, 16 characters or more). Without it,
            ``metrics`` asks the consoles' token, and without that ``metrics_public``
            must say it may be served to anyone (docs/security.md).
        metrics_public: serve ``metrics`` without a token.

    Returns:
        0 after a clean stop (every worker exited 0 within the grace); 3 when a worker
        failed to boot (exited before its ``main`` returned) 5 times in a row, unless
        it had served before while others serve; 1 otherwise (a stop of a run whose
        workers failed and never were ready included).

    Raises:
        ValueError: a bad argument (the message names it), or a setting checked before
            any fork: a wildcard ``listen`` without ``advertise``, a missing directory
            of a SQLite ``store``/``coordinator``, ``memory://`` as the coordinator of
            several workers, a PostgreSQL/Redis server that accepts no connection
            within 3 s, a port in use; nothing was started.
        RuntimeError: called from a thread other than the main thread, or with an event
            loop running in this thread.
    """
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("tocsin.run() handles signals: call it from the main thread")
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError(
            "tocsin.run() blocks and forks: call it outside a running event loop (like asyncio.run)"
        )
    label = check_targets(main, messages)
    config = make_config(
        label,
        workers=workers,
        name=name,
        store=store,
        coordinator=coordinator,
        run_dir=run_dir,
        stop_timeout=stop_timeout,
        restart_backoff=restart_backoff,
        messages=messages,
        listen=listen,
        advertise=advertise,
        secret_file=secret_file,
        allow_many_workers=allow_many_workers,
        metrics=metrics,
        console=console,
        console_token_file=console_token_file,
        metrics_token_file=metrics_token_file,
        metrics_public=metrics_public,
    )
    check_environment(config, explicit=explicit_options(store=store, coordinator=coordinator))
    setup_logging()
    directory = open_run_dir(config.run_dir, config.secret_file)
    try:
        return Arbiter(config, main, directory).run()
    finally:
        directory.close()


def explicit_options(**options: str | None) -> tuple[str, ...]:
    """The names of the options given (not defaulted)."""
    return tuple(name for name, value in options.items() if value is not None)
