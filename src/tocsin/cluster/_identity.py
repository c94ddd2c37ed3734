# SPDX-License-Identifier: Apache-2.0
"""One store, one cluster: the durable store records which cluster it belongs to.

Two clusters on one durable store (two ``tocsin run`` on one ``--store``, each with its
own coordinator file; one machine of several that forgot ``--coordinator``) each own
every identity: every durable actor runs twice and writes are lost. So the store records
the cluster's identity at its first join, and a node whose coordinator differs refuses
to start (:class:`~tocsin.errors.StoreError` naming both).

The identity is a **fingerprint of the coordinator's normalized URL**, never a random id
kept in the coordinator: a coordinator reset empty (Redis restarted without persistence,
``coordinator.db`` deleted) must still be recognised as the same cluster. What it keeps
and drops (:func:`fingerprint`):

* ``sqlite``: the file's real absolute path (``sqlite:////abs/path.db``).
* ``postgresql`` (``postgres`` too): hosts (lower case, port 5432 made explicit),
  database and the tocsin schema (default ``public``).
* ``redis`` (``rediss`` too: TLS is how one talks to the server, not which one it is),
  ``unix``: host and port (6379) or socket path, database number (default 0) and key
  prefix (default ``tocsin:``).
* user names, passwords and driver options (``sslmode``, timeouts, ...) are dropped: they
  say how to reach the coordinator, not which one it is, and a password must never be
  stored or printed.
* ``memory://NAME``: a memory coordinator lives in one process, so two processes each
  with ``memory://`` on one SQLite file are two clusters. Its fingerprint adds this
  process (``#host:pid:start-time``). A node of another process is refused while the
  recording process lives; once it has ended (same host: its pid is gone or belongs to a
  process started later), the record is taken over, so a restarted process is never
  refused for good. In the recording process itself, another ``memory://NAME`` takes
  the record over once the recorded one is closed (no system of this process uses it):
  a test suite may give each test its own name on one file. A recorder on another host
  cannot be checked and is refused: a memory coordinator is for tests and one process,
  not for several machines.

Rejected: a random cluster id kept in the coordinator (lost with the coordinator's data,
exactly when it matters); the coordinator URL as given (``sqlite:///rel.db`` from two
working directories, a password change, ``postgres://`` vs ``postgresql://``).
"""

from __future__ import annotations

import logging
import os
import socket
from typing import Final
from urllib.parse import parse_qsl, quote, urlsplit

from ..errors import StoreError
from ..stores import Store
from ._memory import MemoryCoordinator
from ._protocol import Coordinator

__all__ = ["bind_store", "fingerprint", "warn_if_clustered"]

_log = logging.getLogger("tocsin.cluster")

#: Attempts at recording when the record changes under us (two first joins at once).
_ATTEMPTS: Final = 3


