# SPDX-License-Identifier: Apache-2.0
"""One worker process of ``tocsin run``: build its system, call ``main``, stop on request.

A worker is forked by the arbiter (``_arbiter.py``) and never returns into the arbiter's
code: :func:`child_main` ends with ``os._exit``. It stops its system gracefully when

* it receives SIGTERM or SIGINT (the arbiter forwards a stop, or Ctrl-C reached the
  whole process group),
* the arbiter dies: Linux sends SIGTERM through ``PR_SET_PDEATHSIG``; everywhere, a
  thread of the worker also watches the read end of a pipe whose only write end the
  arbiter holds, and sees end-of-file when the arbiter is gone, even after SIGKILL (the
  portable fallback).

A stop that overruns the grace (``stop_timeout``) plus :data:`HARD_EXIT_MARGIN` ends the
process from a watchdog thread, which does not need the event loop to be responsive:
a worker whose loop is wedged (a handler blocking it) still ends when its arbiter dies.
A wedged worker cannot run its SIGTERM handler; a living arbiter SIGKILLs it instead.
Durable task runs cut short by a stop or a kill are not marked done, so they run again
(at-least-once): every worker shares one durable store, and the identity is claimed again
(by this worker's replacement or another worker) once the stopped one has left the
cluster or its lease has run out.

After its system has started (and joined the cluster) a worker reports "joined" to the
arbiter and waits for its "go" (every worker of the run has joined; at once for a
replacement); only then does it call ``main``. Its own member list may still lag (it is
refreshed every ``poll_interval``), which does not matter: durable placement is decided on
the coordinator's live leases in the claim's own step. It reports "ready" when ``main``
returns.

Everything cluster-related is in :func:`build_system`.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import logging
import os
import select
import signal
import sys
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Final, NoReturn, final

from ..cluster import Cluster
from ..cluster._spi import open_coordinator
from ..errors import CoordinatorError
from ..remote import Remoting
from ..system import ActorSystem
from ._metrics import serve_metrics

__all__ = [
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_STOP_OVERRAN",
    "ActorSystem",
    "WorkerSpec",
    "build_system",
    "child_main",
    "clear_stale_socket",
    "early_stop_handler",
    "release_lease",
    "set_parent_death_signal",
    "set_process_name",
    "stop_system",
]

log = logging.getLogger("tocsin.run")

EXIT_OK: Final = 0
#: The system failed to start or ``main`` raised: the arbiter restarts it with backoff.
EXIT_FAILED: Final = 1
#: The stop overran the grace; the watchdog ended the process.
EXIT_STOP_OVERRAN: Final = 3
#: Seconds past ``stop_timeout`` after which the worker's watchdog ends the process. The
#: arbiter's own SIGKILL comes later (``_arbiter.KILL_MARGIN``), so a worker that
#: outlives its arbiter still ends.
HARD_EXIT_MARGIN: Final = 3.0

#: ``prctl`` option numbers from <linux/prctl.h>.
_PR_SET_PDEATHSIG: Final = 1
_PR_SET_NAME: Final = 15


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """Everything one worker needs to build its system (made by the arbiter before fork)."""

    number: int
    name: str
    store: str
    listen: str
    coordinator: str
    secret: str
    stop_timeout: float
    #: Classes remoting lets cross between workers (resolved in the worker).
    messages: tuple[type, ...] = ()
    #: The address other nodes dial, when it differs from ``listen`` (``--advertise``).
    advertise: str | None = None
    #: The cluster incarnation of this number's previous process, which died without
    #: leaving (SIGKILL, a crash): its lease is released before this one joins.
    release: str | None = None
    #: ``(host, port)`` of this worker's Prometheus endpoint (``--metrics``).
    metrics: tuple[str, int] | None = None
    #: ``host:port`` of this worker's web console (``--console``), and its token.
    console: str | None = None
    console_token: str | None = field(default=None, repr=False)


def build_system(spec: WorkerSpec) -> ActorSystem:
    """Make worker ``spec.number``'s system: the one place a worker's system is configured.

    A cluster node: remoting on its Unix socket (``unix://RUN_DIR/worker-N.sock``) or its
    TCP port (``--listen``), authenticated with the run's secret, so an actor on another
    worker is reached by its PID string; membership and cron claims through the
    coordinator, so a cron schedule fires once per tick across the workers; and the
    run's one durable store, shared by every worker: each durable identity is active on
    one worker at a time (the directory's claim, placed by rendezvous hashing), and its
    writes are fenced by the claim's epoch, so a worker that lost its claim cannot change
    the identity's state.
    """
    return ActorSystem(
        spec.name,
        store=spec.store,
        remoting=Remoting(
            listen=spec.listen,
            secret=spec.secret,
            messages=spec.messages,
            advertise=spec.advertise,
        ),
        cluster=Cluster(coordinator=spec.coordinator),
        console=spec.console,
        console_token=spec.console_token if spec.console is not None else None,
    )


def clear_stale_socket(spec: WorkerSpec) -> None:
    """Remove this worker's socket file left by an earlier process of the same number.

    Safe: the arbiter holds the run directory's lock, and the previous holder of this
    number has exited (the arbiter reaped it) before this one was forked. Without it a
    worker killed by SIGKILL would leave a file that makes the next ``bind`` fail.
    """
    if not spec.listen.startswith("unix://"):
        return  # a TCP port: nothing on disk
    path = spec.listen.removeprefix("unix://")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


async def release_lease(spec: WorkerSpec, incarnation: str) -> None:
    """Delete the lease of this worker number's dead predecessor (``incarnation``).

    The arbiter reaped that process, so it can no longer act: its lease would only make
    this replacement wait for it to lapse before joining under the same name (up to the
    cluster's lease, 10 s), and keep the dead worker's durable identities from moving
    meanwhile. Deleting exactly that incarnation's lease (never a newer one) lets both
    happen at once. A coordinator that fails here is only logged: the lease then
    lapses by itself, as without this step.
    """
    coordinator = open_coordinator(spec.coordinator)
    try:
        await coordinator.open()
        try:
            left = await coordinator.leave(spec.name, incarnation)
        finally:
            await coordinator.close()
    except CoordinatorError as exc:
        log.warning(
            "worker %d: releasing the lease of its dead predecessor failed (%s); it lapses "
            "by itself",
            spec.number,
            exc,
        )
        return
    if left:
        log.info(
            "worker %d: released the lease of its dead predecessor; its durable identities "
            "may move at once",
            spec.number,
        )


def listen_address(spec: WorkerSpec, system: ActorSystem) -> str | None:
    """Where the worker can be reached, for the arbiter's log."""
    del spec
    return system.address


async def stop_system(system: ActorSystem, timeout: float) -> None:
    """Stop ``system``, cancelling what still runs after ``timeout`` seconds.

    Handlers still running after the grace are cancelled (their ``post_stop`` still runs);
    durable task runs in flight are interrupted at once and run again on the next start.
    """
    await system.stop(timeout=timeout)


def set_parent_death_signal(sig: int, parent: int) -> bool:
    """Ask Linux to send ``sig`` to this process when its parent dies (``PR_SET_PDEATHSIG``).

    Returns False where unsupported (not Linux, no libc): the death pipe still works.
    The parent may have died between ``fork`` and this call; then the signal is raised
    now, since the kernel would never send it.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        result = libc.prctl(_PR_SET_PDEATHSIG, ctypes.c_ulong(sig), 0, 0, 0)
    except (OSError, AttributeError):
        return False
    if result != 0:
        return False
    if os.getppid() != parent:
        os.kill(os.getpid(), sig)
    return True


_early_stop: list[str] = []


def early_stop_handler(signum: int, frame: object) -> None:
    """Remember a stop signal that arrives before the worker's event loop handles them.

    Installed by the arbiter in the child right after ``fork``; :func:`_serve` replaces it
    with the loop's handler and honours what was remembered. Without it a SIGTERM during
    start-up would kill the worker outright instead of stopping it.
    """
    del frame
    _early_stop.append(signal.Signals(signum).name)


def set_process_name(name: str) -> None:
    """Show ``name`` (15 bytes at most) as this process's name in ``ps -o comm`` and ``top``.

    Linux only, best effort: worker processes otherwise all look like the arbiter.
    """
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)


MainFunc = Callable[[ActorSystem], Coroutine[Any, Any, None]]


def child_main(
    spec: WorkerSpec,
    main: MainFunc,
    *,
    status_fd: int,
    death_fd: int,
    parent: int,
    parent_death_signal: bool,
) -> NoReturn:
    """Run one worker in a freshly forked child; never returns (``os._exit``).

    ``os._exit`` and not ``sys.exit``: the child must not run the arbiter's ``atexit``
    handlers or flush buffers it inherited (the arbiter flushes them before forking).
    """
    code = EXIT_FAILED
    try:
        if parent_death_signal:
            set_parent_death_signal(signal.SIGTERM, parent)
        set_process_name(spec.name)
        code = asyncio.run(_serve(spec, main, status_fd, death_fd))
    except BaseException:
        log.exception("worker %d failed", spec.number)
    finally:
        with contextlib.suppress(BaseException):
            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


@final
class _Watchdog:
    """Ends the process if a stop overruns the grace, without needing the event loop.

    Armed once (thread-safe): by the loop on a stop signal, or by the death-pipe thread
    when the arbiter is gone, even while the loop is wedged (a handler blocking it in a
    C call or a CPU loop) and so cannot run any stop at all.
    """

    def __init__(self, spec: WorkerSpec) -> None:
        self.spec = spec
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def arm(self) -> None:
        with self._lock:
            if self._timer is None:
                delay = self.spec.stop_timeout + HARD_EXIT_MARGIN
                self._timer = threading.Timer(delay, _overran, (self.spec,))
                self._timer.daemon = True
                self._timer.start()

    def disarm(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()


def _watch_arbiter(
    death_fd: int,
    loop: asyncio.AbstractEventLoop,
    watchdog: _Watchdog,
    on_gone: Callable[[str], None],
) -> None:
    """Thread body: block until the death pipe reads end-of-file (the arbiter is gone).

    Nobody ever writes to the pipe, so readable (or hung up) means end-of-file. ``poll``
    rather than a read: it works whatever the descriptor's blocking flag, which every
    worker shares with the others; and rather than ``select.select``, which fails for a
    descriptor above ``FD_SETSIZE`` (1024).
    """
    with contextlib.suppress(OSError, ValueError):
        poller = select.poll()
        poller.register(death_fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        while not poller.poll():
            pass
    watchdog.arm()
    with contextlib.suppress(RuntimeError):  # the loop has closed: nothing left to stop
        loop.call_soon_threadsafe(on_gone, "the arbiter is gone")


async def _serve(spec: WorkerSpec, main: MainFunc, status_fd: int, death_fd: int) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    watchdog = _Watchdog(spec)

    def request_stop(why: str) -> None:
        if stop.is_set():
            return
        log.info("worker %d stopping (%s)", spec.number, why)
        stop.set()
        watchdog.arm()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, request_stop, signal.Signals(sig).name)
    if _early_stop:
        request_stop(_early_stop[0])
    threading.Thread(
        target=_watch_arbiter,
        args=(death_fd, loop, watchdog, request_stop),
        name="tocsin-arbiter-watch",
        daemon=True,
    ).start()

    clear_stale_socket(spec)
    if spec.release is not None:
        await release_lease(spec, spec.release)
    system = build_system(spec)
    await system.start()
    metrics = None
    if spec.metrics is not None:
        try:
            metrics = await serve_metrics(system, *spec.metrics)
        except BaseException:
            await stop_system(system, spec.stop_timeout)
            raise
    _report(status_fd, {"event": "joined", "incarnation": system.cluster.incarnation})
    code = EXIT_OK
    go = _listen_for_go(loop, status_fd)
    stop_task = asyncio.ensure_future(stop.wait())
    try:
        # main() waits for the arbiter's "go": every worker of the run has joined.
        go_task = asyncio.ensure_future(go.wait())
        await asyncio.wait({go_task, stop_task}, return_when=asyncio.FIRST_COMPLETED)
        go_task.cancel()
        if stop.is_set():
            return code
        main_task = asyncio.ensure_future(main(system))
        await asyncio.wait({main_task, stop_task}, return_when=asyncio.FIRST_COMPLETED)
        if not main_task.done():  # asked to stop while main still ran
            main_task.cancel()
            await asyncio.wait({main_task})
        elif main_task.exception() is not None:
            stop_task.cancel()
            log.error("main() of worker %d raised", spec.number, exc_info=main_task.exception())
            code = EXIT_FAILED
        else:
            ready: dict[str, Any] = {"event": "ready", "listen": listen_address(spec, system)}
            if metrics is not None:
                ready["metrics"] = metrics.url
            if system.console_url is not None:
                ready["console"] = system.console_url
            _report(status_fd, ready)
            await stop_task
    finally:
        stop_task.cancel()
        with contextlib.suppress(ValueError, OSError):
            loop.remove_reader(status_fd)
        if metrics is not None:
            await metrics.close()
        await stop_system(system, spec.stop_timeout)
        watchdog.disarm()
    return code


def _listen_for_go(loop: asyncio.AbstractEventLoop, status_fd: int) -> asyncio.Event:
    """Set when the arbiter writes ``{"event": "go", ...}`` on the status socket."""
    go = asyncio.Event()
    buffer = bytearray()

    def readable() -> None:
        try:
            data = os.read(status_fd, 4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:  # the arbiter is gone: the death pipe starts the stop
            loop.remove_reader(status_fd)
            return
        buffer.extend(data)
        while b"\n" in buffer:
            line, _, rest = bytes(buffer).partition(b"\n")
            buffer[:] = rest
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if isinstance(event, dict) and event.get("event") == "go":
                    go.set()

    loop.add_reader(status_fd, readable)
    return go


def _report(fd: int, event: dict[str, Any]) -> None:
    """Tell the arbiter something (one JSON line on this worker's status pipe)."""
    with contextlib.suppress(OSError):  # the arbiter is gone: the death pipe says so too
        os.write(fd, json.dumps(event).encode() + b"\n")


def _overran(spec: WorkerSpec) -> None:
    line = (
        f"worker {spec.number} (pid {os.getpid()}) did not stop within "
        f"{spec.stop_timeout + HARD_EXIT_MARGIN:g} s; exiting now\n"
    )
    with contextlib.suppress(OSError):
        os.write(2, line.encode())
    os._exit(EXIT_STOP_OVERRAN)
