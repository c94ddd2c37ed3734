# SPDX-License-Identifier: Apache-2.0
"""The console's HTTP application (aiohttp): routes, authentication, CSRF, headers.

Routes: ``GET /`` the page; ``GET /events`` server-sent events; ``GET /snapshot.json``;
``POST /tasks/retry`` and ``POST /tasks/discard``; ``GET /metrics`` when a Prometheus
endpoint is given; ``GET /static/...``; ``GET`` and ``POST /login``; ``POST /logout``.

Security model (see docs/operations.md):

* Token (``_auth.py``): unless started with ``no_token=True``, every route but
  ``/login`` and ``/static/`` needs it, as ``Authorization: Bearer TOKEN`` (Prometheus,
  curl) or as a session cookie, got by opening ``/?token=TOKEN`` (the URL printed at
  start) or by the sign-in form: signed, good for 12 h, checked here against its expiry,
  ``HttpOnly``, ``SameSite=Strict``, holding no token. ``POST /logout`` signs it out.
* Without a token (``no_token=True``) the console must be bound to loopback, and requests
  whose ``Host`` is not a loopback name are refused: a hostile page cannot read it
  through DNS rebinding.
* Actions (and sign-out) are POSTs carrying the session's CSRF token (synchronizer
  token, ``_auth.Sessions.csrf``) that a page of another origin cannot read; a present
  ``Origin`` header must match ``Host`` too. Pages are rendered once for every viewer
  with a per-process placeholder where the token goes, and each response swaps in its
  session's own.
* Wrong tokens are counted and logged (at most once a minute per peer); past
  ``MAX_WRONG_TOKENS`` in a minute a peer gets HTTP 429 (``_guard.py``).
* Every response carries a strict Content-Security-Policy (no inline script, nothing
  from elsewhere), ``X-Content-Type-Options: nosniff``, ``Referrer-Policy: no-referrer``
  and ``X-Frame-Options: DENY``.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict
from importlib import resources
from typing import Final, TypeVar
from urllib.parse import urlsplit

from aiohttp import web

from ..errors import ScheduleNotFoundError
from ._auth import Sessions
from ._data import ActionError, ConsoleSource
from ._feed import Feed
from ._guard import Guard
from ._render import render_history_page, render_page, render_stored_page, render_task_page

__all__ = ["MetricsEndpoint", "build_app", "feed_of", "sessions_of"]

MetricsEndpoint = Callable[[], tuple[bytes, str]]

_log = logging.getLogger("tocsin.console")

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
    "pause": "Stored schedule {id} is paused (cluster-wide).",
    "resume": "Stored schedule {id} is resumed; it goes on from now.",
    "trigger": "Stored schedule {id} runs once now.",
}
_R = TypeVar("_R", bound=web.StreamResponse)
_feed_key: web.AppKey[Feed] = web.AppKey("feed", Feed)
_sessions_key: web.AppKey[Sessions] = web.AppKey("sessions", Sessions)

#: What the sign-in page says, by why it is shown.
_SIGN_IN: Final = {
    "missing": "This console needs its token. Paste it here, or open the address that "
    "carries it (printed or logged when the console started with a token made for it; "
    "it ends in ?token=…).",
    "wrong": "Wrong token.",
    "ended": "Your session expired or was signed out. Sign in again.",
    "signed_out": "Signed out.",
}


def build_app(
    source: ConsoleSource,
    *,
    sessions: Sessions,
    csrf: str,
    allowed_hosts: set[str] | None,
    interval: float,
    metrics: MetricsEndpoint | None = None,
    guard: Guard | None = None,
    secure: bool = False,
) -> web.Application:
    """The console application over ``source``.

    Args:
        source: what to show and act on.
        sessions: the token and its sessions (no token: loopback only; the caller checks
            the bind).
        csrf: the per-process placeholder rendered where a form's CSRF token goes; each
            response replaces it with the token of its session.
        allowed_hosts: ``Host`` header values accepted (None: any; used with a token);
            the caller may fill the set once the port is known.
        interval: seconds between live updates.
        metrics: serves ``GET /metrics`` (``tocsin.metrics.prometheus_endpoint(...)``).
        guard: counts and rate-limits wrong tokens (the server's connection gate).
        secure: served over TLS: the session cookie is ``Secure``.
    """
    feed = Feed(source, csrf, interval)
    gate = guard if guard is not None else Guard()

    def wrong_token(request: web.Request) -> None:
        gate.wrong_token(request.remote or "a local client")

    def blocked(request: web.Request) -> web.Response | None:
        if not gate.token_blocked(request.remote or "a local client"):
            return None
        return _headers(
            web.Response(
                status=429,
                text="too many wrong tokens; wait a minute",
                headers={"Retry-After": "60"},
            )
        )

    @web.middleware
    async def gatekeeper(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if allowed_hosts is not None and request.host not in allowed_hosts:
            raise web.HTTPMisdirectedRequest(text="unexpected Host header")
        if sessions.required:
            given = request.query.get("token") if request.path == "/" else None
            bearer = request.headers.get("Authorization", "").startswith("Bearer ")
            if (given is not None or bearer) and (refused := blocked(request)) is not None:
                return refused
            if given is not None:
                # The printed URL: swap the token for a session cookie, and redirect off
                # the address that holds it (history, screen shares), signed in or not.
                if sessions.is_token(given):
                    return _signed_in(sessions, secure)
                wrong_token(request)
                return _headers(_login_page("wrong"))
            public = request.path == "/login" or request.path.startswith("/static/")
            if not public and not _authorized(request):
                if bearer:
                    wrong_token(request)
                cookie = request.cookies.get(sessions.cookie_name)
                ended = cookie and not request.headers.get("Authorization")
                return _headers(_login_page("ended" if ended else "missing"))
        response = await handler(request)
        return _headers(response)

    def _authorized(request: web.Request) -> bool:
        return sessions.authorized(
            request.headers.get("Authorization", ""), request.cookies.get(sessions.cookie_name, "")
        )

    def _csrf(request: web.Request) -> str:
        """This request's session's CSRF token ("" when it has none: every form fails)."""
        mine = sessions.csrf(
            request.headers.get("Authorization", ""), request.cookies.get(sessions.cookie_name, "")
        )
        return mine or ""

    def _check_form(request: web.Request, form: Mapping[str, object]) -> None:
        origin = request.headers.get("Origin")
        if origin is not None and origin != "null" and urlsplit(origin).netloc != request.host:
            raise web.HTTPForbidden(text="cross-origin request refused")
        given = str(form.get("csrf", ""))
        mine = _csrf(request)
        if not mine or not hmac.compare_digest(given.encode(), mine.encode()):
            gate.refuse(request.remote or "a local client", "csrf")
            raise web.HTTPForbidden(text="missing or wrong CSRF token; reload the page")

    async def page(request: web.Request) -> web.Response:
        sections = await feed.sections()
        html = render_page(
            sections,
            _notice(request),
            metrics is not None,
            csrf if sessions.required else None,
        ).replace(csrf, _csrf(request))
        return web.Response(text=html, content_type="text/html", charset="utf-8")

    async def schedule_page(request: web.Request) -> web.Response:
        reference = request.query.get("reference", "")
        found = await source.history(reference) if reference else None
        html = render_history_page(found, reference)
        status = 200 if found is not None else 404
        return web.Response(text=html, status=status, content_type="text/html", charset="utf-8")

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
        mine = _csrf(request)
        try:
            await response.write(b"retry: 2000\n\n")
            while (payload := await sub.next()) is not None:
                # A session that expires or is signed out while its page is open ends its
                # stream: the page's reconnect then meets the sign-in page.
                if not _authorized(request):
                    break
                if not payload:
                    continue  # a refresh that changed nothing: no event sent
                payload = payload.replace(csrf, mine)
                await response.write(f"event: update\ndata: {payload}\n\n".encode())
        except ConnectionResetError:
            pass  # the client went away: end this stream only
        finally:
            feed.unsubscribe(sub)
        return response

    async def act(request: web.Request, action: str) -> web.StreamResponse:
        form = await request.post()
        _check_form(request, form)
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

    async def stored_act(request: web.Request) -> web.StreamResponse:
        action = request.match_info["action"]
        form = await request.post()
        _check_form(request, form)
        schedule_id = str(form.get("id", ""))
        if not schedule_id:
            raise web.HTTPBadRequest(text="`id` is required")
        note = str(form.get("note", ""))[:500] or None
        try:
            await source.stored_action(action, schedule_id, note)
        except ScheduleNotFoundError as exc:
            raise web.HTTPNotFound(text=str(exc)) from None
        except ValueError as exc:
            raise web.HTTPConflict(text=str(exc)) from None
        _log.info("console: %s stored schedule %s", action, schedule_id)
        location = request.app.router["page"].url_for().with_query(done=action, id=schedule_id)
        raise web.HTTPSeeOther(location=str(location) + "#stored")

    async def stored_page(request: web.Request) -> web.Response:
        schedule_id = request.query.get("id", "")
        found = await source.stored_history(schedule_id) if schedule_id else None
        html = render_stored_page(found, schedule_id)
        status = 200 if found is not None else 404
        return web.Response(text=html, status=status, content_type="text/html", charset="utf-8")

    async def task_page(request: web.Request) -> web.Response:
        kind = request.query.get("kind", "")
        identity = request.query.get("identity", "")
        task_id = request.query.get("id", "")
        found = None
        if kind and identity and task_id:
            found = await source.task_history(kind, identity, task_id)
        html = render_task_page(found, kind, identity, task_id)
        status = 200 if found is not None else 404
        return web.Response(text=html, status=status, content_type="text/html", charset="utf-8")

    async def retry(request: web.Request) -> web.StreamResponse:
        return await act(request, "retried")

    async def discard(request: web.Request) -> web.StreamResponse:
        return await act(request, "discarded")

    async def metrics_route(request: web.Request) -> web.Response:
        assert metrics is not None
        body, content_type = metrics()
        if content_type.startswith("text/plain"):  # the text format: families may follow
            body += _gate_metrics(gate)
        response = web.Response(body=body)
        response.headers["Content-Type"] = content_type
        return response

    async def static(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in _STATIC:
            raise web.HTTPNotFound()
        data = resources.files(__package__).joinpath("static", name).read_bytes()
        return web.Response(body=data, content_type=_STATIC[name], charset="utf-8")

    async def login_form(request: web.Request) -> web.StreamResponse:
        if not sessions.required:
            raise web.HTTPSeeOther(location="/")
        why = "signed_out" if "signed_out" in request.query else None
        return _headers(_login_page(why, status=200))

    async def login(request: web.Request) -> web.StreamResponse:
        if not sessions.required:
            raise web.HTTPSeeOther(location="/")
        if (refused := blocked(request)) is not None:
            return refused
        form = await request.post()
        if sessions.is_token(str(form.get("token", ""))):
            return _signed_in(sessions, secure)
        wrong_token(request)
        return _headers(_login_page("wrong"))

    async def logout(request: web.Request) -> web.StreamResponse:
        form = await request.post()
        _check_form(request, form)  # a page of another origin cannot sign you out
        sessions.revoke(request.cookies.get(sessions.cookie_name, ""))
        response = web.Response(status=303, headers={"Location": "login?signed_out=1"})
        response.del_cookie(sessions.cookie_name, path="/")
        _log.info("console: a session signed out")
        return response

    app = web.Application(middlewares=[gatekeeper])
    app[_feed_key] = feed
    app[_sessions_key] = sessions
    app.router.add_get("/", page, name="page")
    app.router.add_get("/events", events)
    app.router.add_get("/snapshot.json", snapshot_json)
    app.router.add_get("/schedule", schedule_page)
    app.router.add_post("/tasks/retry", retry)
    app.router.add_post("/tasks/discard", discard)
    app.router.add_post("/schedules/{action:pause|resume|trigger}", stored_act)
    app.router.add_get("/stored", stored_page)
    app.router.add_get("/task", task_page)
    app.router.add_get("/login", login_form)
    app.router.add_post("/login", login)
    app.router.add_post("/logout", logout)
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


def sessions_of(app: web.Application) -> Sessions:
    """The app's token and sessions (for tests: swap its clock)."""
    return app[_sessions_key]


def _signed_in(sessions: Sessions, secure: bool) -> web.StreamResponse:
    response = web.Response(status=303, headers={"Location": "/"})
    response.set_cookie(
        sessions.cookie_name,
        sessions.issue(),
        max_age=int(sessions.ttl),
        httponly=True,
        samesite="Strict",
        path="/",
        secure=secure or None,
    )
    return _headers(response)


def _login_page(why: str | None, *, status: int = 401) -> web.Response:
    message = f'<p role="status">{_SIGN_IN[why]}</p>' if why is not None else ""
    html = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<title>tocsin console: sign in</title><link rel="stylesheet" href="/static/console.css">'
        '</head><body><main id="main"><h1>tocsin console</h1>'
        f'{message}<form method="post" action="/login"><label for="token">Console token</label> '
        '<input id="token" name="token" type="password" autocomplete="current-password" required> '
        '<button type="submit">Sign in</button></form></main></body></html>'
    )
    response = web.Response(status=status, text=html, content_type="text/html", charset="utf-8")
    if status == 401:  # for scripts: say what credential is asked (RFC 6750)
        response.headers["WWW-Authenticate"] = 'Bearer realm="tocsin console"'
    return response


