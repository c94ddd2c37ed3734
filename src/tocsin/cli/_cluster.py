# SPDX-License-Identifier: Apache-2.0
"""``tocsin cluster``: list live nodes, pause and resume cron schedules cluster-wide.

``members`` prints the live nodes (name, address, joined, last seen, as the coordinator
sees them now; ``--json``: one JSON document ``{"members": [{"name", "address",
"joined", "last_seen"}], "paused": [...]}`` with ISO 8601 UTC times); ``pause REF`` /
``resume REF`` set the cluster-wide flag that every node reads in the same atomic step as
each cron tick claim, so the next tick obeys. The URL
comes from ``--coordinator`` or ``TOCSIN_COORDINATOR``. ``forget-store --store URL``
deletes the durable store's record of its cluster (``TOCSIN_STORE`` too), so that a
cluster moved to another coordinator on purpose may use it. Exit codes: 0 done, 1 the
coordinator failed, 2 bad usage (bad URL, a SQLite file that does not exist or holds
other tables than a coordinator's, e.g. the durable store: nothing is written to it,
memory://).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sys
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from typing import Any, Final

from ..clock import SystemClock
from ..cluster import Coordinator, open_coordinator
from ..cluster._spi import PauseNote
from ..errors import CoordinatorError, InvalidCoordinatorURLError, InvalidStoreURLError, StoreError
from ..stores import open_store
from ..stores._spi import connect_read_only
from ..stores.sqlite import SQLiteStore
from ._urls import add_url_option, url_usage

__all__ = ["UsageError", "cli_coordinator", "register"]

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2


class UsageError(Exception):
    """The command line is wrong (exit code 2)."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``cluster`` command (``members``, ``pause``, ``resume``) to a parser."""
    cluster = subparsers.add_parser("cluster", help="cluster members; pause/resume cron")
    actions = cluster.add_subparsers(dest="cluster_command", required=True, metavar="COMMAND")

    def common(parser: argparse.ArgumentParser) -> None:
        add_url_option(
            parser,
            "coordinator",
            "coordinator URL, e.g. postgresql://db/shop, redis://cache:6379/0, "
            "sqlite:///cluster.db",
        )

    members = actions.add_parser("members", help="list the live nodes (or --json)")
    common(members)
    members.add_argument("--json", action="store_true", help="print one JSON document")
    members.set_defaults(func=lambda ns: _run(_members, ns))
    for name, handler, text in (
        ("pause", _pause, "pause a cron schedule on every node (no node claims its ticks)"),
        ("resume", _resume, "resume a cron schedule paused cluster-wide"),
    ):
        sub = actions.add_parser(name, help=text)
        sub.add_argument("reference", help="the cron schedule's reference")
        if name == "pause":
            sub.add_argument("--note", default=None, help="why (shown by `members`)")
        common(sub)
        sub.set_defaults(func=lambda ns, handler=handler: _run(handler, ns))
    forget = actions.add_parser(
        "forget-store",
        help="forget which cluster a durable store belongs to (stop that cluster first)",
    )
    add_url_option(forget, "store", "durable store URL, e.g. postgresql://db/shop")
    forget.set_defaults(func=_forget_store)


