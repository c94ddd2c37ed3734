# SPDX-License-Identifier: Apache-2.0
"""``@job``: plain coroutine functions registered by a stable name.

A job is an ``async def f(ctx: JobContext, *args, **kwargs)``. Stored work names it by
its registered name (default ``module.qualname``), never by the function object, so a
worker that imported the module finds it again after a restart, and a process that only
enqueues (a web worker holding a :class:`~tocsin.Client`) needs the name, not the code.

The registry is process-wide, like Python's import system and like the durable kinds:
a process runs the jobs whose modules it imported (``ActorSystem(jobs=[...])`` imports
them at start). Redefining a job under the same name from the same module and qualified
name (a reload) replaces it; another function claiming a taken name is a ``ValueError``.

Prior art: Celery's ``@app.task`` registry (names default to ``module.name``), arq's
``WorkerSettings.functions``, procrastinate's ``@app.task(name=...)``.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import math
import sys
import threading
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Final, ParamSpec, TypeVar, overload

from .._deadlines import Seconds, to_seconds
from ..durable import Retry
from ..errors import JobNotFoundError

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "JobFunction",
    "JobSpec",
    "import_jobs",
    "job",
    "registered_jobs",
    "resolve",
]

#: Retries after the first run before a failing job is parked (the durable tasks' default).
DEFAULT_MAX_RETRIES: Final = 5
#: The longest job name the stores hold comfortably (it is part of a durable kind).
MAX_NAME_LENGTH: Final = 200

P = ParamSpec("P")
R = TypeVar("R")

#: What ``@job`` decorates: ``async def f(ctx: JobContext, *args, **kwargs)``.
JobFunction = Callable[..., Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class JobSpec:
    """A registered job: what a worker needs to run it (made by ``@job``, read-only).

    Attributes:
        name: the stable name stored with every run (default ``module.qualname``).
        function: the coroutine function, called as ``function(ctx, *args, **kwargs)``.
        retry: the backoff of failed runs and the failures worth a retry.
        max_retries: retries after the first run before a failing run is parked
            (``enqueue(max_retries=...)`` overrides it per run).
        timeout: seconds one run may take before it counts as failed (``None``: the
            durable tasks' default, 900 s).
    """

    name: str
    function: JobFunction
    retry: Retry
    max_retries: int
    timeout: float | None


_JOBS: dict[str, JobSpec] = {}
_LOCK = threading.Lock()
#: Called with each newly registered spec (the durable side makes its actor class).
_LISTENERS: list[Callable[[JobSpec], object]] = []


def check_name(name: Any) -> str:
    if not isinstance(name, str) or not name or name != name.strip():
        raise ValueError(f"`name` must be a non-empty str without surrounding spaces, got {name!r}")
    if len(name) > MAX_NAME_LENGTH or "/" in name or "\x00" in name:
        raise ValueError(
            f"`name` must be at most {MAX_NAME_LENGTH} characters without '/' or NUL, got {name!r}"
        )
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"`name` must be text UTF-8 can encode, got {name!r}") from None
    return name


def check_max_retries(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**31:
        raise ValueError(f"`max_retries` must be an int from 0 to 2**31 - 1, got {value!r}")
    return value


def _register(spec: JobSpec) -> None:
    with _LOCK:
        old = _JOBS.get(spec.name)
        if old is not None and old.function is not spec.function:
            same_place = (old.function.__module__, old.function.__qualname__) == (
                spec.function.__module__,
                spec.function.__qualname__,
            )
            if not same_place:
                raise ValueError(
                    f"job name {spec.name!r} of {_where(spec.function)} is already taken by "
                    f"{_where(old.function)}; give one of them another name with "
                    "@job(name=...)"
                )
        _JOBS[spec.name] = spec
    for listener in _LISTENERS:
        listener(spec)


def _where(function: Callable[..., Any]) -> str:
    return f"{function.__module__}.{function.__qualname__}"


def _make_spec(
    function: Any,
    name: str | None,
    retry: Retry | None,
    max_retries: int,
    timeout: Seconds | None,
) -> JobSpec:
    if not inspect.iscoroutinefunction(function):
        raise TypeError(
            f"@job needs an `async def f(ctx: JobContext, *args, **kwargs)`, got {function!r}"
        )
    if retry is None:
        retry = Retry()
    elif not isinstance(retry, Retry):
        raise TypeError(f"`retry` must be a tocsin.Retry or None, got {retry!r}")
    budget: float | None = None
    if timeout is not None:
        budget = to_seconds(timeout, "timeout")
        if not math.isfinite(budget):
            raise ValueError(f"`timeout` must be finite seconds, got {timeout!r}")
    return JobSpec(
        name=check_name(_where(function) if name is None else name),
        function=function,
        retry=retry,
        max_retries=check_max_retries(max_retries),
        timeout=budget,
    )


@overload
def job(function: Callable[P, Awaitable[R]], /) -> Callable[P, Awaitable[R]]: ...


@overload
def job(
    *,
    name: str | None = None,
    retry: Retry | None = None,
    max_retries: int = DEFAULT_MAX_RETRIES,
    timeout: Seconds | None = None,
) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Awaitable[R]]]: ...


def job(
    function: Any = None,
    /,
    *,
    name: str | None = None,
    retry: Retry | None = None,
    max_retries: int = DEFAULT_MAX_RETRIES,
    timeout: Seconds | None = None,
) -> Any:
    """Register ``async def f(ctx: JobContext, *args, **kwargs)`` as a job.

    Used bare (``@job``) or with options (``@job(name="billing.report", retry=Retry(base=5),
    max_retries=3, timeout=60)``). The function is returned unchanged: it can still be
    called directly (with a context you build, in a unit test). Runs of a job are durable
    tasks: **at least once**, retried with backoff per ``retry``, then parked; write jobs
    to be idempotent.

    Args:
        name: the stable name (default ``module.qualname``); renaming a job strands the
            runs stored under the old name, so pick one and keep it.
        retry: backoff and the failures worth a retry (default ``Retry()``).
        max_retries: retries after the first run before parking (default 5).
        timeout: seconds a run may take before it counts as failed (default: 900).

    Raises:
        TypeError: not a coroutine function, or ``retry`` is not a ``Retry``.
        ValueError: a bad ``name``, ``max_retries`` or ``timeout``, or ``name`` taken
            by another function.
    """

    def register(fn: Any) -> Any:
        _register(_make_spec(fn, name, retry, max_retries, timeout))
        return fn

    if function is None:
        return register
    if not callable(function):
        raise TypeError(
            f"@job takes a coroutine function, or options by keyword (@job(name=...)), got "
            f"{function!r}"
        )
    return register(function)


def resolve(target: Any) -> JobSpec:
    """The registered spec of a job function or job name.

    Raises:
        JobNotFoundError: no job is registered under that name, or the function was not
            decorated with ``@job`` (the message lists close names).
        TypeError: neither a str nor a function.
    """
    if isinstance(target, JobSpec):
        return target
    if isinstance(target, str):
        spec = _JOBS.get(target)
        if spec is None:
            raise JobNotFoundError(_unknown(target))
        return spec
    if callable(target):
        for spec in list(_JOBS.values()):
            if spec.function is target:
                return spec
        raise JobNotFoundError(
            f"{target!r} is not a job: decorate it with @job (or pass a registered job name)"
        )
    raise TypeError(f"a job is a function decorated with @job or its name (str), got {target!r}")


def _unknown(name: str) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(_JOBS), n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return f"no job named {name!r} is registered in this process{hint}"


def registered_jobs() -> dict[str, JobSpec]:
    """A snapshot of the jobs registered in this process, by name."""
    with _LOCK:
        return dict(_JOBS)


def on_register(listener: Callable[[JobSpec], object]) -> Callable[[], None]:
    """Call ``listener(spec)`` for every job registered from now on, and at once for each
    job already registered; returns the remover."""
    _LISTENERS.append(listener)
    for spec in registered_jobs().values():
        listener(spec)

    def remove() -> None:
        if listener in _LISTENERS:
            _LISTENERS.remove(listener)

    return remove


def import_jobs(modules: Iterable[ModuleType | str]) -> list[ModuleType]:
    """Import each module (a module object, or a dotted name) so that its ``@job``
    functions register; returns the modules.

    Raises:
        TypeError: an entry is neither a module nor a str.
        ModuleNotFoundError: a dotted name that does not import (the message names it).
    """
    done: list[ModuleType] = []
    for entry in modules:
        if isinstance(entry, ModuleType):
            done.append(entry)
        elif isinstance(entry, str) and entry:
            try:
                done.append(importlib.import_module(entry))
            except ModuleNotFoundError as exc:
                raise ModuleNotFoundError(
                    f"`jobs`: cannot import module {entry!r} ({exc})", name=exc.name
                ) from exc
        else:
            raise TypeError(f"`jobs` entries must be modules or dotted module names, got {entry!r}")
    return done


def check_jobs_option(jobs: Any) -> tuple[ModuleType | str, ...]:
    """``ActorSystem(jobs=...)`` as a tuple, checked for type at construction."""
    if jobs is None:
        return ()
    if isinstance(jobs, (str, ModuleType)):
        jobs = [jobs]
    try:
        entries = tuple(jobs)
    except TypeError:
        raise TypeError(
            f"`jobs` must be a list of modules or dotted module names, got {jobs!r}"
        ) from None
    for entry in entries:
        if not (isinstance(entry, ModuleType) or (isinstance(entry, str) and entry)):
            raise TypeError(f"`jobs` entries must be modules or dotted module names, got {entry!r}")
        if isinstance(entry, str) and entry not in sys.modules:
            # A typo fails here, at the constructor, not at start() (found, not imported:
            # the module's own import errors surface where it is imported, at start).
            try:
                found = importlib.util.find_spec(entry)
            except (ImportError, ValueError):
                found = None
            if found is None:
                raise ModuleNotFoundError(f"`jobs`: no module named {entry!r}", name=entry)
    return entries
