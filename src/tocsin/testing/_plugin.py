# SPDX-License-Identifier: Apache-2.0
"""The pytest plugin: fixtures ``tocsin_clock``/``_store``/``_system``/``_monitor``, async tests.

Registered through the ``pytest11`` entry point (name ``tocsin``), so installing tocsin is
enough; ``-p no:tocsin`` turns it off. The user guide is ``docs/testing.md``.

Which async tests this plugin runs. A plain ``async def`` test runs on a fresh event loop
of its own (an :class:`asyncio.Runner`, closed after the test). The plugin never runs a
test another async plugin owns, so it coexists with them:

* a test marked ``asyncio`` belongs to pytest-asyncio when pytest-asyncio is active (in
  its auto mode it marks every async test, so it owns them all); with pytest-asyncio
  absent or disabled, the plugin runs it, so such suites work without pytest-asyncio;
* a test marked ``trio`` or ``anyio``, or using the ``anyio_backend`` fixture, belongs
  to pytest-trio / anyio.

Which loop the fixtures use. ``tocsin_system`` is started on the loop the test runs on:
the plugin's own runner for its tests, pytest-asyncio's loop (of the test's loop scope)
for a pytest-asyncio test. The fixtures themselves are synchronous, so they work in both
worlds; pytest-asyncio async fixtures may use ``tocsin_system`` when their loop scope is
the test's. Rejected: ``async def`` fixtures, which would need pytest-asyncio (or a second
async-fixture runner in this plugin, fighting pytest-asyncio's over the same fixtures).

Where the verdict is given. The crash/dead-letter check runs right after the test body
(``pytest_runtest_call``), so it fails the *test*, not its teardown; the stop comes later,
in the fixture's teardown, where only what the stop itself caused is reported.

Hangs. The body, the settle after it and the teardown each run under the hang guard
(``tocsin_async_timeout``, default 60 real seconds); past it the test fails naming each
busy actor and the await it is suspended at (``_busy.py``). A teardown that finds an
actor still in a message once the clock settled does not wait for it (it would wait for
ever on a ManualClock nobody advances): the stop's grace passes on the clock, the
handler is cancelled, and the teardown fails naming it.

Prior art: trio's pytest plugin (``autojump_clock`` fixture), pytest-asyncio's runner per
loop scope, pykka's ``conftest`` runtimes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
from collections.abc import Callable, Coroutine, Generator, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, final

import pytest

from ..actor import DeadLetterReason
from ..clock import Clock, ManualClock
from ..stores import MemoryStore, Store
from ..system import ActorSystem
from ._busy import busy_actors, busy_on_loop, clock_state
from ._monitor import SystemMonitor, _report

#: The instant ``tocsin_clock`` starts at, unless ``@pytest.mark.tocsin(wall=...)`` says
#: otherwise: fixed, so cron fire times and printed timestamps are the same on every run.
FIXED_WALL = datetime(2030, 1, 1, tzinfo=UTC)
#: The zone ``tocsin_system`` evaluates cron in by default: fixed for the same reason
#: (the machine's zone would make a cron test pass in Paris and fail in CI).
DEFAULT_TIMEZONE = "UTC"
#: Markers by which other plugins claim a test; the plugin never runs those tests.
FOREIGN_MARKERS = ("trio", "anyio")
#: Real seconds an async test (body, settle and teardown each) may take by default before
#: the hang guard fails it (``tocsin_async_timeout``; 0 turns it off).
DEFAULT_ASYNC_TIMEOUT = 60
#: Keyword arguments ``@pytest.mark.tocsin(...)`` accepts.
MARKER_OPTIONS = ("wall", "autojump", "timezone", "allow_crashes", "allow_dead_letters", "timeout")

_MARKER_HELP = (
    "tocsin(wall=None, autojump=False, timezone='UTC', allow_crashes=False, "
    "allow_dead_letters=False, timeout=None): options of the tocsin_clock / tocsin_system "
    "fixtures. allow_crashes: True or exception class(es); allow_dead_letters: True or a "
    "DeadLetterReason; timeout: this test's hang guard in real seconds (0: none; default: "
    "the tocsin_async_timeout ini option). See docs/testing.md."
)


@final
@dataclass(slots=True)
class _Session:
    """What one test's ``tocsin_system`` left for the hooks (on the item's stash)."""

    system: ActorSystem
    clock: ManualClock
    monitor: SystemMonitor
    run: Callable[[Coroutine[Any, Any, Any]], Any]
    verdict: str = "pending"  # "pending" | "passed" | "failed" (by the call-phase check)


@final
@dataclass(frozen=True, slots=True)
class _Options:
    wall: datetime | float = FIXED_WALL
    autojump: bool = False
    timezone: str = DEFAULT_TIMEZONE
    allow_crashes: tuple[type[BaseException], ...] | None = None  # None: not allowed
    allow_dead_letters: tuple[DeadLetterReason | None, ...] = field(default=())
    timeout: float | None = None  # None: the ini option's hang guard


_SESSION = pytest.StashKey[_Session]()
_RUNNER = pytest.StashKey[asyncio.Runner]()


# -- configuration -----------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "tocsin_async_timeout",
        "Real seconds an async test run by the tocsin plugin (its body; then settling "
        "and stopping tocsin_system) may take before it fails naming what is still busy "
        f"(a hang guard, not a speed test; default {DEFAULT_ASYNC_TIMEOUT}, 0 = no limit).",
        default=str(DEFAULT_ASYNC_TIMEOUT),
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", _MARKER_HELP)
    if not config.pluginmanager.hasplugin("asyncio"):
        # Suites written for pytest-asyncio keep working (and pass --strict-markers)
        # when it is not installed: the plugin runs their tests itself.
        config.addinivalue_line(
            "markers", "asyncio: run by the tocsin plugin (pytest-asyncio is not active)"
        )


def _options(item: pytest.Item) -> _Options:
    """The merged ``tocsin`` markers of ``item`` (the closest marker wins per keyword)."""
    given: dict[str, Any] = {}
    for marker in item.iter_markers("tocsin"):
        if marker.args:
            raise pytest.UsageError(
                f"{item.nodeid}: @pytest.mark.tocsin takes keyword arguments only "
                f"({', '.join(MARKER_OPTIONS)}), got positional {marker.args!r}"
            )
        for key, value in marker.kwargs.items():
            if key not in MARKER_OPTIONS:
                raise pytest.UsageError(
                    f"{item.nodeid}: @pytest.mark.tocsin got unknown option {key!r}; "
                    f"allowed: {', '.join(MARKER_OPTIONS)}"
                )
            given.setdefault(key, value)
    crashes = given.get("allow_crashes", False)
    if crashes is True:
        allowed: tuple[type[BaseException], ...] | None = ()
    elif crashes is False:
        allowed = None
    else:
        allowed = crashes if isinstance(crashes, tuple) else (crashes,)
        for t in allowed:
            if not (isinstance(t, type) and issubclass(t, BaseException)):
                raise pytest.UsageError(
                    f"{item.nodeid}: allow_crashes must be True or exception class(es), "
                    f"got {crashes!r}"
                )
    letters = given.get("allow_dead_letters", False)
    if letters is True:
        reasons: tuple[DeadLetterReason | None, ...] = (None,)
    elif letters is False:
        reasons = ()
    elif isinstance(letters, DeadLetterReason):
        reasons = (letters,)
    else:
        raise pytest.UsageError(
            f"{item.nodeid}: allow_dead_letters must be True, False or a DeadLetterReason, "
            f"got {letters!r}"
        )
    timeout = given.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout >= 0
    ):
        raise pytest.UsageError(
            f"{item.nodeid}: timeout must be a number of real seconds >= 0 (0: no hang "
            f"guard), got {timeout!r}"
        )
    return _Options(
        wall=given.get("wall", FIXED_WALL),
        autojump=bool(given.get("autojump", False)),
        timezone=given.get("timezone", DEFAULT_TIMEZONE),
        allow_crashes=allowed,
        allow_dead_letters=reasons,
        timeout=None if timeout is None else float(timeout),
    )


# -- which tests are ours ----------------------------------------------------------------


def _asyncio_plugin_owns(item: pytest.Item) -> bool:
    return item.get_closest_marker("asyncio") is not None and item.config.pluginmanager.hasplugin(
        "asyncio"
    )


def _hypothesis_inner(func: Any) -> Any:
    """The ``async def`` body of a Hypothesis ``@given`` test, else ``None``."""
    inner = getattr(getattr(func, "hypothesis", None), "inner_test", None)
    return inner if inspect.iscoroutinefunction(inner) else None


def _is_ours(item: pytest.Item) -> bool:
    """Whether the plugin runs this test: a coroutine function no other plugin claims."""
    if not isinstance(item, pytest.Function):
        return False
    func = item.obj
    if not (inspect.iscoroutinefunction(func) or _hypothesis_inner(func) is not None):
        return False
    if any(item.get_closest_marker(name) is not None for name in FOREIGN_MARKERS):
        return False
    if "anyio_backend" in item.fixturenames:
        return False
    return not _asyncio_plugin_owns(item)


def _fixture_manager(item: pytest.Item) -> Any:
    """pytest's fixture manager, through the plugin manager (it registers as
    ``"funcmanage"``): its ``getfixturedefs`` and ``getfixtureinfo`` are what pytest's
    own items use, read here without reaching into an item's private attributes."""
    return item.config.pluginmanager.get_plugin("funcmanage")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Refuse an async fixture in a test the plugin runs: it would live on another loop."""
    if not _is_ours(item):
        return
    assert isinstance(item, pytest.Function)
    manager = _fixture_manager(item)
    for name in item.fixturenames:
        defs = manager.getfixturedefs(name, item)
        if not defs:
            continue  # a direct parametrize argument: no fixture behind it
        func = defs[-1].func
        if inspect.iscoroutinefunction(func) or inspect.isasyncgenfunction(func):
            hint = (
                "mark the test @pytest.mark.asyncio (or use asyncio_mode = auto) so "
                "pytest-asyncio runs both on one loop"
                if item.config.pluginmanager.hasplugin("asyncio")
                else "set it up inside the test, or install pytest-asyncio and mark the "
                "test @pytest.mark.asyncio"
            )
            pytest.fail(
                f"{item.nodeid} uses the async fixture {name!r}, but the tocsin plugin runs "
                f"async tests, not async fixtures (they would run on another event loop): "
                f"{hint}",
                pytrace=False,
            )


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run a plain ``async def`` test on the item's runner (or a fresh one).

    A Hypothesis ``@given`` test runs each example on that loop, one after another.
    """
    if not _is_ours(pyfuncitem):
        return None
    _options(pyfuncitem)  # a bad marker fails here, before a coroutine is made
    func = pyfuncitem.obj
    # The same selection pytest's own pyfunc_call makes: the test's arguments only.
    info = _fixture_manager(pyfuncitem).getfixtureinfo(pyfuncitem, func, pyfuncitem.cls)
    kwargs = {name: pyfuncitem.funcargs[name] for name in info.argnames}

    async def guarded(coro: Coroutine[Any, Any, Any]) -> None:
        await _guard(pyfuncitem, coro, "did not finish")

    with contextlib.ExitStack() as stack:
        runner = pyfuncitem.stash.get(_RUNNER, None)
        if runner is None:
            runner = stack.enter_context(asyncio.Runner())
        inner = _hypothesis_inner(func)
        if inner is None:
            runner.run(guarded(func(**kwargs)))
            return True

        @functools.wraps(inner)  # Hypothesis names the falsifying example after it
        def run_example(*args: Any, **example_kwargs: Any) -> None:
            runner.run(guarded(inner(*args, **example_kwargs)))

        # Hypothesis calls inner_test once per example; pytest-asyncio swaps it the same way.
        hypothesis = func.hypothesis
        hypothesis.inner_test = run_example
        try:
            func(**kwargs)
        finally:
            hypothesis.inner_test = inner
    return True


