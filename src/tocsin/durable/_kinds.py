# SPDX-License-Identifier: Apache-2.0
"""The registry of durable kinds, and what the runtime asks of a durable class.

A leaf: it imports nothing of the durable package, so the handle, the runtime and the
tasks ask their questions of a class here instead of importing ``DurableActor`` (which
sits on top of the package). ``DurableActor`` marks its default hooks with
:func:`default_hook`; a subclass that overrides one loses the mark.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Protocol, TypeVar

__all__ = [
    "DurableClass",
    "DurableInstance",
    "default_hook",
    "default_on_task_base",
    "keeps_default",
    "register",
    "registered_kind",
]

_KINDS: dict[str, type] = {}


class DurableInstance(Protocol):
    """What the runtime reads of a durable class and its instances (``DurableActor``
    subclasses are the ones): a protocol, so the handle and the runtime do not import
    the class that sits on top of the package."""

    kind: str
    passivate_after: float | None
    max_value_bytes: int


#: A durable class, as the runtime sees it.
DurableClass = type[DurableInstance]

_MARK: Final = "__tocsin_default_hook__"

F = TypeVar("F", bound=Callable[..., Any])


def default_hook(fn: F) -> F:
    """Mark ``fn`` as a default hook of the base class (``now``, ``on_task``)."""
    setattr(fn, _MARK, True)
    return fn


def keeps_default(cls: type, name: str) -> bool:
    """Whether ``cls`` keeps the base class's default hook ``name`` (not overridden)."""
    return getattr(getattr(cls, name, None), _MARK, False) is True


def default_on_task_base(cls: type) -> frozenset[str] | None:
    """``None`` when ``cls`` overrides ``on_task`` (it handles tasks naming no method);
    else the public names of the class that defines the default (the base API, which a
    suggestion of close method names leaves out)."""
    if not keeps_default(cls, "on_task"):
        return None
    for klass in cls.__mro__:
        if "on_task" in vars(klass):
            return frozenset(dir(klass))
    return frozenset()  # pragma: no cover - the mark implies a defining class


def registered_kind(kind: str) -> type | None:
    """The durable class with this ``kind``, if one is defined."""
    return _KINDS.get(kind)


def register(cls: type, kind: str) -> None:
    """Claim ``kind`` for ``cls``; a second class claiming it is a ``TypeError``.

    Stored tasks name their kind, not their class: if two classes shared a kind, the
    later one silently won and recovery could run one class's tasks on the other (issue
    10, item 11). Redefining the same module and qualified name (a reload, a class
    defined in a function that runs again) replaces the old definition.
    """
    old = _KINDS.get(kind)
    if old is not None and (old.__module__, old.__qualname__) != (
        cls.__module__,
        cls.__qualname__,
    ):
        raise TypeError(
            f"durable kind {kind!r} of {cls.__module__}.{cls.__qualname__} is already "
            f"used by {old.__module__}.{old.__qualname__}; stored tasks name their kind, "
            f'so each DurableActor class needs its own: set `kind = "..."` on one of them'
        )
    _KINDS[kind] = cls
