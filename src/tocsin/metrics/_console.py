# SPDX-License-Identifier: Apache-2.0
"""The console of a system with its Prometheus ``/metrics``, in one call.

It lives here, not in :mod:`tocsin.console`, because the console sits below the metrics
layer (the console knows nothing of metrics; it serves any ``metrics=`` endpoint). This
is also what ``ActorSystem(..., console="127.0.0.1:8765")`` starts (see
docs/operations.md, "Hook for ActorSystem").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._prometheus import prometheus_endpoint
from ._registry import Metrics

if TYPE_CHECKING:
    from ..actor import ActorSystem
    from ..console import Console

#: The console's default bind (repeated: importing tocsin.console needs aiohttp, and
#: tocsin.metrics must import without it).
DEFAULT_BIND = "127.0.0.1:8765"

__all__ = ["serve_console"]


async def serve_console(
    system: ActorSystem, bind: str = DEFAULT_BIND, token: str | None = None, **options: Any
) -> Console:
    """Serve ``system``'s console, with ``/metrics`` when ``prometheus_client`` is installed.

    Same arguments and errors as :func:`tocsin.console.serve` (``options`` are its
    keyword options: ``members``, ``interval``).
    """
    from ..console import serve  # needs the console extra (aiohttp)

    try:
        endpoint = prometheus_endpoint(Metrics.of(system))
    except ImportError:
        endpoint = None  # the console works without the metrics extra
    return await serve(system, bind, token, metrics=endpoint, **options)