# -- fixtures ----------------------------------------------------------------------------


@pytest.fixture
def _tocsin_runner(request: pytest.FixtureRequest) -> Iterator[asyncio.Runner]:
    """The event loop of one test the plugin runs, shared with its tocsin fixtures."""
    with asyncio.Runner() as runner:
        request.node.stash[_RUNNER] = runner
        try:
            yield runner
        finally:
            del request.node.stash[_RUNNER]


@pytest.fixture
def tocsin_clock(request: pytest.FixtureRequest) -> ManualClock:
    """A :class:`~tocsin.ManualClock` at a fixed instant (2030-01-01T00:00:00Z).

    ``@pytest.mark.tocsin(wall=..., autojump=True)`` changes the instant or turns autojump
    on. Monotonic time starts at 0.
    """
    options = _options(request.node)
    return ManualClock(wall=options.wall, autojump=options.autojump)


@pytest.fixture
def tocsin_store() -> Store | str:
    """The store ``tocsin_system`` uses: a fresh :class:`~tocsin.testing.MemoryStore`.

    Override it (in a conftest, or parametrize it) to run the same tests on SQLite or
    PostgreSQL: return a store URL (``f"sqlite:///{tmp_path}/t.db"``) or a store object.
    """
    return MemoryStore()


@pytest.fixture
def tocsin_system(
    request: pytest.FixtureRequest, tocsin_clock: ManualClock, tocsin_store: Store | str
) -> Iterator[ActorSystem]:
    """A started :class:`~tocsin.ActorSystem` on ``tocsin_clock`` and ``tocsin_store``.

    Cron defaults to UTC (``@pytest.mark.tocsin(timezone=...)``). After the test body it
    settles the clock and fails the test on any crash or dead letter the test did not
    declare (``tocsin_monitor``, or ``@pytest.mark.tocsin(allow_crashes=...,
    allow_dead_letters=...)``); then it stops the system, and a crash or dead letter
    caused by the stop is an error of the teardown.
    """
    item = request.node
    options = _options(item)
    run = _runner_for(request)
    system = ActorSystem(clock=tocsin_clock, store=tocsin_store, timezone=options.timezone)
    monitor = SystemMonitor(system)
    if options.allow_crashes is not None:
        monitor.allow_crashes(*options.allow_crashes)
    for reason in options.allow_dead_letters:
        monitor.allow_dead_letters(reason=reason)
    monitor.start()
    session = _Session(system, tocsin_clock, monitor, run)
    busy: list[str] = []
    try:
        run(system.start())
        item.stash[_SESSION] = session
        yield system
    finally:
        try:
            busy = run(_guard(item, _wind_down(system, tocsin_clock), "did not stop"))
        finally:
            monitor.close()
            if _SESSION in item.stash:
                del item.stash[_SESSION]
    if busy:
        report = (
            "the test ended while actors were still handling a message (stopped by "
            "cancelling them):\n  " + "\n  ".join(busy) + "\nlet them finish in the test "
            "(await tocsin_clock.advance(...) past what they wait for, or autojump), or "
            "stop them there"
        )
        if session.verdict == "pending":  # the test failed first: show it with that
            item.add_report_section("teardown", "tocsin", report)
        else:
            pytest.fail(report, pytrace=False)
    found = monitor.problems()
    if not found:
        return
    if session.verdict == "passed":  # only what the stop itself caused is new here
        pytest.fail("while stopping tocsin_system: " + _report(found), pytrace=False)
    elif session.verdict == "pending":  # the test failed first: show them with its failure
        item.add_report_section("teardown", "tocsin", _report(found))


