# SPDX-License-Identifier: Apache-2.0
"""What ``tocsin run`` runs: ``MODULE:FUNC`` (the workers' ``main``) and ``MODULE:ATTR``
(the message classes remoting lets cross between workers), loaded and checked.

A name is imported by each worker after its fork, never by the arbiter (it checks names
once in a throw-away child), so a rolling restart runs the code now on disk.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Iterable
from typing import Any

from ._config import MainFunc, RunUsageError

__all__ = ["check_targets", "load_main", "load_messages"]


def _resolve(name: str, shape: str) -> Any:
    """Import ``module`` and walk ``attr`` of ``"module:attr"``; RunUsageError if not there.

    ``shape`` names the expected form in the message, e.g. ``"MODULE:FUNC (e.g. app:main)"``.
    """
    if not isinstance(name, str) or name.count(":") != 1:
        raise RunUsageError(f"{shape} expected, got {name!r}")
    module_name, _, attr = name.partition(":")
    if not module_name or not attr:
        raise RunUsageError(f"{shape} expected, got {name!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise RunUsageError(f"cannot import {module_name!r}: {type(exc).__name__}: {exc}") from exc
    value: Any = module
    for part in attr.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise RunUsageError(f"module {module_name!r} has no attribute {attr!r}") from None
    return value


def load_main(target: str | MainFunc) -> tuple[str, MainFunc]:
    """Resolve ``"package.module:func"`` (or take a function) and check it is ``async def``.

    The current directory is put first on ``sys.path`` when a name is given, as
    ``python -m`` and gunicorn do, so ``tocsin run app:main`` finds ``./app.py``.

    Returns:
        ``(label, func)``; the label names the function in logs.

    Raises:
        RunUsageError: malformed name (e.g. shop.app:main expected), import failure (with
            the exception's text), missing attribute, or not a coroutine function.
    """
    if callable(target) and not isinstance(target, str):
        func: Any = target
        label = f"{getattr(func, '__module__', '?')}:{getattr(func, '__qualname__', func)!s}"
    else:
        func = _resolve(target, "MODULE:FUNC (e.g. shop.app:main)")
        label = target
    if not inspect.iscoroutinefunction(func):
        raise RunUsageError(
            f"{label} must be `async def main(system: ActorSystem) -> None`, got {func!r}"
        )
    main: MainFunc = func
    return label, main


def load_messages(messages: str | Iterable[type]) -> tuple[type, ...]:
    """Resolve ``"module:ATTR"`` (or take an iterable) into a tuple of classes.

    Raises:
        RunUsageError: as :func:`load_main`, or something other than classes.
    """
    if isinstance(messages, str):
        value = _resolve(messages, "MODULE:ATTR (e.g. shop.messages:ALL)")
    else:
        value = messages
    try:
        classes = tuple(value)
    except TypeError:
        raise RunUsageError(f"`messages` must be an iterable of classes, got {value!r}") from None
    bad = [c for c in classes if not isinstance(c, type)]
    if bad:
        raise RunUsageError(f"`messages` must hold classes only, got {bad!r}")
    return classes


def check_targets(target: str | MainFunc, messages: str | Iterable[type] = ()) -> str:
    """Check ``target`` and ``messages`` as :func:`load_main` and :func:`load_messages` do,
    without importing a name into this process.

    A ``"module:func"`` name is checked in a forked child, so the arbiter never holds the
    application's modules: every worker imports them fresh after its own fork, and a
    rolling restart (SIGHUP) runs the code as it is on disk now. A function object is
    checked here (its code is what is in memory).

    Returns:
        The label naming ``target`` in logs.

    Raises:
        RunUsageError: as :func:`load_main` and :func:`load_messages`.
    """
    if not isinstance(messages, str):
        load_messages(messages)
    if not isinstance(target, str) and not isinstance(messages, str):
        return load_main(target)[0]
    label = target if isinstance(target, str) else load_main(target)[0]
    read_fd, write_fd = os.pipe()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        code = 0
        try:
            os.close(read_fd)
            load_main(target)
            load_messages(messages)
        except RunUsageError as exc:
            os.write(write_fd, str(exc).encode())
            code = 1
        except BaseException as exc:
            os.write(write_fd, f"loading {label}: {type(exc).__name__}: {exc}".encode())
            code = 1
        os._exit(code)
    os.close(write_fd)
    chunks = []
    while chunk := os.read(read_fd, 65536):
        chunks.append(chunk)
    os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        message = b"".join(chunks).decode(errors="replace")
        raise RunUsageError(message or f"loading {label} failed (status {status})")
    return label
