# SPDX-License-Identifier: Apache-2.0
"""The pytest plugin, seen as a user sees it: test files run through it in a subprocess.

Each test writes a user's test file with ``pytester`` and runs pytest on it in a fresh
interpreter, where the plugin is loaded the way users get it: through the ``pytest11``
entry point of the installed package (nothing in these files imports it). ``-p no:asyncio``
runs without pytest-asyncio; the coexistence tests run with it.
"""

from __future__ import annotations

import textwrap

import pytest

#: Left out of `make check` (each test runs pytest in a subprocess); `make test` runs it.
pytestmark = pytest.mark.slow

pytest_plugins = ["pytester"]

NO_ASYNCIO = ("-p", "no:asyncio")

COMMON = """
    import asyncio
    from datetime import UTC, datetime

    import pytest

    from tocsin import (
        Actor, ActorSystem, AskTimeoutError, DeadLetterReason, Directive, ReceiveContext,
    )


    class Echo(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            if ctx.message == "boom":
                raise ValueError("boom")
            if ctx.message == "silent":
                return
            if ctx.message == "loop":
                ctx.respond(id(asyncio.get_running_loop()))
                return
            ctx.respond(ctx.message)
"""


def write(pytester: pytest.Pytester, body: str, name: str = "test_user") -> None:
    source = textwrap.dedent(COMMON) + textwrap.dedent(body)
    pytester.makepyfile(**{name: source})


def test_plain_async_tests_and_the_fixtures_work_without_pytest_asyncio(
    pytester: pytest.Pytester,
) -> None:
    write(
        pytester,
        """
        SYSTEMS = []

        async def test_plain_async_test_runs_on_a_loop():
            assert asyncio.get_running_loop().is_running()

        @pytest.mark.asyncio
        async def test_asyncio_marked_test_runs_too_without_pytest_asyncio():
            await asyncio.sleep(0)

        def test_clock_starts_at_the_fixed_instant(tocsin_clock):
            assert tocsin_clock.wall_datetime() == datetime(2030, 1, 1, tzinfo=UTC)
            assert tocsin_clock.monotonic() == 0 and not tocsin_clock.autojump

        @pytest.mark.tocsin(wall=datetime(2026, 3, 29, tzinfo=UTC), autojump=True)
        def test_marker_sets_instant_and_autojump(tocsin_clock):
            assert tocsin_clock.wall_datetime() == datetime(2026, 3, 29, tzinfo=UTC)
            assert tocsin_clock.autojump

        async def test_system_is_started_on_the_clock_and_the_test_loop(
            tocsin_system, tocsin_clock
        ):
            SYSTEMS.append(tocsin_system)
            assert tocsin_system.running and tocsin_system.clock is tocsin_clock
            assert tocsin_system.timezone == "UTC"
            pid = await tocsin_system.spawn(Echo, "echo")
            assert await pid.ask("hi") == "hi"
            assert await pid.ask("loop") == id(asyncio.get_running_loop())
            await tocsin_system.schedule_once("silent", pid, 60)
            await tocsin_clock.advance(60)

        def test_the_system_was_stopped_after_its_test():
            assert len(SYSTEMS) == 1 and not SYSTEMS[0].running

        @pytest.mark.tocsin(autojump=True)
        async def test_ask_timeout_is_on_the_manual_clock(tocsin_system, tocsin_clock):
            pid = await tocsin_system.spawn(Echo)
            with pytest.raises(AskTimeoutError):
                await pid.ask("silent", timeout=30)
            assert tocsin_clock.monotonic() == 30

        async def test_ask_timeout_reached_by_advance(tocsin_system, tocsin_clock):
            pid = await tocsin_system.spawn(Echo)
            ask = asyncio.ensure_future(pid.ask("silent", timeout=30))
            await tocsin_clock.advance(30)
            with pytest.raises(AskTimeoutError):
                await ask

        async def test_memory_store_takes_durable_actors(tocsin_system):
            from tocsin import DurableActor

            class Note(DurableActor):
                kind = "plugin-note"

                async def receive(self, ctx):
                    await self.storage.put("n", ctx.message)
                    ctx.respond(await self.storage.get("n"))

            pid = await tocsin_system.durable(Note, "a")
            assert await pid.ask(7) == 7
        """,
    )
    result = pytester.runpytest_subprocess(*NO_ASYNCIO)
    result.assert_outcomes(passed=9)