@pytest.fixture
def tocsin_monitor(request: pytest.FixtureRequest, tocsin_system: ActorSystem) -> SystemMonitor:
    """The :class:`~tocsin.testing.SystemMonitor` of ``tocsin_system``.

    ``allow_crashes(*types)``, ``expect_crashes(*types, count=None)``,
    ``allow_dead_letters(reason=None)``, ``expect_dead_letters(count=None, reason=None)``,
    ``take_crashes()``, ``take_dead_letters()``, and the ``crashes`` / ``dead_letters``
    recorded so far.
    """
    session: _Session = request.node.stash[_SESSION]
    return session.monitor


def _runner_for(request: pytest.FixtureRequest) -> Callable[[Coroutine[Any, Any, Any]], Any]:
    """How to run a coroutine on the loop this test runs on."""
    item = request.node
    if isinstance(item, pytest.Function) and _asyncio_plugin_owns(item):
        scope = _asyncio_loop_scope(item)
        loop: asyncio.AbstractEventLoop = request.getfixturevalue(f"_tocsin_asyncio_loop_{scope}")
        return loop.run_until_complete
    runner: asyncio.Runner = request.getfixturevalue("_tocsin_runner")
    return runner.run


def _limit(item: pytest.Item) -> float:
    """The hang guard of ``item``, in real seconds (0: none): its marker's ``timeout``
    (a long simulation declares the bound its CPU work needs), else the ini option."""
    declared = _options(item).timeout
    if declared is not None:
        return declared
    return float(item.config.getini("tocsin_async_timeout") or 0)


