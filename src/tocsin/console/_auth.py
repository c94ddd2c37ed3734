# SPDX-License-Identifier: Apache-2.0
"""Who may use the console: its token, and the session cookies the token is exchanged for.

Prior art: Jupyter Server prints ``http://127.0.0.1:8888/?token=...`` and swaps the token
for a signed cookie; Django signs its session cookies with an expiry. Here:

* A console has a token unless it was started with ``no_token=True`` (loopback only).
  Without one given, :func:`~tocsin.console.serve` makes one per start
  (:func:`secrets.token_urlsafe`), and the URL that carries it is printed or logged.
* The token is asked as ``Authorization: Bearer TOKEN`` (Prometheus, curl) or exchanged,
  once, for a session cookie: ``GET /?token=TOKEN`` or the sign-in form.
* A session cookie is ``EXPIRES.NONCE.MAC``: its expiry (epoch seconds), a random nonce,
  and an HMAC-SHA256 of both under a key derived from the token. It holds no token, is
  good for :data:`SESSION_TTL` (12 h) and is checked against that expiry here, not only by
  the browser (``Max-Age``). Signing out revokes its nonce in this process and clears the
  cookie. Every comparison runs in constant time (:func:`hmac.compare_digest`).
* A session is **scoped to this console**: the cookie is named ``tocsin_console_PORT``
  and its MAC covers the console's ``host:port`` (:attr:`Sessions.scope`), so a cookie
  of another console (another worker's, sharing the token) is refused here, and two
  consoles on one host never overwrite each other's cookie. ``Secure`` under TLS.
* The **CSRF token belongs to the session**: an HMAC of the session's nonce (or, for a
  request authorized by ``Bearer``, of that fact), so it dies with sign-out and a token
  leaked from one session is worth nothing in another.

Rejected: a random session id kept in a server-side table (every console restart would
sign everyone out, also with a fixed ``TOCSIN_CONSOLE_TOKEN``), and the old cookie, an
HMAC of the token alone, that never expired and could not be signed out.
Sessions are timed on a :class:`~tocsin.SystemClock` of their own, like the feed's
refreshes: the people who sign in live in real time, whatever clock the system runs on.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Final, final

from ..clock import Clock, SystemClock

__all__ = ["COOKIE", "SESSION_TTL", "Sessions"]

#: Name of the session cookie, before the console's port (``tocsin_console_8765``).
COOKIE: Final = "tocsin_console"
#: Seconds a session cookie is good for after sign-in (12 hours: a working day, so an
#: operator signs in once a shift and a cookie left on a shared machine dies overnight).
SESSION_TTL: Final = 12 * 3600.0


def _mac(key: bytes, body: str) -> str:
    return hmac.new(key, body.encode(), hashlib.sha256).hexdigest()


@final
class Sessions:
    """The token of one console and the session cookies issued for it.

    Not constructed directly: the console makes one per server.
    """

    def __init__(self, token: str | None, ttl: float = SESSION_TTL) -> None:
        self.token = token
        self.ttl = ttl
        #: Real time for expiry; a test may swap in a ManualClock.
        self.clock: Clock = SystemClock()
        # A key of its own, so a cookie never is (nor reveals) the token.
        self._key = (
            None
            if token is None
            else hmac.new(token.encode(), b"tocsin console session", hashlib.sha256).digest()
        )
        #: Nonces of signed-out sessions, with their expiry (dropped once expired: an
        #: expired cookie is refused anyway, so the table never outgrows a TTL's sign-outs).
        self._revoked: dict[str, float] = {}
        #: ``host:port`` of the console these sessions belong to (set once it is bound;
        #: covered by every cookie's MAC).
        self.scope = ""
        #: The session cookie's name: :data:`COOKIE` and the console's port.
        self.cookie_name = COOKIE
        #: The CSRF token of a console without a token (``no_token=True``): per process.
        self.open_csrf = secrets.token_urlsafe(32)

    def bind(self, host: str, port: int) -> None:
        """Scope the sessions to the console at ``host:port`` (its cookie name and MAC)."""
        self.scope = f"{host}:{port}"
        self.cookie_name = f"{COOKIE}_{port}"

    @property
    def required(self) -> bool:
        """Whether requests need the token (False only with ``no_token=True``)."""
        return self.token is not None

    def is_token(self, given: str) -> bool:
        """Whether ``given`` is the token (constant time)."""
        token = self.token
        return token is not None and hmac.compare_digest(given.encode(), token.encode())

    def issue(self) -> str:
        """A new session cookie value, good for :attr:`ttl` seconds from now."""
        assert self._key is not None
        body = f"{int(self.clock.wall() + self.ttl)}.{secrets.token_urlsafe(16)}"
        return f"{body}.{_mac(self._key, f'{self.scope}|{body}')}"

    def expiry(self, cookie: str) -> float | None:
        """The epoch second at which ``cookie`` stops being good, or None if it is not a
        live session of this token (forged, of another token, expired, signed out)."""
        key = self._key
        if key is None:
            return None
        expires_text, _, rest = cookie.partition(".")
        nonce, _, mac = rest.partition(".")
        body = f"{expires_text}.{nonce}"
        if not hmac.compare_digest(mac.encode(), _mac(key, f"{self.scope}|{body}").encode()):
            return None
        # The MAC matched: the fields are ours, expires_text is the int written by issue().
        expires = float(expires_text)
        if expires <= self.clock.wall() or nonce in self._revoked:
            return None
        return expires

    def authorized(self, authorization: str, cookie: str) -> bool:
        """Whether a request with these ``Authorization`` header and cookie values may in."""
        if self.token is None:
            return True
        if authorization.startswith("Bearer "):
            return self.is_token(authorization[7:])
        return self.expiry(cookie) is not None

    def csrf(self, authorization: str, cookie: str) -> str | None:
        """The CSRF token of the request's session, or None when it has none.

        A live session cookie: an HMAC of its nonce (it dies with the session). A valid
        ``Bearer`` token (a script, which a page of another origin cannot make send it):
        an HMAC of that, so a script may still read and post the forms. No token at all
        (``no_token=True``): one per process.
        """
        key = self._key
        if key is None:
            return self.open_csrf
        if authorization.startswith("Bearer "):
            if not self.is_token(authorization[7:]):
                return None
            return _mac(key, f"{self.scope}|csrf|bearer")
        if self.expiry(cookie) is None:
            return None
        return _mac(key, f"{self.scope}|csrf|{cookie.split('.')[1]}")

    def revoke(self, cookie: str) -> None:
        """Sign ``cookie``'s session out: refused from now on by this server."""
        expires = self.expiry(cookie)
        now = self.clock.wall()
        self._revoked = {n: at for n, at in self._revoked.items() if at > now}
        if expires is not None:
            self._revoked[cookie.split(".")[1]] = expires