def test_overriding_tocsin_store_runs_the_same_test_on_each_store(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(
        """
        import pytest

        @pytest.fixture(params=["memory", "sqlite"])
        def tocsin_store(request, tmp_path):
            if request.param == "sqlite":
                return f"sqlite:///{tmp_path}/t.db"
            from tocsin.testing import MemoryStore
            return MemoryStore()
        """
    )
    write(
        pytester,
        """
        from tocsin import DurableActor

        class Note(DurableActor):
            kind = "plugin-store-note"

            async def receive(self, ctx):
                ctx.respond(await self.storage.get("n", None))
                await self.storage.put("n", ctx.message)

        async def test_state_survives_passivation(tocsin_system, tocsin_clock, tocsin_store):
            pid = await tocsin_system.durable(Note, "a", passivate_after=10)
            assert await pid.ask(1) is None
            await tocsin_clock.advance(11)  # passivated; the next message activates it
            assert await pid.ask(2) == 1
            assert isinstance(tocsin_store, str) == ("sqlite" in str(tocsin_store))
        """,
    )
    result = pytester.runpytest_subprocess(*NO_ASYNCIO, "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_state_survives_passivation?memory? PASSED*"])


def test_an_unseen_crash_or_dead_letter_fails_the_test(pytester: pytest.Pytester) -> None:
    write(
        pytester,
        """
        async def test_restarted_crash(tocsin_system):
            pid = await tocsin_system.spawn(Echo, "restarts")
            pid.tell("boom")        # handled after the body: the plugin settles first

        async def test_resumed_crash(tocsin_system, tocsin_clock):
            pid = await tocsin_system.spawn(Echo, "resumes", supervisor=Directive.RESUME)
            pid.tell("boom")
            await tocsin_clock.advance(0)
            assert await pid.ask("still here") == "still here"

        async def test_crash_seen_by_an_asker_still_counts(tocsin_system):
            pid = await tocsin_system.spawn(Echo, "asked")
            with pytest.raises(ValueError):
                await pid.ask("boom")

        async def test_dead_letter(tocsin_system):
            pid = await tocsin_system.spawn(Echo, "gone")
            await tocsin_system.stop_actor(pid)
            pid.tell("late")
        """,
    )
    result = pytester.runpytest_subprocess(*NO_ASYNCIO)
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines(
        [
            "*_ test_restarted_crash _*",
            "- unexpected crash: ValueError: boom in tocsin://tocsin/user/restarts (*",
            '*raise ValueError("boom")',
            "Declare what the test causes on purpose: tocsin_monitor.expect_crashes*",
            "*_ test_resumed_crash _*",
            "- unexpected crash: ValueError: boom in tocsin://tocsin/user/resumes (*",
            "*_ test_crash_seen_by_an_asker_still_counts _*",
            "- unexpected crash: ValueError: boom in tocsin://tocsin/user/asked (*",
            "*_ test_dead_letter _*",
            "- unexpected dead letter: 'late' to tocsin://tocsin/user/gone (stopped), "
            "sender NoSender",
        ]
    )


