# SPDX-License-Identifier: Apache-2.0
"""The console's HTTP application (aiohttp): routes, authentication, CSRF, headers.

Routes: ``GET /`` the page; ``GET /events`` server-sent events; ``GET /snapshot.json``;
``POST /tasks/retry`` and ``POST /tasks/discard``; ``GET /metrics`` when a Prometheus
endpoint is given; ``GET /static/...``; ``POST /login``.

Security model (see docs/operations.md):

* Token: when set, every route needs it, as ``Authorization: Bearer TOKEN`` (Prometheus,
  curl) or as the session cookie set by ``POST /login`` / ``GET /?token=TOKEN`` (the
  cookie holds an HMAC of the token, not the token; ``HttpOnly``, ``SameSite=Strict``).
* Without a token the console must be bound to loopback, and requests whose ``Host`` is
  not a loopback name are refused: a hostile page cannot read it through DNS rebinding.
* Actions are POSTs carrying a per-process CSRF token (synchronizer token) that a page
  of another origin cannot read; a present ``Origin`` header must match ``Host`` too.
* Every response carries a strict Content-Security-Policy (no inline script, nothing
  from elsewhere), ``X-Content-Type-Options: nosniff``, ``Referrer-Policy: no-referrer``
  and ``X-Frame-Options: DENY``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from importlib import resources
from typing import Final, TypeVar
from urllib.parse import urlsplit

from aiohttp import web

from ._data import ActionError, ConsoleSource
from ._feed import Feed
from ._render import render_page

__all__ = ["MetricsEndpoint", "build_app"]

MetricsEndpoint = Callable[[], tuple[bytes, str]]

_log = logging.getLogger("tocsin.console")

COOKIE: Final = "tocsin_console"
_CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_STATIC: Final = {
    "console.css": "text/css",
    "console.js": "text/javascript",
}
_NOTICES: Final = {
    "retried": "Task {id} of {actor} is pending again and runs now.",
    "discarded": "Task {id} of {actor} was discarded.",
}
_R = TypeVar("_R", bound=web.StreamResponse)
_feed_key: web.AppKey[Feed] = web.AppKey("feed", Feed)


def build_app(
    source: ConsoleSource,
    *,
    token: str | None,
    csrf: str,
    allowed_hosts: set[str] | None,
    interval: float,
    metrics: MetricsEndpoint | None = None,
) -> web.Application:
    """The console application over ``source``.

    Args:
        source: what to show and act on.
        token: required credential, or None (loopback only; the caller checks the bind).
        csrf: the per-process CSRF token embedded in forms.
        allowed_hosts: ``Host`` header values accepted (None: any; used with a token);
            the caller may fill the set once the port is known.
        interval: seconds between live updates.
        metrics: serves ``GET /metrics`` (``tocsin.metrics.prometheus_endpoint(...)``).
    """
    feed = Feed(source, csrf, interval)
    session = _session_value(token) if token is not None else None

    @web.middleware
    async def guard(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if allowed_hosts is not None and request.host not in allowed_hosts:
            raise web.HTTPMisdirectedRequest(text="unexpected Host header")
        public = request.path == "/login" or request.path.startswith("/static/")
        if token is not None and not public and not _authorized(request, token):
            given = request.query.get("token") if request.path == "/" else None
            if given is not None and hmac.compare_digest(given.encode(), token.encode()):
                return _login_redirect(session)
            return _headers(_login_page(request.path != "/"))
        response = await handler(request)
        return _headers(response)

    def _authorized(request: web.Request, expected: str) -> bool:
        auth = request.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            return hmac.compare_digest(auth[7:].encode(), expected.encode())
        cookie = request.cookies.get(COOKIE, "")
        return session is not None and hmac.compare_digest(cookie.encode(), session.encode())

    async def page(request: web.Request) -> web.Response:
        sections = await feed.sections()
        html = render_page(sections, _notice(request), metrics is not None)
        return web.Response(text=html, content_type="text/html", charset="utf-8")

    async def snapshot_json(request: web.Request) -> web.Response:
        snapshot = await source.snapshot()
        return web.Response(
            text=json.dumps(asdict(snapshot), default=str), content_type="application/json"
        )

    async def events(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"}
        )
        _headers(response)
        await response.prepare(request)
        sub = feed.subscribe()
        try:
            await response.write(b"retry: 2000\n\n")
            while (payload := await sub.next()) is not None:
                await response.write(f"event: update\ndata: {payload}\n\n".encode())
        except ConnectionResetError:
            pass  # the client went away: end this stream only
        finally:
            feed.unsubscribe(sub)
        return response

    async def act(request: web.Request, action: str) -> web.StreamResponse:
        form = await request.post()
        origin = request.headers.get("Origin")
        if origin is not None and origin != "null" and urlsplit(origin).netloc != request.host:
            raise web.HTTPForbidden(text="cross-origin request refused")
        given = str(form.get("csrf", ""))
        if not hmac.compare_digest(given.encode(), csrf.encode()):
            raise web.HTTPForbidden(text="missing or wrong CSRF token; reload the page")
        kind, identity, task_id = (str(form.get(k, "")) for k in ("kind", "identity", "id"))
        if not (kind and identity and task_id):
            raise web.HTTPBadRequest(text="`kind`, `identity` and `id` are required")
        try:
            if action == "retried":
                await source.retry(kind, identity, task_id)
            else:
                await source.discard(kind, identity, task_id)
        except ActionError as exc:
            raise web.HTTPConflict(text=str(exc)) from None
        _log.info("console: %s task %s of %s/%s", action, task_id, kind, identity)
        location = (
            request.app.router["page"]
            .url_for()
            .with_query(done=action, id=task_id, actor=f"{kind}/{identity}")
        )
        raise web.HTTPSeeOther(location=str(location) + "#parked")

    async def retry(request: web.Request) -> web.StreamResponse:
        return await act(request, "retried")

    async def discard(request: web.Request) -> web.StreamResponse:
        return await act(request, "discarded")

    async def metrics_route(request: web.Request) -> web.Response:
        assert metrics is not None
        body, content_type = metrics()
        response = web.Response(body=body)
        response.headers["Content-Type"] = content_type
        return response

    async def static(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in _STATIC:
            raise web.HTTPNotFound()
        data = resources.files(__package__).joinpath("static", name).read_bytes()
        return web.Response(body=data, content_type=_STATIC[name], charset="utf-8")

    async def login(request: web.Request) -> web.StreamResponse:
        if token is None:
            raise web.HTTPSeeOther(location="/")
        form = await request.post()
        if hmac.compare_digest(str(form.get("token", "")).encode(), token.encode()):
            return _login_redirect(session)
        return _headers(_login_page(True))

    app = web.Application(middlewares=[guard])
    app[_feed_key] = feed
    app.router.add_get("/", page, name="page")
    app.router.add_get("/events", events)
    app.router.add_get("/snapshot.json", snapshot_json)
    app.router.add_post("/tasks/retry", retry)
    app.router.add_post("/tasks/discard", discard)
    app.router.add_post("/login", login)
    app.router.add_get("/static/{name}", static)
    if metrics is not None:
        app.router.add_get("/metrics", metrics_route)

    async def on_shutdown(app: web.Application) -> None:
        await feed.close()

    app.on_shutdown.append(on_shutdown)
    return app


def feed_of(app: web.Application) -> Feed:
    """The app's shared refresh loop (for tests and benchmarks)."""
    return app[_feed_key]


