# SPDX-License-Identifier: Apache-2.0
"""A live web console: schedules, durable and parked tasks, actors, members, dead letters.

``await tocsin.console.serve(system)`` serves a running system on ``127.0.0.1:8765``
behind a token made for it (open ``Console.login_url``, which carries it);
``tocsin console --store URL`` serves the same from the stores alone. Built on aiohttp
(``pip install tocsin[console]``); see ``docs/operations.md`` for set-up and security.
"""

from __future__ import annotations

try:
    import aiohttp  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError("the console needs aiohttp: pip install 'tocsin[console]'") from exc

from ._data import ScheduleView, Snapshot, TaskView
from ._serve import (
    DEFAULT_BIND,
    MIN_TOKEN_LENGTH,
    SESSION_TTL,
    Console,
    check_options,
    serve,
    serve_store,
)

__all__ = [
    "DEFAULT_BIND",
    "MIN_TOKEN_LENGTH",
    "SESSION_TTL",
    "Console",
    "ScheduleView",
    "Snapshot",
    "TaskView",
    "check_options",
    "serve",
    "serve_store",
]

for _name in __all__:
    _obj = globals()[_name]
    if getattr(_obj, "__module__", "").startswith("tocsin.console."):
        _obj.__module__ = __name__
del _name, _obj
