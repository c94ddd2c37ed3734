# SPDX-License-Identifier: Apache-2.0
"""The console of a system with its Prometheus ``/metrics``, in one call.

It lives here, not in :mod:`tocsin.console`, because the console sits below the metrics
layer (the console knows nothing of metrics; it serves any ``metrics=`` endpoint). This
is also what ``ActorSystem(..., console="127.0.0.1:8765")`` starts (see
docs/operations.md, "Hook for ActorSystem").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..system import OptionalService
from ._prometheus import prometheus_endpoint
from ._registry import Metrics

if TYPE_CHECKING:
    from ..console import Console
    from ..system import ActorSystem

#: The console's default bind (repeated: importing tocsin.console needs aiohttp, and
#: tocsin.metrics must import without it).
DEFAULT_BIND = "127.0.0.1:8765"

__all__ = ["CONSOLE_SERVICE", "serve_console"]


async def serve_console(
    system: ActorSystem, bind: str = DEFAULT_BIND, token: str | None = None, **options: Any
) -> Console:
    """Serve ``system``'s console, with ``/metrics`` when ``prometheus_client`` is installed.

    Same arguments and errors as :func:`tocsin.console.serve` (``options`` are its
    keyword options: ``no_token``, ``members``, ``interval``, ``session_ttl``): without a
    ``token``, one is made (:attr:`Console.login_url` carries it). A system in a cluster
    shows its live members unless ``members`` is given.
    """
    from ..console import serve  # needs the console extra (aiohttp)

    if "members" not in options and system.running:
        try:
            node = system.cluster
        except RuntimeError:  # made without cluster=
            node = None
        if node is not None:
            cluster = node

            async def members() -> list[Any]:
                return list(cluster.members())

            options["members"] = members
    try:
        endpoint = prometheus_endpoint(Metrics.of(system))
    except ImportError:
        endpoint = None  # the console works without the metrics extra
    return await serve(system, bind, token, metrics=endpoint, **options)


def _check(bind: Any, token: str | None) -> None:
    try:
        from ..console import check_options
    except ImportError as exc:  # pragma: no cover - the console extra is a dev dependency
        raise ImportError(
            "ActorSystem(console=...) needs the console extra: "
            f"pip install 'tocsin[console]' ({exc})"
        ) from exc
    check_options(bind, token)


async def _start(
    system: ActorSystem, bind: Any, token: str | None
) -> Callable[[], Awaitable[None]]:
    # No console_token: a token is made for each start, as `tocsin console` makes one.
    # console_url is then the address to open, carrying it (``/?token=...``), like the
    # URL Jupyter prints; the console logs it at INFO on ``tocsin.console``.
    console = await serve_console(system, bind, token)
    system.console_url = console.login_url

    async def close() -> None:
        system.console_url = None
        await console.close()

    return close


#: What ``ActorSystem(console=..., console_token=...)`` starts: registered in
#: ``tocsin.system.SERVICES`` by ``tocsin/__init__.py`` (the facade is below this layer).
CONSOLE_SERVICE = OptionalService(check=_check, start=_start)
