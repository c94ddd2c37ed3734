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
from typing import Final
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = [
    "CONNECT_TIMEOUT",
    "PG_OPTIONS",
    "REDIS_OPTIONS",
    "check_connect_timeout",
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


def redact(url: str) -> str:
    """The URL with its password replaced by ``***`` (for messages, ``url`` and repr)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user, _, host = parts.netloc.rpartition("@")
    return urlunsplit(parts._replace(netloc=f"{user.partition(':')[0]}:***@{host}"))


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