def _process_start(pid: int) -> str | None:
    """The start time of ``pid`` in clock ticks since boot (Linux ``/proc``), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
    except OSError:
        return None
    # Field 22; the command name (field 2) is in parentheses and may hold spaces.
    fields = stat.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None


def _this_process() -> str:
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_process_start(pid) or '?'}"


def _process_gone(token: str) -> bool:
    """Whether the process a memory fingerprint names has certainly ended."""
    host, _, rest = token.partition(":")
    pid_text, _, start = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False  # another host (or a malformed record): cannot tell, so not gone
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # alive, another user's
    now = _process_start(pid)
    # A live pid started at another time is a reused pid: the recorder has ended.
    return start != "?" and now is not None and now != start


def _hosts(netloc: str, default_port: int) -> str:
    hosts = []
    for host in netloc.rpartition("@")[2].split(","):
        if host.startswith("/"):  # a Unix socket directory: a path, case kept
            hosts.append(host)
            continue
        host = host.lower()
        if host and ":" not in host.rpartition("]")[2]:
            host = f"{host}:{default_port}"
        hosts.append(host)
    return ",".join(hosts)


def fingerprint(coordinator: Coordinator) -> str | None:
    """The normalized identity of a coordinator (see the module docstring), or ``None``
    for a coordinator whose ``url`` tocsin cannot read (a user's own class)."""
    url = getattr(coordinator, "url", None)
    if not isinstance(url, str):
        return None
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep:
        return None
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    if scheme == "memory":
        return f"memory://{rest}#{_this_process()}"
    if scheme == "sqlite":
        path = getattr(coordinator, "path", None)
        if not isinstance(path, str):
            path = rest.partition("?")[0][1:]
        return "sqlite:///" + os.path.realpath(path)
    if scheme in ("postgresql", "postgres"):
        netloc = parts.netloc
        if "host" in query:  # ?host= (a socket directory, say) wins over the netloc
            netloc = query["host"] + (f":{query['port']}" if "port" in query else "")
        database = parts.path.lstrip("/") or query.get("dbname") or query.get("database", "")
        schema = getattr(coordinator, "schema", None) or query.get("schema") or "public"
        return f"postgresql://{_hosts(netloc, 5432)}/{quote(database)}?schema={quote(schema)}"
    if scheme in ("redis", "rediss", "unix"):
        prefix = getattr(coordinator, "prefix", None) or query.get("prefix") or "tocsin:"
        if scheme == "unix":
            db = query.get("db") or "0"
            return f"unix://{quote(parts.path)}?db={int(db)}&prefix={quote(prefix)}"
        db = parts.path.strip("/") or query.get("db") or "0"
        server = _hosts(parts.netloc, 6379) or "localhost:6379"
        return f"redis://{server}/{int(db)}?prefix={quote(prefix)}"
    return f"{scheme}://{_hosts(parts.netloc, 0)}{parts.path}"


def _refusal(store: Store, recorded: str, mine: str) -> StoreError:
    return StoreError(
        f"the durable store {store.url} belongs to another cluster: it was first joined "
        f"with the coordinator {recorded}, and this node's coordinator is {mine}; two "
        "clusters on one store would each run every durable identity. Give this node "
        "that cluster's coordinator, or another store; if that cluster moved to this "
        "coordinator on purpose, stop its nodes and run `tocsin cluster forget-store "
        f'--store {store.url}` (docs/cluster.md, "One store, one cluster")'
    )


def _replaceable(recorded: str, mine: str) -> bool:
    """A memory coordinator's record gives way to this node once nothing uses it: its
    process has ended, or it is this process and that coordinator is closed here."""
    if not (recorded.startswith("memory://") and mine.startswith("memory://")):
        return False
    name, _, token = recorded.removeprefix("memory://").rpartition("#")
    if token == _this_process():
        return not MemoryCoordinator.is_open(name)
    return _process_gone(token)


async def bind_store(store: Store, coordinator: Coordinator, *, record: bool) -> None:
    """Check (``record=False``, before joining) or record (``record=True``, once joined)
    that ``store`` belongs to the cluster of ``coordinator``.

    The check writes nothing, so a node that never manages to join (a wrong coordinator
    URL, say) records nothing either.

    Raises:
        StoreError: the store was recorded by a cluster with another coordinator (the
            message names both, passwords left out), or the store failed.
    """
    mine = fingerprint(coordinator)
    if mine is None:
        return
    recorded = ""
    for _ in range(_ATTEMPTS):
        found = await store.swap_cluster(None, mine if record else None)
        if found is None or found == mine:
            return
        recorded = found
        if not _replaceable(recorded, mine):
            break
        if not record:
            return  # taken over at the recording step, once joined
        if await store.swap_cluster(recorded, mine) == recorded:
            _log.warning(
                "durable store %s: taking over the record of %s, whose process has ended",
                store.url,
                recorded,
            )
            return
    raise _refusal(store, recorded, mine)


async def warn_if_clustered(store: Store) -> None:
    """Outside cluster mode: log a warning when a cluster recorded this store (the system
    runs the store's durable work alone, which is right only once that cluster stopped)."""
    recorded = await store.swap_cluster(None, None)
    if recorded is not None:
        _log.warning(
            "durable store %s belongs to the cluster coordinated by %s, and this system "
            "is not in cluster mode: it runs every due task itself. Make sure no node of "
            "that cluster is running (they would run them too)",
            store.url,
            recorded,
        )