async def _guard(item: pytest.Item, coro: Coroutine[Any, Any, Any], what: str) -> Any:
    """Run ``coro`` under the hang guard; past it, fail naming what is still busy."""
    limit = _limit(item)
    if limit <= 0:
        return await coro
    timeout = asyncio.timeout(limit)
    try:
        async with timeout:
            return await coro
    except TimeoutError:
        if not timeout.expired():
            raise
        busy = busy_on_loop(asyncio.get_running_loop())
        detail = (
            "; still busy:\n  " + "\n  ".join(busy)
            if busy
            else "; a hang, or an await on a ManualClock deadline nobody advances"
        )
        source = (
            "ini option tocsin_async_timeout"
            if _options(item).timeout is None
            else "@pytest.mark.tocsin(timeout=...)"
        )
        pytest.fail(
            f"{item.nodeid} {what} within {limit:g} real seconds ({source})"
            f'{detail}\n(see docs/testing.md, "Teardown")',
            pytrace=False,
        )


async def _wind_down(system: ActorSystem, clock: Clock) -> list[str]:
    """Stop ``system``; return the actors that were still busy once its clock settled.

    An actor still in a message at the end of the test waits on simulated time nobody
    will advance (or on nothing), so the stop, which lets a handler finish within the
    system's ``stop_timeout`` of the system's clock, would wait for ever. Instead the
    stop begins and the clock moves past that grace, so those handlers are cancelled
    (``post_stop`` still runs) and the test fails naming them.
    """
    if not isinstance(clock, ManualClock):
        await system.stop()
        return []
    await clock.settle()
    clock.autojump = False
    busy = busy_actors(system)
    if not busy:
        await system.stop()
        return []
    busy.append(clock_state(clock))
    stopping = asyncio.ensure_future(system.stop())
    await clock.settle()
    while not stopping.done():  # bounded by the hang guard
        await clock.advance(system.stop_timeout)
    await stopping
    return busy


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """After a passing test body: settle, then fail the test on unseen crashes/dead letters."""
    result = yield
    session = item.stash.get(_SESSION, None)
    if session is None:
        return result
    if isinstance(session.clock, ManualClock) and session.system.running:
        session.run(_guard(item, session.clock.settle(), "did not settle after its body"))
    found = session.monitor.problems()
    session.verdict = "failed" if found else "passed"
    if found:
        pytest.fail(_report(found), pytrace=False)
    return result