def _forget_store(ns: argparse.Namespace) -> int:
    """Delete the store's cluster record (docs/cluster.md, "One store, one cluster"): the
    next node to join records its own coordinator. For moving a cluster to another
    coordinator on purpose, once every node of the old one has stopped."""
    if (status := url_usage(ns, "tocsin cluster")) is not None:
        return status
    if not ns.store:
        print(
            "tocsin cluster: error: no store: pass --store URL or --store-file PATH, or set "
            "TOCSIN_STORE",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        store = open_store(ns.store)
        if isinstance(store, SQLiteStore) and store.path != ":memory:":
            connect_read_only(store.path).close()  # an existing tocsin store, or nothing
    except (InvalidStoreURLError, StoreError) as exc:
        print(f"tocsin cluster: error: {exc}", file=sys.stderr)
        return EXIT_USAGE

    async def main() -> str | None:
        await store.open()
        try:
            recorded = await store.swap_cluster(None, None)
            while recorded is not None:
                found = await store.swap_cluster(recorded, None)
                if found == recorded:
                    break
                recorded = found  # changed meanwhile (a node joined): forget that one
            return recorded
        finally:
            await store.close()

    try:
        recorded = asyncio.run(main())
    except StoreError as exc:
        print(f"tocsin cluster: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except ImportError as exc:
        print(f"tocsin cluster: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if recorded is None:
        print(f"{store.url} belongs to no cluster yet; nothing to forget")
    else:
        print(
            f"{store.url} no longer belongs to the cluster of {recorded}; the next node "
            "that joins records its own coordinator"
        )
    return EXIT_OK


def _run(
    handler: Callable[[Coordinator, argparse.Namespace], Coroutine[Any, Any, None]],
    ns: argparse.Namespace,
) -> int:
    if (status := url_usage(ns, "tocsin cluster")) is not None:
        return status
    try:
        coordinator = cli_coordinator(ns.coordinator)
    except UsageError as exc:
        print(f"tocsin cluster: error: {exc}", file=sys.stderr)
        return EXIT_USAGE

    async def main() -> None:
        await coordinator.open()
        try:
            await handler(coordinator, ns)
        finally:
            await coordinator.close()

    try:
        asyncio.run(main())
    except InvalidCoordinatorURLError as exc:  # e.g. a SQLite file that is no coordinator
        print(f"tocsin cluster: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except CoordinatorError as exc:
        print(f"tocsin cluster: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except ImportError as exc:  # the driver's extra is not installed
        print(f"tocsin cluster: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def cli_coordinator(url: str | None) -> Coordinator:
    """The (not yet opened) coordinator a command line names, as ``tocsin cluster`` and
    ``tocsin console --coordinator`` accept it.

    Raises:
        UsageError: no URL, a bad one, ``memory://`` (lives inside one process), a SQLite
            file that does not exist (never created by mistake), or a missing driver.
    """
    if not url:
        raise UsageError(
            "no coordinator: pass --coordinator URL or --coordinator-file PATH, or set "
            "TOCSIN_COORDINATOR"
        )
    if url.lower().startswith("memory://"):
        raise UsageError(
            "a memory:// coordinator lives inside one process; the command line can only "
            "reach postgresql://, redis:// or sqlite:/// coordinators"
        )
    try:
        coordinator = open_coordinator(url)
    except InvalidCoordinatorURLError as exc:
        raise UsageError(str(exc)) from None
    except ImportError as exc:
        raise UsageError(str(exc)) from None
    path = getattr(coordinator, "path", None)  # SQLite: never create a file by mistake
    if isinstance(path, str) and not os.path.exists(path):
        raise UsageError(f"no such SQLite coordinator file: {os.path.abspath(path)}")
    return coordinator


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).isoformat(timespec="seconds")


async def _members(coordinator: Coordinator, ns: argparse.Namespace) -> None:
    _, rows = await coordinator.leases()
    live = [row for row in rows if row.alive]
    paused = sorted(await coordinator.paused_crons())
    notes = await coordinator.pause_notes()
    if ns.json:
        members = [
            {"name": r.node, "address": r.address, "joined": _iso(r.joined),
             "last_seen": _iso(r.renewed)}
            for r in live
        ]  # fmt: skip
        listed = [_paused_entry(reference, notes.get(reference)) for reference in paused]
        print(json.dumps({"members": members, "paused": listed}, indent=2))
        return
    if not live:
        print("no live nodes")
    else:
        lines = [("NAME", "ADDRESS", "JOINED (UTC)", "LAST SEEN (UTC)")]
        lines += [(r.node, r.address, _iso(r.joined), _iso(r.renewed)) for r in live]
        widths = [max(len(line[i]) for line in lines) for i in range(4)]
        for line in lines:
            print("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())
    if paused:
        print(f"paused cron references: {', '.join(paused)}")
        for reference in paused:
            note = notes.get(reference)
            if note is not None:
                why = f": {note.note}" if note.note else ""
                print(f"  {reference}: since {_iso(note.paused_at)} by {note.paused_by}{why}")


def _paused_entry(reference: str, note: PauseNote | None) -> dict[str, str | None]:
    """One entry of ``members --json``'s ``paused`` list (``None``: paused with no note,
    or by a version that kept none)."""
    return {
        "reference": reference,
        "note": None if note is None else note.note,
        "paused_at": None if note is None else _iso(note.paused_at),
        "paused_by": None if note is None else note.paused_by,
    }


async def _pause(coordinator: Coordinator, ns: argparse.Namespace) -> None:
    if ns.reference in await coordinator.paused_crons():
        print(f"{ns.reference!r} is already paused on every node")
        return
    await coordinator.set_cron_paused(ns.reference, True)
    # Who paused it: this command, on this host; when: this machine's clock.
    by = f"tocsin-cli@{socket.gethostname()}"
    await coordinator.set_pause_note(ns.reference, PauseNote(ns.note, SystemClock().wall(), by))
    print(f"paused {ns.reference!r} on every node")


async def _resume(coordinator: Coordinator, ns: argparse.Namespace) -> None:
    await coordinator.set_cron_paused(ns.reference, False)
    await coordinator.set_pause_note(ns.reference, None)
    print(f"resumed {ns.reference!r} on every node")
