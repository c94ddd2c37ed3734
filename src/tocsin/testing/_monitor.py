# SPDX-License-Identifier: Apache-2.0
"""SystemMonitor: record the crashes and dead letters of a test, and fail on the unexpected.

A test that lets an actor crash, or a message fall into the dead letters, without saying
so is usually a test that passes for the wrong reason: the supervisor restarted the actor
and the assertion that follows still held. The monitor records both and :meth:`check`
fails on any the test did not declare (``allow_*``/``expect_*``) or consume (``take_*``).

Where crashes come from (only public surfaces, so the runtime can change underneath):

* the events ``ActorRestarted`` and ``ActorSuspended`` of the watched system (they carry
  the error), and
* the ``tocsin.actor`` logger: every supervised failure is logged there with its
  exception, whatever the directive (``RESUME`` and ``STOP`` publish no event carrying
  the error), as are failures of ``post_stop`` and of a factory during a restart; and any
  record at ERROR or above with an exception from another ``tocsin.*`` logger (a timer
  callback that raised). While the monitor runs, ``tocsin.actor`` is lowered to DEBUG so
  that the failure record exists at all; a filter hides from your handlers every record
  below the level you had configured, so what you see in logs does not change.

One error seen through both sources is one crash. Log records are process-wide: a crash
in another system of the same test is recorded too (it is a crash in the test).

Prior art: Akka TestKit's ``EventFilter`` (logged errors fail a test unless expected),
pytest's ``recwarn`` (``pop``) and ``pytest.warns`` (expect at least one).
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, final

from ..actor import PID, ActorRestarted, ActorSuspended, DeadLetter
from ..actor import DeadLetterReason as _Reason
from ..system import ActorSystem

__all__ = ["Crash", "SystemMonitor"]

#: The logger that carries every supervised failure of an actor, with its exception.
ACTOR_LOGGER = "tocsin.actor"
#: Parent of every tocsin logger; ERROR records with an exception under it are crashes.
ROOT_LOGGER = "tocsin"
#: Frames of a crash's traceback shown in a failure report (the innermost ones).
TRACEBACK_FRAMES = 8


@final
@dataclass(frozen=True, slots=True)
class Crash:
    """A failure of an actor (or of tocsin's own machinery) recorded by a monitor.

    Attributes:
        error: the exception.
        pid: the actor that failed, when the source names it.
        detail: what happened: the log message (``"actor /user/a failed"``) or the event
            (``"restarted"``, ``"suspended"``).
    """

    error: BaseException
    pid: PID | None
    detail: str

    def describe(self) -> str:
        """One line: the error, the actor and what happened."""
        where = f" in {self.pid}" if self.pid is not None else ""
        return f"{type(self.error).__name__}: {self.error}{where} ({self.detail})"


@dataclass(slots=True)
class _Rule:
    """One allowance or expectation; ``count`` is checked for expectations only."""

    kind: str  # "crash" | "dead letter"
    matches: Callable[[Any], bool]
    label: str
    expect: bool
    count: int | None = None
    matched: int = 0


@dataclass(slots=True)
class _Entry:
    item: Any
    taken: bool = False
    covered: bool = False


@dataclass(slots=True)
class _State:
    crashes: list[_Entry] = field(default_factory=list)
    letters: list[_Entry] = field(default_factory=list)
    by_error: dict[int, _Entry] = field(default_factory=dict)
    rules: list[_Rule] = field(default_factory=list)


@final
class SystemMonitor:
    """Records the crashes and dead letters of one system; :meth:`check` fails on the unseen.

    Use it as a context manager around the code under test (the ``tocsin_system`` pytest
    fixture does this for you; ``tocsin_monitor`` is the monitor it uses)::

        with SystemMonitor(system) as monitor:
            ...
            monitor.expect_dead_letters(1)
        monitor.check()

    A crash or dead letter is *seen* when an allowance or expectation matches it, or when
    the test consumed it with :meth:`take_crashes` / :meth:`take_dead_letters`.
    Everything else makes :meth:`check` raise ``AssertionError``.

    Args:
        system: the system whose events to watch (started or not).
    """

    def __init__(self, system: ActorSystem) -> None:
        self.system = system
        self._state = _State()
        self._subscriptions: list[Any] = []
        self._actor_logger = logging.getLogger(ACTOR_LOGGER)
        self._root_logger = logging.getLogger(ROOT_LOGGER)
        self._saved_level: int | None = None  # the logger's own level, when we lowered it
        self._filter = _RecordFilter(self._on_record, self._floor)
        self._handler = _RecordHandler(self._on_record)
        self._open = False

    # -- recording ---------------------------------------------------------------------

    def start(self) -> None:
        """Begin recording (idempotent)."""
        if self._open:
            return
        self._open = True
        events = self.system.events
        self._subscriptions = [
            events.subscribe(self._on_letter, DeadLetter),
            events.subscribe(self._on_failure_event, ActorRestarted, ActorSuspended),
        ]
        logger = self._actor_logger
        # Records below the level the user configured are recorded, then hidden again.
        if logger.getEffectiveLevel() > logging.DEBUG:
            self._saved_level = logger.level
            logger.setLevel(logging.DEBUG)
        logger.addFilter(self._filter)
        self._root_logger.addHandler(self._handler)

    def close(self) -> None:
        """Stop recording and restore the logger (idempotent). Recorded items stay."""
        if not self._open:
            return
        self._open = False
        for sub in self._subscriptions:
            sub.cancel()
        self._subscriptions = []
        logger = self._actor_logger
        logger.removeFilter(self._filter)
        if self._saved_level is not None:
            if logger.level == logging.DEBUG:  # still ours: someone else's level stays
                logger.setLevel(self._saved_level)
            self._saved_level = None
        self._root_logger.removeHandler(self._handler)

    def __enter__(self) -> SystemMonitor:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _floor(self) -> int:
        """The level below which a ``tocsin.actor`` record would not exist without us.

        Read at each record, so a level set during the test (``caplog.set_level(DEBUG)``
        on the root logger, say) is honoured. A level set on ``tocsin.actor`` itself
        replaces ours and is honoured as is; only DEBUG, set there explicitly while the
        monitor runs, cannot be told from ours (the records stay hidden).
        """
        logger = self._actor_logger
        if self._saved_level is None or logger.level != logging.DEBUG:
            return logging.NOTSET  # we changed nothing, or someone replaced our level
        if self._saved_level != logging.NOTSET:
            return self._saved_level
        parent = logger.parent
        return parent.getEffectiveLevel() if parent is not None else logging.WARNING

    def _on_letter(self, letter: DeadLetter) -> None:
        self._state.letters.append(_Entry(letter))

    def _on_failure_event(self, event: ActorRestarted | ActorSuspended) -> None:
        detail = "restarted" if isinstance(event, ActorRestarted) else "suspended"
        self._record_crash(event.error, event.pid, detail)

    def _on_record(self, record: logging.LogRecord) -> None:
        info = record.exc_info
        if not info or info[1] is None:
            return
        pid = next((a for a in _args(record) if isinstance(a, PID)), None)
        self._record_crash(info[1], pid, record.getMessage())

    def _record_crash(self, error: BaseException, pid: PID | None, detail: str) -> None:
        state = self._state
        known = state.by_error.get(id(error))
        if known is not None and known.item.error is error:
            if known.item.pid is None and pid is not None:  # the event names the actor
                known.item = Crash(error, pid, known.item.detail)
            return
        entry = _Entry(Crash(error, pid, detail))
        state.crashes.append(entry)
        state.by_error[id(error)] = entry

    # -- what the test says ------------------------------------------------------------

    @property
    def crashes(self) -> list[Crash]:
        """Every crash recorded so far, in order (a copy; taken ones included)."""
        return [e.item for e in self._state.crashes]

    @property
    def dead_letters(self) -> list[DeadLetter]:
        """Every dead letter recorded so far, in order (a copy; taken ones included)."""
        return [e.item for e in self._state.letters]

    def allow_crashes(self, *types: type[BaseException]) -> None:
        """Let crashes with these exception types (any crash when none given) pass, any number."""
        self._state.rules.append(
            _Rule("crash", _error_matcher(types), _types_label(types), expect=False)
        )

    def expect_crashes(self, *types: type[BaseException], count: int | None = None) -> None:
        """Require crashes with these exception types (any type when none given).

        :meth:`check` fails unless exactly ``count`` of them happened (at least one when
        ``count`` is ``None``); those are seen.

        Raises:
            ValueError: ``count`` is negative or not an int.
        """
        _check_count(count)
        rule = _Rule("crash", _error_matcher(types), _types_label(types), True, count)
        self._state.rules.append(rule)

    def allow_dead_letters(self, *, reason: _Reason | None = None) -> None:
        """Let dead letters (only those with ``reason`` when given) pass, any number."""
        self._state.rules.append(
            _Rule("dead letter", _letter_matcher(reason), _reason_label(reason), expect=False)
        )

    def expect_dead_letters(
        self, count: int | None = None, *, reason: _Reason | None = None
    ) -> None:
        """Require dead letters (only those with ``reason`` when given).

        :meth:`check` fails unless exactly ``count`` of them were published (at least one
        when ``count`` is ``None``); those are seen.

        Raises:
            ValueError: ``count`` is negative or not an int.
        """
        _check_count(count)
        rule = _Rule("dead letter", _letter_matcher(reason), _reason_label(reason), True, count)
        self._state.rules.append(rule)

    def take_crashes(self) -> list[Crash]:
        """The crashes recorded since the last take; they count as seen."""
        return [e.item for e in _take(self._state.crashes)]

    def take_dead_letters(self) -> list[DeadLetter]:
        """The dead letters recorded since the last take; they count as seen."""
        return [e.item for e in _take(self._state.letters)]

    # -- the verdict -------------------------------------------------------------------

    def problems(self) -> list[str]:
        """Why :meth:`check` would fail: one paragraph per unseen item or unmet expectation."""
        state = self._state
        for rule in state.rules:
            rule.matched = 0
        for kind, entries in (("crash", state.crashes), ("dead letter", state.letters)):
            for entry in entries:
                entry.covered = False
                for rule in state.rules:
                    if rule.kind == kind and rule.matches(entry.item):
                        rule.matched += 1
                        entry.covered = True
        found: list[str] = []
        for rule in state.rules:
            if not rule.expect:
                continue
            if rule.count is None and rule.matched == 0:
                found.append(f"expected at least one {rule.kind} ({rule.label}), got none")
            elif rule.count is not None and rule.matched != rule.count:
                found.append(
                    f"expected {rule.count} {rule.kind}(s) ({rule.label}), got {rule.matched}"
                )
        found.extend(
            f"unexpected crash: {entry.item.describe()}\n{_tail(entry.item)}"
            for entry in state.crashes
            if not (entry.taken or entry.covered)
        )
        found.extend(
            f"unexpected dead letter: {_describe_letter(entry.item)}"
            for entry in state.letters
            if not (entry.taken or entry.covered)
        )
        return found

    def check(self) -> None:
        """Fail if a crash or dead letter went unseen, or an expectation was not met.

        Raises:
            AssertionError: listing each problem, with the innermost frames of each crash
                and how to declare it.
        """
        found = self.problems()
        if found:
            raise AssertionError(_report(found))


# -- logging glue ------------------------------------------------------------------------


@final
class _RecordFilter(logging.Filter):
    """On ``tocsin.actor``: records failures, hides what the user's level would have hidden."""

    def __init__(
        self, on_record: Callable[[logging.LogRecord], None], floor: Callable[[], int]
    ) -> None:
        super().__init__()
        self._on_record = on_record  # the monitor's: what it records
        self._floor = floor  # the monitor's: the lowest level the user's config shows

    def filter(self, record: logging.LogRecord) -> bool:
        self._on_record(record)
        return record.levelno >= self._floor()


@final
class _RecordHandler(logging.Handler):
    """On ``tocsin``: records ERROR-and-above records with an exception from other loggers."""

    def __init__(self, on_record: Callable[[logging.LogRecord], None]) -> None:
        super().__init__(logging.ERROR)
        self._on_record = on_record  # the monitor's: what it records

    def emit(self, record: logging.LogRecord) -> None:
        if record.name != ACTOR_LOGGER:  # the filter has already seen those
            self._on_record(record)


def _args(record: logging.LogRecord) -> tuple[Any, ...]:
    args = record.args
    return args if isinstance(args, tuple) else ()


# -- matching and reporting ----------------------------------------------------------------


def _error_matcher(types: tuple[type[BaseException], ...]) -> Callable[[Any], bool]:
    for t in types:
        if not (isinstance(t, type) and issubclass(t, BaseException)):
            raise TypeError(f"crash types must be exception classes, got {t!r}")
    if not types:
        return lambda crash: True
    return lambda crash: isinstance(crash.error, types)


def _letter_matcher(reason: _Reason | None) -> Callable[[Any], bool]:
    if reason is None:
        return lambda letter: True
    try:
        wanted = _Reason(reason)  # a DeadLetterReason, or its value ("stopped")
    except ValueError:
        allowed = ", ".join(f"DeadLetterReason.{r.name}" for r in _Reason)
        raise ValueError(f"`reason` must be one of {allowed} or None, got {reason!r}") from None
    return lambda letter: letter.reason is wanted


def _check_count(count: int | None) -> None:
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
        raise ValueError(f"`count` must be an int >= 0 or None, got {count!r}")


def _types_label(types: tuple[type[BaseException], ...]) -> str:
    return " | ".join(t.__name__ for t in types) if types else "any type"


def _reason_label(reason: _Reason | None) -> str:
    return f"reason {_Reason(reason).value}" if reason is not None else "any reason"


def _take(entries: list[_Entry]) -> list[_Entry]:
    fresh = [e for e in entries if not e.taken]
    for e in fresh:
        e.taken = True
    return fresh


def _describe_letter(letter: DeadLetter) -> str:
    target = letter.target if letter.target is not None else "nobody"
    return f"{letter.message!r} to {target} ({letter.reason.value}), sender {letter.sender!r}"


def _tail(crash: Crash) -> str:
    error = crash.error
    frames = traceback.extract_tb(error.__traceback__)[-TRACEBACK_FRAMES:]
    lines = traceback.format_list(frames) + traceback.format_exception_only(error)
    return "".join("    " + line for chunk in lines for line in chunk.splitlines(True)).rstrip()


def _report(found: list[str]) -> str:
    head = f"{len(found)} problem(s) with crashes or dead letters:"
    body = "\n".join(f"- {p}" for p in found)
    hint = (
        "Declare what the test causes on purpose: tocsin_monitor.expect_crashes(ValueError) "
        "/ allow_crashes(...), expect_dead_letters(n) / allow_dead_letters(...), take_*(), "
        "or @pytest.mark.tocsin(allow_crashes=..., allow_dead_letters=...)."
    )
    return f"{head}\n{body}\n{hint}"