# -- pytest-asyncio: a fixture per loop scope that reports its running loop ---------------


def _asyncio_loop_scope(item: pytest.Function) -> str:
    """The loop scope pytest-asyncio runs ``item`` in (its marker, else its ini default)."""
    marker = item.get_closest_marker("asyncio")
    scope = None
    if marker is not None:
        scope = marker.kwargs.get("loop_scope") or marker.kwargs.get("scope")
    if scope is None:
        try:
            scope = item.config.getini("asyncio_default_test_loop_scope") or None
        except ValueError:  # an older pytest-asyncio without this option
            scope = None
    return str(scope or "function")


def _define_asyncio_loop_fixtures() -> None:
    try:
        import pytest_asyncio
    except ImportError:
        return

    for scope in ("function", "class", "module", "package", "session"):

        async def running_loop() -> asyncio.AbstractEventLoop:
            return asyncio.get_running_loop()

        name = f"_tocsin_asyncio_loop_{scope}"
        try:
            fixture = pytest_asyncio.fixture(loop_scope=scope, name=name)(running_loop)
        except TypeError:  # pytest-asyncio < 0.24: no loop_scope, the event_loop fixture
            fixture = pytest_asyncio.fixture(name=name)(running_loop)
        globals()[name] = fixture


_define_asyncio_loop_fixtures()