def test_opt_outs_markers_and_monitor_methods(pytester: pytest.Pytester) -> None:
    write(
        pytester,
        """
        @pytest.mark.tocsin(allow_crashes=ValueError, allow_dead_letters=True)
        async def test_marker_allows_both(tocsin_system, tocsin_clock):
            pid = await tocsin_system.spawn(Echo)
            pid.tell("boom")
            await tocsin_clock.advance(0)
            await tocsin_system.stop_actor(pid)
            pid.tell("late")

        pytestmark_like = pytest.mark.tocsin(allow_crashes=True)

        @pytestmark_like
        async def test_marker_allows_any_crash(tocsin_system):
            (await tocsin_system.spawn(Echo)).tell("boom")

        @pytest.mark.tocsin(allow_crashes=KeyError)
        async def test_marker_for_another_type_does_not_allow(tocsin_system):
            (await tocsin_system.spawn(Echo)).tell("boom")

        @pytest.mark.tocsin(allow_dead_letters=DeadLetterReason.SUSPENDED)
        async def test_marker_for_another_reason_does_not_allow(tocsin_system):
            pid = await tocsin_system.spawn(Echo)
            await tocsin_system.stop_actor(pid)
            pid.tell("late")

        async def test_expectations_met(tocsin_system, tocsin_monitor, tocsin_clock):
            tocsin_monitor.expect_crashes(ValueError, count=2)
            tocsin_monitor.expect_dead_letters(1, reason=DeadLetterReason.STOPPED)
            pid = await tocsin_system.spawn(Echo)
            pid.tell("boom")
            pid.tell("boom")
            await tocsin_clock.advance(0)
            await tocsin_system.stop_actor(pid)
            pid.tell("late")

        async def test_take_consumes(tocsin_system, tocsin_monitor):
            pid = await tocsin_system.spawn(Echo)
            with pytest.raises(ValueError):
                await pid.ask("boom")
            [crash] = tocsin_monitor.take_crashes()
            assert crash.pid == pid and str(crash.error) == "boom"
            await tocsin_system.stop_actor(pid)
            pid.tell("late")
            [letter] = tocsin_monitor.take_dead_letters()
            assert letter.message == "late"
            assert tocsin_monitor.take_dead_letters() == []
            assert len(tocsin_monitor.crashes) == 1

        async def test_allow_methods(tocsin_system, tocsin_monitor, tocsin_clock):
            tocsin_monitor.allow_crashes(ArithmeticError, ValueError)
            tocsin_monitor.allow_dead_letters()
            pid = await tocsin_system.spawn(Echo)
            pid.tell("boom")
            await tocsin_clock.advance(0)
            await tocsin_system.stop_actor(pid)
            pid.tell("late")

        async def test_expectation_not_met(tocsin_system, tocsin_monitor):
            tocsin_monitor.expect_crashes(ValueError)

        async def test_expectation_count_wrong(tocsin_system, tocsin_monitor, tocsin_clock):
            tocsin_monitor.expect_crashes(count=2)
            (await tocsin_system.spawn(Echo)).tell("boom")
        """,
    )
    result = pytester.runpytest_subprocess(*NO_ASYNCIO)
    result.assert_outcomes(passed=5, failed=4)
    result.stdout.fnmatch_lines(
        [
            "*_ test_marker_for_another_type_does_not_allow _*",
            "- unexpected crash: ValueError: boom*",
            "*_ test_marker_for_another_reason_does_not_allow _*",
            "- unexpected dead letter: 'late'*",
            "*_ test_expectation_not_met _*",
            "- expected at least one crash (ValueError), got none",
            "*_ test_expectation_count_wrong _*",
            "- expected 2 crash(s) (any type), got 1",
        ]
    )


def test_trouble_while_stopping_is_a_teardown_error_and_a_failing_test_shows_its_crashes(
    pytester: pytest.Pytester,
) -> None:
    write(
        pytester,
        """
        class BadStop(Actor):
            async def receive(self, ctx):
                pass

            async def post_stop(self, ctx):
                raise RuntimeError("post_stop broke")

        async def test_post_stop_fails_at_teardown(tocsin_system):
            await tocsin_system.spawn(BadStop, "bad")

        async def test_own_failure(tocsin_system, tocsin_clock):
            (await tocsin_system.spawn(Echo, "crashy")).tell("boom")
            await tocsin_clock.advance(0)
            assert False, "the test's own failure"
        """,
    )
    result = pytester.runpytest_subprocess(*NO_ASYNCIO)
    result.assert_outcomes(passed=1, errors=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_post_stop_fails_at_teardown*",
            "while stopping tocsin_system: 1 problem(s)*",
            "- unexpected crash: RuntimeError: post_stop broke*",
            "*_ test_own_failure _*",
            "E       AssertionError: the test's own failure",
            "*Captured tocsin teardown*",
            "- unexpected crash: ValueError: boom in tocsin://tocsin/user/crashy*",
        ]
    )


