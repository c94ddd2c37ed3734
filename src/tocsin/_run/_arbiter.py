# SPDX-License-Identifier: Apache-2.0
"""The arbiter of ``tocsin run``: forks the workers, restarts them, stops them.

Prior art: gunicorn's ``Arbiter`` (a single-threaded master that forks workers, wakes on
signals through a self-pipe, reaps with ``waitpid(WNOHANG)``, and answers SIGTERM with a
graceful stop, a second signal or the grace running out with SIGKILL, SIGHUP with new
workers). Differences, and why:

* Signals reach the loop through ``signal.set_wakeup_fd``: the C handler writes the signal
  number to the pipe, so none is lost between two waits. The wait is a ``selectors``
  selector (epoll on Linux), not ``select.select``: descriptors above ``FD_SETSIZE``
  (1024) work. The pipe is also read between two forks of the start, so a SIGTERM while
  the workers are being forked stops the forking at once and the started ones gracefully.
* A rolling restart (SIGHUP) stops a worker *before* starting its replacement, one at a
  time, and waits for the replacement to be ready (its ``main`` returned) before the next:
  a worker's number names its socket and its cluster node name, which two processes must
  not hold at once. The other workers keep serving meanwhile. If a
  replacement fails before it is ready, the rolling restart stops there: a broken
  deploy takes down one worker, not all of them. Workers that are down (in backoff, or
  not ready) are restarted first, and a healthy worker is stopped only while every other
  one is ready (gunicorn replaces them all at once; a Kubernetes rollout with
  ``maxUnavailable: 1`` is the model here).
* A worker number whose processes exit before they are ready
  :data:`MAX_BOOT_FAILURES` times in a row ends the run with :data:`EXIT_BOOT_FAILED`
  (gunicorn's "worker failed to boot"), so that systemd sees it; unless it served
  earlier in this run and other workers serve now (a broken deploy after the start:
  they keep serving).
* A worker that exits less than :data:`STABLE_AFTER` seconds after it started is crash
  looping: it is restarted after ``min(max, min * 2**(n-1))`` seconds for the n-th quick
  exit in a row (``restart_backoff=(min, max)``); a worker that ran longer is replaced at
  once. Deterministic (no jitter): each worker's loop is spaced on its own, and the
  delays printed are the delays applied.
* ``main`` runs in each worker only once every worker has joined the cluster: each
  reports "joined" on its status socket after ``system.start()``, and when all N have,
  the arbiter answers "go" to each, so identities placed from ``main`` spread over all
  of them from the first second. If some worker has not joined :data:`JOIN_TIMEOUT`
  seconds after the start (it crash loops, say), the joined ones get "go" anyway, with a
  warning. After that first start, a worker that joins (a replacement after a crash, a
  rolling restart) gets "go" at once: the others are up already.
* Workers are forked, not exec'd, and a ``MODULE:FUNC`` is imported by each worker after
  its fork (the arbiter checks it once in a throw-away child, so a bad name is one error
  line rather than a crash loop, yet never holds the application's modules itself):
  a rolling restart runs the code now on disk, as gunicorn does without ``--preload``.
  ``tocsin.run`` also accepts a function object, even one defined in ``__main__``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import selectors
import signal
import socket
import sys
import traceback
from dataclasses import dataclass
from typing import Final, NoReturn, final

from ..clock import SystemClock
from ..stores._spi import redact
from . import _worker
from ._config import MainFunc, RunConfig, RunDir

__all__ = [
    "EXIT_BOOT_FAILED",
    "JOIN_TIMEOUT",
    "KILL_MARGIN",
    "MAX_BOOT_FAILURES",
    "STABLE_AFTER",
    "Arbiter",
]

log = logging.getLogger("tocsin.run")

#: A worker that ran this long (seconds) before exiting is not crash looping.
STABLE_AFTER: Final = 10.0
#: Seconds past ``stop_timeout`` after which the arbiter SIGKILLs a worker still stopping.
KILL_MARGIN: Final = 5.0
#: Seconds a replacement may take to be ready during a rolling restart before the next
#: worker is restarted anyway (its ``main`` may legitimately be slow; we do not wait forever).
BOOT_TIMEOUT: Final = 60.0
#: Processes of one worker number in a row that exit before they are ready (their
#: system failed to start, the application failed to import, ``main`` raised) after
#: which the run ends with :data:`EXIT_BOOT_FAILED` (gunicorn's "worker failed to boot").
MAX_BOOT_FAILURES: Final = 5
#: The arbiter's exit status when boot failures end the run (gunicorn's, too).
EXIT_BOOT_FAILED: Final = 3
#: Seconds the first start waits for every worker to join the cluster before ``main``
#: runs in those that did (with a warning); a worker joining later runs it at once.
JOIN_TIMEOUT: Final = 30.0
#: Upper bound of one selector wait: a backstop should a wake-up ever be missed.
MAX_WAIT: Final = 1.0

_HANDLED: Final = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCHLD)


@dataclass(slots=True)
class _Slot:
    """One worker number and the process currently holding it (mutable arbiter state)."""

    number: int
    pid: int | None = None
    started: float = 0.0
    ready: bool = False
    status_fd: int | None = None
    buffer: bytes = b""
    joined: bool = False  # the live process has joined the cluster
    served: bool = False  # a process of this number was ready once in this run
    boot_failures: int = 0  # processes in a row that exited before they were ready
    quick_exits: int = 0
    restart_at: float | None = None
    kill_at: float | None = None
    retiring: bool = False  # asked to stop for a rolling restart
    incarnation: str | None = None  # the live process's cluster incarnation, once joined
    release: str | None = None  # a dead predecessor's incarnation, for the next spawn


def describe_exit(code: int) -> str:
    """``"exited with status 1"`` or ``"was killed by SIGKILL"``."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}"
    return f"exited with status {code}"