def _session_value(token: str) -> str:
    return hmac.new(token.encode(), b"tocsin console session", hashlib.sha256).hexdigest()


def _login_redirect(session: str | None) -> web.StreamResponse:
    response = web.Response(status=303, headers={"Location": "/"})
    assert session is not None
    response.set_cookie(COOKIE, session, httponly=True, samesite="Strict", path="/")
    return _headers(response)


def _login_page(failed: bool) -> web.Response:
    message = "<p>Wrong or missing token.</p>" if failed else ""
    html = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<title>tocsin console: sign in</title><link rel="stylesheet" href="/static/console.css">'
        '</head><body><main id="main"><h1>tocsin console</h1>'
        f'{message}<form method="post" action="/login"><label for="token">Console token</label> '
        '<input id="token" name="token" type="password" autocomplete="current-password" required> '
        '<button type="submit">Sign in</button></form></main></body></html>'
    )
    return web.Response(status=401, text=html, content_type="text/html", charset="utf-8")


def _notice(request: web.Request) -> str | None:
    template = _NOTICES.get(request.query.get("done", ""))
    if template is None:
        return None
    # Text only: the page escapes it.
    return template.format(id=request.query.get("id", "?"), actor=request.query.get("actor", "?"))


def _headers(response: _R) -> _R:
    headers = response.headers
    headers.setdefault("Content-Security-Policy", _CSP)
    headers.setdefault("X-Content-Type-Options", "nosniff")
    headers.setdefault("Referrer-Policy", "no-referrer")
    headers.setdefault("X-Frame-Options", "DENY")
    if "Cache-Control" not in headers:
        headers["Cache-Control"] = "no-store"
    return response
