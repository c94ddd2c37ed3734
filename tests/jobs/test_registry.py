# SPDX-License-Identifier: Apache-2.0
"""``@job`` and the registry: names, options, resolving a function or a name, imports."""

from __future__ import annotations

import random
import sys
from typing import Any

import pytest

from tocsin import JobContext, JobNotFoundError, Retry, RetryPolicy, job
from tocsin.durable import DurableActor, RetryDecision
from tocsin.jobs import (
    JobSpec,
    actor_class,
    check_jobs_option,
    import_jobs,
    kind_of,
    registered_jobs,
    resolve,
    shard_of,
)


@job
async def plain(ctx: JobContext, x: int) -> None:
    pass


@job(name="tests.billing.report", retry=Retry(base=5.0, cap=60.0), max_retries=2, timeout=30)
async def with_options(ctx: JobContext) -> None:
    pass


def test_bare_job_registers_by_module_and_qualname_and_returns_the_function() -> None:
    spec = resolve(plain)
    assert spec.name == f"{__name__}.plain"
    assert spec.function is plain
    assert spec.retry == Retry()
    assert (spec.max_retries, spec.timeout) == (5, None)
    assert resolve(spec.name) is spec
    assert registered_jobs()[spec.name] is spec


def test_job_options_are_kept_in_its_spec() -> None:
    spec = resolve("tests.billing.report")
    assert spec.function is with_options
    assert spec.retry == Retry(base=5.0, cap=60.0)
    assert (spec.max_retries, spec.timeout) == (2, 30.0)
    assert resolve(with_options) is spec


def test_each_job_gets_a_durable_kind_with_its_retry_and_timeout() -> None:
    cls = actor_class(resolve(with_options))
    assert issubclass(cls, DurableActor)
    assert cls.kind == kind_of("tests.billing.report") == "job:tests.billing.report"
    assert cls.retry_policy == Retry(base=5.0, cap=60.0)
    assert cls.task_timeout == 30.0


def test_a_job_must_be_a_coroutine_function() -> None:
    def sync(ctx: JobContext) -> None:
        pass

    with pytest.raises(TypeError, match="async def"):
        job(sync)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="coroutine function"):
        job(42)  # type: ignore[call-overload]


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"name": ""}, "`name`"),
        ({"name": "a/b"}, "`name`"),
        ({"name": " x"}, "`name`"),
        ({"max_retries": -1}, "`max_retries`"),
        ({"max_retries": True}, "`max_retries`"),
        ({"timeout": 0}, "`timeout`"),
    ],
)
def test_bad_job_options_raise_value_error_naming_the_option(
    options: dict[str, Any], match: str
) -> None:
    async def f(ctx: JobContext) -> None:
        pass

    with pytest.raises(ValueError, match=match):
        job(**options)(f)


def test_a_retry_that_is_not_a_retry_value_is_a_type_error() -> None:
    async def f(ctx: JobContext) -> None:
        pass

    with pytest.raises(TypeError, match="`retry`"):
        job(retry={"base": 1})(f)  # type: ignore[call-overload]


def test_a_name_taken_by_another_function_is_refused() -> None:
    async def other(ctx: JobContext) -> None:
        pass

    with pytest.raises(ValueError, match="already taken"):
        job(name=resolve(plain).name)(other)


def test_redefining_the_same_function_replaces_it() -> None:
    async def again(ctx: JobContext) -> None:
        pass

    first = job(name="tests.registry.again")(again)

    async def again(ctx: JobContext) -> None:  # type: ignore[no-redef]  # a reload
        pass

    job(name="tests.registry.again")(again)
    assert resolve("tests.registry.again").function is again is not first
    assert actor_class(resolve("tests.registry.again")).spec is resolve(again)


def test_unknown_names_and_undecorated_functions_raise_job_not_found() -> None:
    with pytest.raises(JobNotFoundError, match="did you mean"):
        resolve(f"{__name__}.plian")

    async def bare(ctx: JobContext) -> None:
        pass

    with pytest.raises(JobNotFoundError, match="@job"):
        resolve(bare)
    with pytest.raises(TypeError):
        resolve(42)
    assert isinstance(JobNotFoundError("x"), LookupError)


def test_jobs_option_takes_modules_and_dotted_names_and_imports_them() -> None:
    sys.modules.pop("tests.jobs.sample_jobs", None)
    entries = check_jobs_option(["tests.jobs.sample_jobs", sys.modules[__name__]])
    modules = import_jobs(entries)
    assert [m.__name__ for m in modules] == ["tests.jobs.sample_jobs", __name__]
    assert isinstance(resolve("tests.jobs.sample_jobs.record"), JobSpec)
    with pytest.raises(TypeError, match="`jobs`"):
        check_jobs_option([42])
    with pytest.raises(TypeError, match="`jobs`"):
        check_jobs_option(42)
    with pytest.raises(ModuleNotFoundError, match="no_such_module"):
        import_jobs(["tests.jobs.no_such_module"])