def _gate_metrics(gate: Guard) -> bytes:
    """The connection gate's counts in the Prometheus text format."""
    stats = gate.stats()
    closed = {
        "cap": stats.refused,
        "evicted": stats.evicted,
        "header_timeout": stats.header_timeouts,
        "body_timeout": stats.body_timeouts,
        "tls_handshake": stats.tls_failures,
    }
    lines = [
        "# HELP tocsin_console_connections Console connections open now.",
        "# TYPE tocsin_console_connections gauge",
        f"tocsin_console_connections {stats.open}",
        "# HELP tocsin_console_connections_refused_total Console connections refused or "
        "closed by its gate, by reason.",
        "# TYPE tocsin_console_connections_refused_total counter",
        *(
            f'tocsin_console_connections_refused_total{{reason="{reason}"}} {count}'
            for reason, count in closed.items()
        ),
        "# HELP tocsin_console_wrong_tokens_total Requests with a wrong console token.",
        "# TYPE tocsin_console_wrong_tokens_total counter",
        f"tocsin_console_wrong_tokens_total {stats.wrong_tokens}",
        "# HELP tocsin_console_wrong_csrf_total Form posts with a missing or wrong CSRF token.",
        "# TYPE tocsin_console_wrong_csrf_total counter",
        f"tocsin_console_wrong_csrf_total {stats.wrong_csrf}",
    ]
    return ("\n".join(lines) + "\n").encode()


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
