# SPDX-License-Identifier: Apache-2.0
"""Keyword-only options, with one release of grace for positional use (a leaf module:
it imports nothing of tocsin, so every layer may use it).

DESIGN.md "One vocabulary on every surface": options are keyword-only everywhere
(``Remoting``, ``Cluster`` with a positional coordinator, ``Retry``, ``Schedule``). An
options dataclass is declared ``kw_only`` (so type checkers hold callers to keywords) and
decorated with :func:`keyword_only`, which still accepts the old positional form at run
time for one release, with a ``DeprecationWarning`` naming the options to pass by keyword.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["keyword_only"]

_T = TypeVar("_T")


def keyword_only(*positional: str) -> Callable[[type[_T]], type[_T]]:
    """Class decorator for a ``kw_only`` options dataclass whose leading fields
    ``positional`` stay positional: options given by position after them still work,
    with a ``DeprecationWarning``, until the next release.

    Raises (at the call):
        TypeError: more positional arguments than the class has fields, or an option
            given both by position and by keyword.
    """

    def wrap(cls: type[_T]) -> type[_T]:
        init = cls.__init__
        names = [f.name for f in dataclasses.fields(cls) if f.init]  # type: ignore[arg-type]
        kept = len(positional)
        if names[:kept] != list(positional):
            raise TypeError(f"{cls.__name__}: {positional} are not its leading fields")

        @functools.wraps(init)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            if len(args) > kept:
                moved = args[kept:]
                if len(args) > len(names):
                    raise TypeError(
                        f"{cls.__name__}() takes at most {len(names)} options, "
                        f"got {len(args)} positional arguments"
                    )
                given = names[kept : kept + len(moved)]
                twice = sorted(set(given) & set(kwargs))
                if twice:
                    raise TypeError(f"{cls.__name__}() got {twice} by position and by keyword")
                keywords = ", ".join(f"{name}=..." for name in given)
                warnings.warn(
                    f"{cls.__name__}(): options by position are deprecated and stop working "
                    f"in the next release; pass them by keyword: {cls.__name__}({keywords})",
                    DeprecationWarning,
                    stacklevel=2,
                )
                kwargs.update(zip(given, moved, strict=True))
                args = args[:kept]
            init(self, *args, **kwargs)

        cls.__init__ = __init__  # type: ignore[method-assign]
        return cls

    return wrap
