# SPDX-License-Identifier: Apache-2.0
"""``tocsin run --metrics`` and ``--console``: one port per worker, from a ``{worker}``
template, and the small Prometheus endpoint each worker serves.

A template is a ``HOST:PORT`` in which ``{worker}`` stands for the worker's number,
with Python's format mini-language: ``127.0.0.1:91{worker:02d}`` gives worker 1 port
9101, worker 12 port 9112. Prometheus then scrapes each worker as its own target (one
``instance`` per worker), which is what its counters need: a counter summed across
processes by the exporter would go backwards whenever one of them restarts.

The endpoint is a plain ``asyncio`` server answering ``GET /metrics`` (and ``HEAD``)
with the text exposition of :func:`tocsin.metrics.prometheus_endpoint`, one request
per connection; anything else is 404 or 405. It reads the system on the worker's own
event loop (no thread), at scrape time only.

Metrics name every schedule reference and durable kind, so the endpoint asks a token
(``Authorization: Bearer TOKEN``, compared in constant time; 401 otherwise) unless the
operator made it public (``--metrics-public``). Strangers are bounded as at the
console: at most :data:`MAX_CONNECTIONS` at once (one more is closed at once and
counted in :attr:`MetricsServer.refused`), and a request head must arrive within
:data:`REQUEST_TIMEOUT` seconds. Nothing is logged per connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import string
from typing import TYPE_CHECKING, Final, final

from ._errors import RunUsageError

if TYPE_CHECKING:
    from ..system import ActorSystem

__all__ = ["MetricsServer", "expand_port_template", "serve_metrics"]

#: Seconds a scraper may take to send its request head, and bytes it may hold.
REQUEST_TIMEOUT: Final = 10.0
MAX_REQUEST_HEAD: Final = 8192
#: Connections open at once (a scraper opens one at a time).
MAX_CONNECTIONS: Final = 16


def expand_port_template(option: str, template: object, workers: int) -> list[tuple[str, int]]:
    """``[(host, port)]`` of workers 1..``workers`` from a ``HOST:PORT`` template.

    Raises:
        RunUsageError: not a ``HOST:PORT`` once ``{worker}`` is filled in, a field other
            than ``{worker}``, a port outside 1..65535 (0 only without ``{worker}``: each
            worker then takes a free port, logged as it starts), or one fixed port for
            several workers.
    """
    example = f"`{option}` must be HOST:PORT, with {{worker}} for the worker's number (e.g. "
    example += "127.0.0.1:91{worker:02d}: worker 1 on 9101, worker 2 on 9102)"
    if not isinstance(template, str):
        raise RunUsageError(f"{example}, got {template!r}")
    try:
        fields = {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
    except ValueError as exc:
        raise RunUsageError(f"{example}, got {template!r} ({exc})") from None
    if fields - {"worker"}:
        raise RunUsageError(
            f"{example}, got {template!r}: the only field is {{worker}}, not "
            + ", ".join(f"{{{name}}}" for name in sorted(fields - {"worker"}))
        )
    templated = "worker" in fields
    result = []
    for number in range(1, workers + 1):
        try:
            text = template.format(worker=number)
        except (ValueError, TypeError) as exc:
            raise RunUsageError(f"{example}, got {template!r} ({exc})") from None
        host, sep, port_text = text.rpartition(":")
        host = host.removeprefix("[").removesuffix("]")
        if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
            raise RunUsageError(f"{example}, got {template!r} (worker {number}: {text!r})")
        port = int(port_text)
        if port == 0 and templated:
            raise RunUsageError(f"{example}, got {template!r} (worker {number}: port 0)")
        result.append((host, port))
    if not templated and workers > 1 and result[0][1] != 0:
        raise RunUsageError(
            f"`{option}` {template!r} gives all {workers} workers one port; each needs its "
            "own: write {worker} in it (e.g. 127.0.0.1:91{worker:02d}), or port 0 for "
            "free ports"
        )
    if templated and len({port for _, port in result}) != len(result):
        raise RunUsageError(
            f"`{option}` {template!r} gives two workers the same port; use e.g. "
            "127.0.0.1:91{worker:02d}"
        )
    return result


@final
class MetricsServer:
    """A worker's ``/metrics`` endpoint while it serves (made by :func:`serve_metrics`)."""

    def __init__(self, server: asyncio.Server, url: str) -> None:
        self._server = server
        #: ``http://HOST:PORT/metrics``, with the port bound (port 0 resolved).
        self.url = url
        #: Connections closed at once because :data:`MAX_CONNECTIONS` were open.
        self.refused = 0
        #: Requests refused for a missing or wrong token.
        self.unauthorized = 0
        #: Connections open now (at most :data:`MAX_CONNECTIONS`), kept by its server.
        self.open_connections = 0

    async def close(self) -> None:
        self._server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), 5.0)


async def serve_metrics(
    system: ActorSystem, host: str, port: int, *, token: str | None = None
) -> MetricsServer:
    """Serve ``system``'s metrics for Prometheus at ``http://host:port/metrics``.

    Args:
        system: the worker's system.
        host: the address to bind.
        port: the port (0: a free one, in :attr:`MetricsServer.url`).
        token: asked as ``Authorization: Bearer TOKEN``; None serves anyone.

    Raises:
        ImportError: ``prometheus_client`` is not installed (the ``metrics`` extra).
        OSError: the address cannot be bound.
    """
    from ..metrics import Metrics, prometheus_endpoint

    expose = prometheus_endpoint(Metrics.of(system))

    expected = None if token is None else f"Bearer {token}".encode()
    served: list[MetricsServer] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        endpoint = served[0]
        if endpoint.open_connections >= MAX_CONNECTIONS:
            endpoint.refused += 1
            writer.transport.abort()
            return
        endpoint.open_connections += 1
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), REQUEST_TIMEOUT)
            method, _, rest = head.partition(b" ")
            target = rest.partition(b" ")[0].partition(b"?")[0]
            extra = ""
            if method not in (b"GET", b"HEAD"):
                status, body, kind = "405 Method Not Allowed", b"GET only\n", "text/plain"
            elif target != b"/metrics":
                status, body, kind = "404 Not Found", b"see /metrics\n", "text/plain"
            elif expected is not None and not _authorized(head, expected):
                endpoint.unauthorized += 1
                status, body, kind = "401 Unauthorized", b"token required\n", "text/plain"
                extra = 'WWW-Authenticate: Bearer realm="tocsin metrics"\r\n'
            else:
                body, kind = expose()
                status = "200 OK"
            writer.write(
                f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\n{extra}"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            )
            if method != b"HEAD":
                writer.write(body)
            await asyncio.wait_for(writer.drain(), REQUEST_TIMEOUT)
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
            pass  # a scraper that went away or sent garbage: nothing to answer
        finally:
            endpoint.open_connections -= 1
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    server = await asyncio.start_server(answer, host, port, limit=MAX_REQUEST_HEAD)
    bound = server.sockets[0].getsockname()
    shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
    served.append(MetricsServer(server, f"http://{shown}:{bound[1]}/metrics"))
    return served[0]


def _authorized(head: bytes, expected: bytes) -> bool:
    """Whether the request head carries ``Authorization: <expected>`` (constant time)."""
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"authorization":
            return hmac.compare_digest(value.strip(), expected)
    return False