def test_marker_misuse_is_a_usage_error_naming_the_options(pytester: pytest.Pytester) -> None:
    write(
        pytester,
        """
        @pytest.mark.tocsin(allow_crash=True)
        def test_typo(tocsin_clock):
            pass
        """,
    )
    result = pytester.runpytest_subprocess(*NO_ASYNCIO)
    assert result.ret != 0
    result.stdout.fnmatch_lines(
        ["*unknown option 'allow_crash'; allowed: wall, autojump, timezone, allow_crashes*"]
    )


def test_an_async_fixture_in_a_plugin_run_test_is_refused_with_a_hint(
    pytester: pytest.Pytester,
) -> None:
    write(
        pytester,
        """
        @pytest.fixture
        async def echo(tocsin_system):
            return await tocsin_system.spawn(Echo)

        async def test_uses_it(echo):
            pass
        """,
    )
    result = pytester.runpytest_subprocess(*NO_ASYNCIO)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*uses the async fixture 'echo'*: set it up inside the test, or install pytest-asyncio*"]
    )


def test_async_hypothesis_tests_run_each_example_on_the_loop(pytester: pytest.Pytester) -> None:
    write(
        pytester,
        """
        from hypothesis import given, settings, strategies as st

        EXAMPLES = []

        @settings(max_examples=20, database=None, deadline=None)
        @given(st.integers(min_value=0, max_value=10**6))
        async def test_property_holds(n):
            await asyncio.sleep(0)
            EXAMPLES.append(n)

        def test_examples_ran():
            assert len(EXAMPLES) >= 1

        @settings(max_examples=50, database=None, deadline=None)
        @given(st.integers(min_value=0, max_value=100))
        async def test_property_fails(n):
            await asyncio.sleep(0)
            assert n < 50
        """,
    )
    result = pytester.runpytest_subprocess(*NO_ASYNCIO)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*test_property_fails(", "*n=50,"])


def test_hang_guard_fails_an_async_test_that_never_finishes(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntocsin_async_timeout = 0.2\n")
    write(
        pytester,
        """
        async def test_waits_forever():
            await asyncio.Event().wait()

        @pytest.mark.tocsin(timeout=0.3)
        async def test_declares_its_own_bound_and_waits_forever():
            await asyncio.Event().wait()

        @pytest.mark.tocsin(timeout=60)
        async def test_needs_longer_than_the_ini_bound():
            await asyncio.sleep(0.5)  # real time: past the ini's 0.2 s, within its own 60

        @pytest.mark.tocsin(timeout=-1)
        async def test_a_negative_bound_is_refused():
            pass
        """,
    )
    result = pytester.runpytest_subprocess(*NO_ASYNCIO)
    result.assert_outcomes(passed=1, failed=3)
    result.stdout.fnmatch_lines(
        [
            "*test_waits_forever did not finish within 0.2 real seconds (ini option*",
            "*test_declares_its_own_bound_and_waits_forever did not finish within 0.3 real "
            "seconds (@pytest.mark.tocsin(timeout=...))*",
        ],
        consecutive=False,
    )
    result.stdout.fnmatch_lines(["*timeout must be a number of real seconds >= 0*got -1*"])


ASYNCIO_FILE = """
    import os

    import pytest_asyncio

    def ran(name):
        with open(os.environ["TOCSIN_RUNLOG"], "a") as f:
            f.write(name + "\\n")

    @pytest_asyncio.fixture
    async def echo(tocsin_system):
        return await tocsin_system.spawn(Echo, "echo")

    @pytest.mark.asyncio
    async def test_marked(tocsin_system, echo):
        ran("marked")
        assert await echo.ask("loop") == id(asyncio.get_running_loop())

    @pytest.mark.asyncio(loop_scope="module")
    async def test_marked_module_loop(tocsin_system):
        ran("module")
        pid = await tocsin_system.spawn(Echo)
        assert await pid.ask("loop") == id(asyncio.get_running_loop())

    async def test_unmarked(tocsin_system):
        ran("unmarked")
        pid = await tocsin_system.spawn(Echo)
        assert await pid.ask("loop") == id(asyncio.get_running_loop())

    @pytest.mark.asyncio
    async def test_marked_crash_still_fails(tocsin_system):
        ran("crash")
        (await tocsin_system.spawn(Echo, "crashy")).tell("boom")

    async def test_unmarked_with_an_async_fixture(echo):
        ran("unmarked-async-fixture")
"""


@pytest.mark.parametrize("mode", ["strict", "auto"])
def test_coexists_with_pytest_asyncio_each_test_runs_once_on_its_loop(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    import pytest_asyncio  # a dev dependency: never skipped, so coexistence is always tested

    assert pytest_asyncio.__version__
    log = pytester.path / "runs.log"
    monkeypatch.setenv("TOCSIN_RUNLOG", str(log))
    pytester.makeini(
        f"[pytest]\nasyncio_mode = {mode}\nasyncio_default_fixture_loop_scope = function\n"
    )
    write(pytester, ASYNCIO_FILE)
    result = pytester.runpytest_subprocess()
    runs = sorted(log.read_text().split())
    if mode == "strict":  # unmarked tests are the plugin's, which runs no async fixture
        result.assert_outcomes(passed=3, failed=1, errors=1)
        result.stdout.fnmatch_lines(
            ["*uses the async fixture 'echo', but the tocsin plugin runs async tests*"]
        )
        assert runs == ["crash", "marked", "module", "unmarked"]
    else:  # auto: every async test is pytest-asyncio's
        result.assert_outcomes(passed=4, failed=1)
        assert runs == ["crash", "marked", "module", "unmarked", "unmarked-async-fixture"]
    result.stdout.fnmatch_lines(
        ["- unexpected crash: ValueError: boom in tocsin://tocsin/user/crashy*"]
    )


def test_a_test_ending_while_an_actor_is_busy_fails_at_teardown_naming_it(
    pytester: pytest.Pytester,
) -> None:
    # Issue 31, defect 3: the teardown used to wait for ever for the sleeping handler.
    write(
        pytester,
        """
        class Sleeper(Actor):
            async def receive(self, ctx: ReceiveContext) -> None:
                await ctx.system.clock.sleep(3600)

        async def test_leaves_it_sleeping(tocsin_system, tocsin_clock):
            pid = await tocsin_system.spawn(Sleeper, "sleeper")
            pid.tell("go")
            await tocsin_clock.advance(60)

        async def test_lets_it_finish(tocsin_system, tocsin_clock):
            pid = await tocsin_system.spawn(Sleeper, "sleeper")
            pid.tell("go")
            await tocsin_clock.advance(3600)
        """,
    )
    result = pytester.runpytest_subprocess(*NO_ASYNCIO)
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_leaves_it_sleeping*",
            "*the test ended while actors were still handling a message*",
            "*actor /user/sleeper (Sleeper): waits at clock.py:* in ManualClock.sleep *"
            "<- test_user.py:* in Sleeper.receive (await ctx.system.clock.sleep(3600))*",
            "*ManualClock at t=60 s, next deadline t=*, autojump off*",
        ]
    )


def test_the_hang_guard_names_the_busy_actors_and_the_clock(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntocsin_async_timeout = 0.5\n")
    write(
        pytester,
        """
        class Sleeper(Actor):
            async def receive(self, ctx: ReceiveContext) -> None:
                await ctx.system.clock.sleep(3600)
                ctx.respond("done")

        async def test_asks_and_never_advances(tocsin_system, tocsin_clock):
            pid = await tocsin_system.spawn(Sleeper, "sleeper")
            await pid.ask("go", timeout=None)
        """,
    )
    result = pytester.runpytest_subprocess(*NO_ASYNCIO)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*did not finish within 0.5 real seconds (ini option tocsin_async_timeout); "
            "still busy:",
            "*: actor /user/sleeper (Sleeper): waits at *ManualClock.sleep*Sleeper.receive*",
            "*ManualClock at t=0 s, next deadline t=*, autojump off*",
        ]
    )


def test_the_hang_guard_defaults_to_60_seconds(pytester: pytest.Pytester) -> None:
    write(
        pytester,
        """
        def test_reads_it(request):
            assert request.config.getini("tocsin_async_timeout") == "60"
        """,
    )
    pytester.runpytest_inprocess(*NO_ASYNCIO).assert_outcomes(passed=1)