@final
class Arbiter:
    """Starts ``config.workers`` workers and keeps them running until told to stop.

    Call :meth:`run` from the main thread with no event loop running; it returns the exit
    status: 0 after a clean stop (every worker stopped within the grace, exit status 0);
    :data:`EXIT_BOOT_FAILED` (3) when a worker number failed to boot
    :data:`MAX_BOOT_FAILURES` times in a row; 1 otherwise, a run stopped before any
    worker was ever ready while some had failed included.
    """

    def __init__(self, config: RunConfig, main: MainFunc | str, run_dir: RunDir) -> None:
        self.config = config
        self.main = main
        self.run_dir = run_dir
        self.clock = SystemClock()
        self.slots = [_Slot(n) for n in range(1, config.workers + 1)]
        self.stopping = False
        self.clean = True
        self.roll: list[int] = []  # worker numbers still to restart, SIGHUP
        self.rolling: _Slot | None = None  # the worker being replaced
        self.roll_deadline: float | None = None
        self.roll_again = False
        self.roll_paused = False  # waiting for a down worker before stopping a healthy one
        self.starting = False  # the first forks are under way
        self._wake_r, self._wake_w = os.pipe()
        # The death pipe: only the arbiter keeps the write end; when it dies, every worker
        # reads end-of-file (children close their inherited copy right after fork).
        self._death_r, self._death_w = os.pipe()
        self._selector = selectors.DefaultSelector()
        #: Whether workers may run ``main``: every worker joined, or JOIN_TIMEOUT passed.
        self.go_given = False
        self.go_deadline = self.clock.monotonic() + JOIN_TIMEOUT
        self.any_ready = False  # some worker was ready once in this run
        self.boot_failed = False  # some worker exited before it was ready
        self.boot_failure: int | None = None  # the number whose boot failures end the run

    # -- main loop -------------------------------------------------------------------

    def run(self) -> int:
        for fd in (self._wake_r, self._wake_w):
            os.set_blocking(fd, False)
        previous = {sig: signal.signal(sig, _noop) for sig in _HANDLED}
        old_wakeup = signal.set_wakeup_fd(self._wake_w, warn_on_full_buffer=False)
        try:
            log.info(
                "starting %d worker%s of %s in %s (secret in %s, mode 0600)",
                len(self.slots),
                "s" if len(self.slots) != 1 else "",
                self.config.target,
                self.run_dir.path,
                self.run_dir.secret_file,
            )
            self._selector.register(self._wake_r, selectors.EVENT_READ, None)
            self.go_deadline = self.clock.monotonic() + JOIN_TIMEOUT
            self.starting = True
            for slot in self.slots:
                # Between two forks: a SIGTERM that came meanwhile stops the start here.
                self._drain_signals()
                if self.stopping:
                    break
                self._spawn(slot)
            self.starting = False
            if self.roll_again and not self.stopping:  # a SIGHUP came during the start
                self.roll_again = False
                self._begin_roll()
            while not (self.stopping and not any(s.pid for s in self.slots)):
                self._wait()
                self._reap()
                self._tick()
        finally:
            signal.set_wakeup_fd(old_wakeup)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self._kill_all(signal.SIGKILL)  # only if we leave by an exception
            for slot in self.slots:
                self._close_status(slot)
            self._selector.close()
            for fd in (self._wake_r, self._wake_w, self._death_r, self._death_w):
                os.close(fd)
        if self.boot_failure is not None:
            log.error(
                "stopped: worker %d failed to boot %d times in a row",
                self.boot_failure,
                MAX_BOOT_FAILURES,
            )
            return EXIT_BOOT_FAILED
        if self.boot_failed and not self.any_ready:
            log.error("stopped; no worker was ever ready (see the failures above)")
            return 1
        log.info("stopped %s", "cleanly" if self.clean else "with errors (see above)")
        return 0 if self.clean else 1

    def _wait(self) -> None:
        now = self.clock.monotonic()
        deadlines = [d for s in self.slots for d in (s.restart_at, s.kill_at) if d is not None]
        if self.roll_deadline is not None:
            deadlines.append(self.roll_deadline)
        if not self.go_given:
            deadlines.append(self.go_deadline)
        timeout = min([MAX_WAIT, *(max(0.0, d - now) for d in deadlines)])
        for key, _ in self._selector.select(timeout):
            if key.data is None:
                self._drain_signals()
            else:
                slot: _Slot = key.data
                if slot.status_fd == key.fd:
                    self._read_status(slot)

    def _drain_signals(self) -> None:
        data = b""
        while True:
            try:
                chunk = os.read(self._wake_r, 4096)
            except BlockingIOError:
                break
            if not chunk:
                break
            data += chunk
        for signum in data:
            if signum in (signal.SIGTERM, signal.SIGINT):
                self._begin_stop(signal.Signals(signum).name)
            elif signum == signal.SIGHUP:
                self._begin_roll()
            # SIGCHLD: _reap runs after every wake-up anyway.

    # -- starting and reaping --------------------------------------------------------

    def _spawn(self, slot: _Slot) -> None:
        spec = self.config.worker_spec(slot.number, self.run_dir.secret)
        spec = dataclasses.replace(spec, release=slot.release)
        slot.release = slot.incarnation = None
        # A socket pair, not a pipe: the worker reports on it ("joined", "ready") and the
        # arbiter answers on the same descriptor ("go": every worker has joined).
        status_r, status_w = _status_pair()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        # Signals stay blocked across fork so the child cannot run the arbiter's handlers
        # (or write to its wake-up pipe) before it has reset them.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _HANDLED)
        try:
            pid = os.fork()
        except OSError as exc:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            os.close(status_r)
            os.close(status_w)
            log.error("worker %d could not be started: %s", slot.number, exc)
            self._schedule_restart(slot, quick=True)
            return
        if pid == 0:  # the child: never returns
            self._become_worker(spec, status_r, status_w, mask)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.close(status_w)
        os.set_blocking(status_r, False)
        slot.pid, slot.started, slot.ready, slot.joined = pid, self.clock.monotonic(), False, False
        slot.status_fd, slot.buffer = status_r, b""
        self._selector.register(status_r, selectors.EVENT_READ, slot)
        slot.restart_at = slot.kill_at = None
        log.info("worker %d started (pid %d, store %s)", slot.number, pid, redact(spec.store))

    def _become_worker(
        self,
        spec: _worker.WorkerSpec,
        status_r: int,
        status_w: int,
        mask: set[int | signal.Signals],
    ) -> NoReturn:
        """The child's side of ``fork``: drop the arbiter's state, become worker N."""
        from ._config import set_log_role
        from ._target import load_main, load_messages

        try:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            signal.signal(signal.SIGHUP, signal.SIG_IGN)  # reloads are the arbiter's business
            signal.signal(signal.SIGTERM, _worker.early_stop_handler)
            signal.signal(signal.SIGINT, _worker.early_stop_handler)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            self._selector.close()  # only its descriptor: the arbiter's epoll set is its own
            for fd in (status_r, self._wake_r, self._wake_w, self._death_w):
                os.close(fd)
            for other in self.slots:
                if other.status_fd is not None:
                    os.close(other.status_fd)
            set_log_role(f"worker {spec.number}")
        except BaseException:
            # Logging may be what failed: the traceback goes straight to stderr, so an
            # exit here is never silent (the arbiter then logs the exit status).
            with contextlib.suppress(BaseException):
                traceback.print_exc()
                sys.stderr.flush()
            os._exit(_worker.EXIT_FAILED)
        try:
            # A name is imported here, after the fork: each worker runs the code on disk now.
            main = self.main if not isinstance(self.main, str) else load_main(self.main)[1]
            spec = dataclasses.replace(spec, messages=load_messages(self.config.messages))
        except BaseException:
            log.exception("worker %d cannot load %s", spec.number, self.config.target)
            logging.shutdown()
            os._exit(_worker.EXIT_FAILED)
        _worker.child_main(
            spec,
            main,
            status_fd=status_w,
            death_fd=self._death_r,
            parent=os.getppid(),
            parent_death_signal=self.config.parent_death_signal,
        )

    def _reap(self) -> None:
        for slot in self.slots:
            if slot.pid is None:
                continue
            try:
                pid, status = os.waitpid(slot.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere (an embedding app's SIGCHLD policy)
                pid, status = slot.pid, 0
            if pid == 0:
                continue
            self._exited(slot, os.waitstatus_to_exitcode(status))

    def _exited(self, slot: _Slot, code: int) -> None:
        if slot.status_fd is not None:
            self._read_status(slot)
        self._close_status(slot)
        pid, uptime = slot.pid, self.clock.monotonic() - slot.started
        booted = slot.ready
        slot.pid, slot.kill_at, slot.ready, slot.joined = None, None, False, False
        if code != 0:
            # It may not have left the cluster: its replacement releases its lease.
            slot.release = slot.incarnation
        how = describe_exit(code)
        if self.stopping:
            if code != 0:
                self.clean = False
            log.info("worker %d (pid %s) %s", slot.number, pid, how)
            return
        if slot.retiring:
            slot.retiring = False
            log.info("worker %d (pid %s) %s for the rolling restart", slot.number, pid, how)
            self._spawn(slot)
            self.roll_deadline = self.clock.monotonic() + BOOT_TIMEOUT
            return
        if not booted:
            slot.boot_failures += 1
            self.boot_failed = True
            if self._boot_failures_end_the_run(slot, how):
                return
        quick = uptime < STABLE_AFTER
        delay = self._schedule_restart(slot, quick=quick)
        log.warning(
            "worker %d (pid %s) %s after %.1f s; restarting it %s",
            slot.number,
            pid,
            how,
            uptime,
            f"in {delay:g} s ({slot.quick_exits} quick exit(s) in a row)" if delay else "now",
        )
        if delay:  # counted from the line above: a log reader sees the delay applied
            slot.restart_at = self.clock.monotonic() + delay
        if slot is self.rolling:
            # The new code (or config) does not start: replacing the others would take
            # the whole service down. They keep running what they run; this one backs off.
            log.error(
                "rolling restart aborted: the new worker %d failed; the other workers keep "
                "running as they were",
                slot.number,
            )
            self.roll, self.rolling, self.roll_deadline, self.roll_again = [], None, None, False
            self.roll_paused = False
        if not delay:
            self._spawn(slot)

    def _boot_failures_end_the_run(self, slot: _Slot, how: str) -> bool:
        """After MAX_BOOT_FAILURES boot failures in a row of ``slot``: end the run (exit
        EXIT_BOOT_FAILED) so that a supervisor such as systemd sees the failure, unless
        this worker number served earlier in this run and another worker serves now (a
        broken deploy found by a rolling restart, or a replacement that cannot start:
        the others keep serving, this one keeps retrying with backoff)."""
        if slot.boot_failures < MAX_BOOT_FAILURES:
            return False
        serving = [s.number for s in self.slots if s.ready]
        if slot.served and serving:
            if slot.boot_failures == MAX_BOOT_FAILURES:
                log.error(
                    "worker %d failed to boot %d times in a row; it keeps retrying, and the "
                    "run goes on since worker %s still serve(s) (fix the code or settings, "
                    "then SIGHUP restarts it first)",
                    slot.number,
                    MAX_BOOT_FAILURES,
                    ", ".join(map(str, serving)),
                )
            return False
        log.error(
            "worker %d failed to boot %d times in a row (last: %s); stopping the run "
            "(exit status %d)",
            slot.number,
            MAX_BOOT_FAILURES,
            how,
            EXIT_BOOT_FAILED,
        )
        self.boot_failure = slot.number
        self._begin_stop(f"worker {slot.number} failed to boot")
        return True

    def _schedule_restart(self, slot: _Slot, *, quick: bool) -> float:
        low, high = self.config.restart_backoff
        slot.quick_exits = slot.quick_exits + 1 if quick else 0
        delay = min(high, low * 2 ** (slot.quick_exits - 1)) if slot.quick_exits else 0.0
        slot.restart_at = self.clock.monotonic() + delay if delay else None
        return delay

    def _read_status(self, slot: _Slot) -> None:
        assert slot.status_fd is not None
        try:
            data = os.read(slot.status_fd, 4096)
        except BlockingIOError:
            return
        if not data:
            self._close_status(slot)
            return
        slot.buffer += data
        *lines, slot.buffer = slot.buffer.split(b"\n")
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("event") == "joined":
                incarnation = event.get("incarnation")
                slot.incarnation = incarnation if isinstance(incarnation, str) else None
                slot.joined = True
                self._joined(slot)
            elif isinstance(event, dict) and event.get("event") == "ready":
                slot.ready = slot.served = True
                slot.boot_failures = 0
                self.any_ready = True
                where = event.get("listen")
                extra = "".join(
                    f", {what} on {event[what]}"
                    for what in ("metrics", "console")
                    if isinstance(event.get(what), str)
                )
                log.info(
                    "worker %d (pid %s) ready%s%s",
                    slot.number,
                    slot.pid,
                    f", listening on {where}" if where else " (no remoting: not listening)",
                    extra,
                )
                if slot is self.rolling or (self.roll and self.rolling is None):
                    self._roll_next()  # the next one, or a paused rollout goes on

    def _close_status(self, slot: _Slot) -> None:
        if slot.status_fd is not None:
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(slot.status_fd)
            os.close(slot.status_fd)
            slot.status_fd = None

    # -- the start of main(): once every worker has joined ---------------------------------

    def _joined(self, slot: _Slot) -> None:
        """A worker joined the cluster: let it run ``main`` now if the first start is over
        (a replacement: the others are up), else once every worker has joined."""
        if self.go_given:
            self._send_go(slot)
            return
        if all(s.joined for s in self.slots):
            self.go_given = True
            log.info(
                "all %d worker%s joined the cluster; main() starts in each",
                len(self.slots),
                "s" if len(self.slots) != 1 else "",
            )
            for other in self.slots:
                self._send_go(other)

    def _send_go(self, slot: _Slot) -> None:
        if slot.status_fd is None or self.stopping:
            return
        line = json.dumps({"event": "go"}).encode() + b"\n"
        with contextlib.suppress(OSError):  # it died meanwhile: its exit is reaped next
            os.write(slot.status_fd, line)

    def _join_timed_out(self) -> None:
        self.go_given = True
        missing = [s.number for s in self.slots if not s.joined]
        log.warning(
            "only %d of %d workers joined the cluster within %g s (not: worker %s); main() "
            "starts in the joined ones now, and in each other one as soon as it joins",
            len(self.slots) - len(missing),
            len(self.slots),
            JOIN_TIMEOUT,
            ", ".join(map(str, missing)),
        )
        for slot in self.slots:
            if slot.joined:
                self._send_go(slot)

    # -- time-driven steps -------------------------------------------------------------

    def _tick(self) -> None:
        now = self.clock.monotonic()
        if not self.go_given and not self.stopping and now >= self.go_deadline:
            self._join_timed_out()
        for slot in self.slots:
            if slot.restart_at is not None and now >= slot.restart_at and not self.stopping:
                self._spawn(slot)
            if slot.kill_at is not None and now >= slot.kill_at and slot.pid is not None:
                log.error(
                    "worker %d (pid %d) did not stop within %g s; sending SIGKILL",
                    slot.number,
                    slot.pid,
                    self.config.stop_timeout + KILL_MARGIN,
                )
                if self.stopping:
                    self.clean = False
                slot.kill_at = None
                with contextlib.suppress(ProcessLookupError):
                    os.kill(slot.pid, signal.SIGKILL)
        if self.roll_deadline is not None and now >= self.roll_deadline and self.rolling:
            log.warning(
                "worker %d was not ready within %g s; the rolling restart goes on once "
                "every worker is ready",
                self.rolling.number,
                BOOT_TIMEOUT,
            )
            self._roll_next()

    # -- stop ----------------------------------------------------------------------------

    def _begin_stop(self, why: str) -> None:
        if self.stopping:
            log.warning("%s again: killing the workers now", why)
            self.clean = False
            self._kill_all(signal.SIGKILL)
            return
        self.stopping = True
        self.roll, self.rolling, self.roll_deadline, self.roll_paused = [], None, None, False
        live = [s for s in self.slots if s.pid is not None]
        log.info(
            "%s: stopping %d worker%s (grace %g s)",
            why,
            len(live),
            "s" if len(live) != 1 else "",
            self.config.stop_timeout,
        )
        deadline = self.clock.monotonic() + self.config.stop_timeout + KILL_MARGIN
        for slot in self.slots:
            slot.restart_at = None
            if slot.pid is not None:
                slot.kill_at = deadline
                with contextlib.suppress(ProcessLookupError):
                    os.kill(slot.pid, signal.SIGTERM)

    def _kill_all(self, sig: int) -> None:
        for slot in self.slots:
            if slot.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(slot.pid, sig)
                if sig == signal.SIGKILL:
                    with contextlib.suppress(ChildProcessError):
                        os.waitpid(slot.pid, 0)
                    slot.pid = None

    # -- rolling restart -----------------------------------------------------------------

    def _begin_roll(self) -> None:
        if self.stopping:
            return
        if self.starting or self.rolling is not None or self.roll:
            self.roll_again = True
            log.info(
                "SIGHUP: %s; a rolling restart follows it",
                "the workers are being started"
                if self.starting
                else "a rolling restart is under way",
            )
            return
        # Down first (in backoff, or not ready yet): they serve nothing, so restarting
        # them costs nothing, and a fixed deploy brings them back before any healthy
        # worker is touched. Then the healthy ones, one at a time.
        down = [s.number for s in self.slots if not s.ready]
        up = [s.number for s in self.slots if s.ready]
        log.info(
            "SIGHUP: rolling restart of %d worker(s), one at a time%s",
            len(self.slots),
            f", the down one(s) first (worker {', '.join(map(str, down))})" if down else "",
        )
        self.roll = down + up
        self._roll_next()

    def _roll_next(self) -> None:
        """Restart the next worker of the rolling restart, if that takes nothing down.

        A down worker (in backoff, or started and not ready yet) is (re)started at once,
        with its backoff and boot-failure count reset: the deploy is new. A healthy worker
        is stopped only while every other worker is ready; otherwise the rollout pauses
        and goes on when the last one down becomes ready (``_read_status``).
        """
        self.rolling, self.roll_deadline = None, None
        while self.roll:
            slot = self.slots[self.roll[0] - 1]
            if slot.ready:
                down = [s.number for s in self.slots if s is not slot and not s.ready]
                if down:
                    if not self.roll_paused:
                        log.info(
                            "rolling restart paused: worker %s is down; worker %d keeps "
                            "serving until every other worker is ready",
                            ", ".join(map(str, down)),
                            slot.number,
                        )
                    self.roll_paused = True
                    return
            self.roll.pop(0)
            self.roll_paused = False
            slot.quick_exits = slot.boot_failures = 0
            self.rolling = slot
            self.roll_deadline = self.clock.monotonic() + BOOT_TIMEOUT
            if slot.pid is None:  # in backoff: start it now, with the code now on disk
                log.info("rolling restart: starting worker %d (down, in backoff) now", slot.number)
                self._spawn(slot)
                return
            slot.retiring = True
            slot.kill_at = self.clock.monotonic() + self.config.stop_timeout + KILL_MARGIN
            log.info(
                "rolling restart: stopping worker %d (pid %d)%s",
                slot.number,
                slot.pid,
                "" if slot.ready else " (not ready)",
            )
            with contextlib.suppress(ProcessLookupError):
                os.kill(slot.pid, signal.SIGTERM)
            return
        if self.roll_again:
            self.roll_again = False
            self._begin_roll()
        else:
            log.info("rolling restart done")


def _status_pair() -> tuple[int, int]:
    """``(arbiter end, worker end)`` of a worker's status channel (both inheritable: the
    child keeps its end across ``fork``; the arbiter closes it right after)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return ours.detach(), theirs.detach()


def _noop(signum: int, frame: object) -> None:
    """Python-level handler; the work is done by the loop reading the wake-up fd."""
