# SPDX-License-Identifier: Apache-2.0
"""Query options of PostgreSQL and Redis URLs: which are allowed, which tocsin reads.

A misspelt option (``?shema=shop``, ``?prefx=shop:``) used to be dropped or passed on
silently, and two applications then shared one schema or key space. Every URL option is
now checked against a closed list when the URL is given (``Cluster(...)``,
``open_store(...)``), and an unknown one is refused with the list of allowed ones.

Options tocsin reads itself are taken out of the URL before it reaches the driver:

* ``schema=NAME`` (PostgreSQL): the schema of tocsin's tables.
* ``connect_timeout=SECONDS`` (PostgreSQL): how long opening a connection may take,
  server startup and login included (default :data:`CONNECT_TIMEOUT`). asyncpg's own
  default is 60 s and its timeout error has an empty message; the bound here is shorter
  and the error names the server and the bound.
* ``prefix=TEXT`` (Redis): the prefix of every key.

Every other allowed option is the driver's (libpq's connection parameters that asyncpg
reads; redis-py's URL options).
"""

from __future__ import annotations

import math
import re
from typing import Final
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

__all__ = [
    "CONNECT_TIMEOUT",
    "MASK",
    "PG_OPTIONS",
    "REDIS_OPTIONS",
    "SECRET_OPTION_WORDS",
    "check_connect_timeout",
    "has_secret",
    "no_answer",
    "redact",
    "split_options",
    "unknown_message",
]

#: Seconds a PostgreSQL connection may take to open (startup and login included).
CONNECT_TIMEOUT: Final = 10.0

#: Options of a PostgreSQL URL: tocsin's, then the libpq parameters asyncpg reads.
PG_OPTIONS: Final = (
    "schema",
    "connect_timeout",
    "host",
    "port",
    "dbname",
    "database",
    "user",
    "password",
    "passfile",
    "service",
    "application_name",
    "sslmode",
    "sslcert",
    "sslkey",
    "sslrootcert",
    "sslcrl",
    "sslpassword",
    "sslnegotiation",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
    "target_session_attrs",
    "krbsrvname",
    "gsslib",
)

#: Options of a Redis URL: tocsin's ``prefix``, then redis-py's URL options.
REDIS_OPTIONS: Final = (
    "prefix",
    "db",
    "socket_timeout",
    "socket_connect_timeout",
    "socket_keepalive",
    "retry_on_timeout",
    "max_connections",
    "health_check_interval",
    "client_name",
    "protocol",
    "ssl_cert_reqs",
    "ssl_ca_certs",
    "ssl_ca_path",
    "ssl_certfile",
    "ssl_keyfile",
    "ssl_password",
    "ssl_check_hostname",
)


def split_options(
    url: str, allowed: tuple[str, ...], ours: tuple[str, ...]
) -> tuple[str, dict[str, str], list[str]]:
    """Split a URL's query into tocsin's options and the driver's.

    Returns:
        The URL with only the driver's options left, tocsin's options (name -> value,
        the last one wins), and the names found that are not in ``allowed`` (the caller
        raises its own typed error for them).
    """
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    unknown = sorted({name for name, _ in query if name not in allowed})
    mine = {name: value for name, value in query if name in ours}
    rest = [(name, value) for name, value in query if name not in ours]
    return urlunsplit(parts._replace(query=urlencode(rest))), mine, unknown


#: Query options whose value is a secret (matched case-insensitively as substrings, so
#: ``password``, ``sslpassword``, ``ssl_password``, ``secret``, ``token`` and the like).
SECRET_OPTION_WORDS: Final = ("pass", "secret", "token", "key")

#: What a masked secret reads as.
MASK: Final = "***"

# A user-info password where urlsplit finds no netloc (a mistyped ``postgresql:/u:pw@h``,
# ``redis:u:pw@h``): ``:SECRET@`` before a host.
_LOOSE_PASSWORD: Final = re.compile(r"(?<=:)[^:/@?#\s]*(?=@)")


def redact(url: object) -> str:
    """The URL with every secret in it replaced by ``***``, for logs, errors, pages.

    Masks the user-info password (``scheme://user:SECRET@host``), the value of every
    query option whose name holds ``pass``, ``secret``, ``token`` or ``key``
    (``?password=``, ``?sslpassword=``, ``?ssl_password=``...), and a ``:SECRET@`` in a
    URL too mistyped to parse. Never raises: anything that is not a str is shown as its
    type only (it may be a secret of another shape).
    """
    if not isinstance(url, str):
        return f"<{type(url).__name__}>"
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an unbalanced "[" in the host: mask what looks like one
        return _LOOSE_PASSWORD.sub(MASK, url)
    netloc = parts.netloc
    if not netloc and "@" in parts.path:
        return _mask_query(_LOOSE_PASSWORD.sub(MASK, url))
    # Edited in place, not rebuilt with urlunsplit: that would turn sqlite:///a.db into
    # sqlite:/a.db and change what the reader sees besides the secret.
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, colon, _ = userinfo.partition(":")
        if colon:
            url = url.replace(f"//{netloc}", f"//{user}:{MASK}@{host}", 1)
    if parts.query:
        start = url.index("?") + 1
        url = url[:start] + _mask_query(parts.query) + url[start + len(parts.query) :]
    if parts.fragment:
        url = url[: len(url) - len(parts.fragment)] + _mask_query(parts.fragment)
    return url


def _mask_query(query: str) -> str:
    """``a=1&password=x`` -> ``a=1&password=***``; the rest kept byte for byte (a "?"
    inside the query, as a mistyped URL may hold, separates options too)."""
    if "=" not in query:
        return query
    pieces = []
    for piece in re.split(r"([&;?])", query):
        name, eq, _ = piece.partition("=")
        if eq and any(word in unquote(name).lower() for word in SECRET_OPTION_WORDS):
            piece = f"{name}={MASK}"
        pieces.append(piece)
    return "".join(pieces)


def has_secret(url: str) -> bool:
    """Whether :func:`redact` would hide anything in ``url``."""
    return redact(url) != url


def unknown_message(url: str, unknown: list[str], allowed: tuple[str, ...]) -> str:
    """``'URL' has unknown query option 'a'; allowed: ...`` (the URL redacted)."""
    url = redact(url)
    names = ", ".join(repr(name) for name in unknown)
    return f"{url!r} has unknown query option {names}; allowed: {', '.join(allowed)}"


def no_answer(dsn: str, seconds: float) -> str:
    """Why a PostgreSQL connection timed out, naming the server (asyncpg's
    ``TimeoutError`` has no message at all)."""
    parts = urlsplit(dsn)
    server = parts.netloc.rpartition("@")[2] or "the default server (PGHOST, local socket)"
    if parts.netloc and ":" not in server.rpartition("]")[2]:
        server += ":5432"
    return (
        f"no answer from {server} within {seconds:g} s (connecting, startup and login "
        "must finish within connect_timeout; set it with ?connect_timeout=SECONDS)"
    )


def check_connect_timeout(value: object) -> float:
    """A connect timeout in seconds: a finite number > 0 (a str from a URL included).

    Raises:
        ValueError: anything else, saying what was given.
    """
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(
            f"`connect_timeout` must be a number of seconds > 0, got {value!r}"
        ) from None
    if isinstance(value, bool) or not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"`connect_timeout` must be a number of seconds > 0, got {value!r}")
    return seconds