def test_shards_are_stable_and_spread() -> None:
    assert shard_of("order-42") == shard_of("order-42")
    assert len({shard_of(f"run-{i}") for i in range(500)}) == 16


# -- Retry ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"base": 0}, "`base`"),
        ({"base": -1}, "`base`"),
        ({"base": float("nan")}, "`base`"),
        ({"base": "1"}, "`base`"),
        ({"factor": 0.5}, "`factor`"),
        ({"cap": 0.5}, "`cap`"),
        ({"jitter": -0.1}, "`jitter`"),
        ({"jitter": 1.5}, "`jitter`"),
        ({"on": ()}, "`on`"),
        ({"on": (42,)}, "`on`"),
    ],
)
def test_retry_is_checked_at_construction(options: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Retry(**options)


def test_retry_policy_of_a_negative_base_is_refused_instead_of_a_hot_loop() -> None:
    with pytest.raises(ValueError, match="`base`"):
        RetryPolicy(base=-1)
    with pytest.raises(ValueError, match="`jitter_min`"):
        RetryPolicy(jitter_min=2.0)


def test_retry_delay_before_retry_k_follows_the_documented_formula() -> None:
    retry = Retry(base=2.0, factor=3.0, cap=100.0, jitter=0.25, rng=random.Random(1))
    for k in range(1, 10):
        raw = min(100.0, 2.0 * 3.0 ** (k - 1))
        for _ in range(20):
            assert 0.75 * raw <= retry.backoff(k) <= raw
    exact = Retry(jitter=0.0)
    assert [exact.backoff(k) for k in (1, 2, 3, 10)] == [1.0, 2.0, 4.0, 300.0]
    assert exact.backoff(10_000) == 300.0  # no overflow after years of retries


def test_retry_on_parks_failures_that_are_not_worth_a_retry() -> None:
    retry = Retry(jitter=0.0, on=(ConnectionError,))
    assert retry.decide(ConnectionResetError(), 1, 5) == RetryDecision(1.0)
    assert retry.decide(ValueError(), 1, 5) is None
    assert retry.decide(ConnectionError(), 6, 5) is None
    assert Retry(on=ConnectionError).on == (ConnectionError,)  # type: ignore[arg-type]


def test_retry_policy_keeps_its_old_positional_spelling() -> None:
    old = RetryPolicy(2.0, 10.0, 1.0)
    assert (old.base, old.cap, old.jitter, old.jitter_min, old.factor) == (2.0, 10.0, 0.0, 1.0, 2.0)
    assert isinstance(old, Retry)
    assert [old.backoff(k) for k in (1, 2, 3, 4)] == [2.0, 4.0, 8.0, 10.0]


class _PerClass(DurableActor):
    kind = "RegistryPerClassRetry"
    retry_policy = Retry(base=0.5, on=(ConnectionError,))


def test_the_same_retry_value_serves_a_durable_class() -> None:
    assert _PerClass.retry_policy.decide(ValueError(), 1, 5) is None
    assert _PerClass.retry_policy.decide(ConnectionError(), 1, 5) is not None


def test_a_jobs_module_that_does_not_exist_fails_the_system_constructor() -> None:
    from tocsin import ActorSystem

    with pytest.raises(ModuleNotFoundError, match=r"tests\.jobs\.no_such_jobs"):
        ActorSystem(jobs=["tests.jobs.no_such_jobs"])
    with pytest.raises(ModuleNotFoundError, match="no_such_package"):
        ActorSystem(jobs=["no_such_package.jobs"])


class _AppError(Exception):
    pass


def test_retry_round_trips_through_its_wire_form_without_importing_anything() -> None:
    from tocsin.durable import decode, encode

    retry = Retry(base=2.0, factor=3.0, cap=60.0, jitter=0.1, on=(ConnectionError, _AppError))
    wire: Any = decode(encode(retry.to_wire()))
    assert wire["on"] == ["builtins:ConnectionError", f"{__name__}:_AppError"]
    assert Retry.from_wire(wire) == retry
    with pytest.raises(ValueError, match="no exception class"):
        Retry.from_wire({**retry.to_wire(), "on": ["not_imported_module_xyz:Boom"]})
    assert "not_imported_module_xyz" not in sys.modules
    with pytest.raises(ValueError, match="no exception class"):
        Retry.from_wire({**retry.to_wire(), "on": ["builtins:len"]})
    with pytest.raises(ValueError, match="not a stored Retry"):
        Retry.from_wire([1, 2])


def test_a_jobs_module_already_imported_is_accepted_even_without_a_spec() -> None:
    from tocsin import ActorSystem

    ActorSystem(jobs=["__main__", __name__])  # a script passes jobs=[__name__]
