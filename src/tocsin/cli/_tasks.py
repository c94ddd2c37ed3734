# SPDX-License-Identifier: Apache-2.0
"""``tocsin tasks``: inspect durable tasks, retry or discard parked ones, run them now or
for a past range.

``list`` prints a table (``--json``: one JSON document, fields in ``docs/cli.md``);
``retry ID`` moves a parked task back to pending (attempts 0, due now, last error kept for
the record); ``discard ID`` deletes a parked task; ``trigger ID`` adds one manual run of a
task, due now (its own due time unchanged); ``backfill ID --from T --to T [--dry-run]``
lists the task's instants in ``[from, to)`` and, without ``--dry-run``, adds one run of
each (the same rows ``self.trigger`` / ``self.backfill`` add; a running system runs
them); ``history ID`` prints what became of its recent instants (``--json``). An id
that several actors use needs ``--actor KIND/ID``. Exit codes: 0 done, 1 the operation
failed (unknown or ambiguous id, task not parked, server unreachable), 2 bad
usage (argparse's code: bad URL, bad ``--actor``, a store path that is not a tocsin
store). Every error is one line on stderr.

The store URL comes from ``--store`` or the ``TOCSIN_STORE`` environment variable. These
are operators' tools: they never create anything. A SQLite file must exist and have
tocsin's tables (pointed at another application's database, they refuse it); ``list``
opens it read-only (``mode=ro``). Retry and discard read then write; a running system may
change the same task between the two (the write wins), which is acceptable for an
operator command.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from typing import Any, Final

import msgspec

from ..clock import SystemClock
from ..durable._spi import backfill_instants, backfill_rows, tick_outcome, trigger_row
from ..errors import InvalidStoreURLError, StoreError
from ..jobs import KIND_PREFIX as JOB_KIND_PREFIX
from ..stores import DeleteTask, MemoryStore, Store, TaskRow, UpsertTask, open_store
from ..stores._spi import connect_read_only
from ..stores.sqlite import SQLiteStore

__all__ = ["register"]

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2
#: Characters of ``last_error`` shown in the table.
ERROR_WIDTH: Final = 40


class _Failure(Exception):
    """An operation failed in a way the user must be told about (exit code 1)."""


class _Usage(Exception):
    """The command line is wrong (exit code 2)."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``tasks`` command (``list``, ``retry``, ``discard``) to a ``tocsin`` parser.

    Each leaf parser gets ``func=`` taking the parsed Namespace and returning the exit code.
    """
    tasks = subparsers.add_parser("tasks", help="inspect durable tasks; retry or discard parked")
    actions = tasks.add_subparsers(dest="tasks_command", required=True, metavar="COMMAND")

    def common(parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--store",
            default=os.environ.get("TOCSIN_STORE"),
            help="store URL, e.g. sqlite:///tasks.db (default: $TOCSIN_STORE)",
        )
        parser.add_argument("--actor", metavar="KIND/ID", help="only this durable actor")

    listing = actions.add_parser("list", help="list tasks as a table (or --json)")
    common(listing)
    # No "running": a run in progress is not written to the store (the row stays
    # "pending" until the run ends), so another process could never see it.
    listing.add_argument("--state", choices=("pending", "parked"))
    listing.add_argument(
        "--json", action="store_true", help="print one JSON document (fields: docs/cli.md)"
    )
    listing.set_defaults(func=lambda ns: _run(_list, ns, read_only=True))

    for name, handler, text in (
        ("retry", _retry, "move a parked task back to pending, due now, attempts reset"),
        ("discard", _discard, "delete a parked task"),
    ):
        sub = actions.add_parser(name, help=text)
        sub.add_argument("id", help="task id")
        common(sub)
        sub.set_defaults(func=lambda ns, handler=handler: _run(handler, ns))

    trigger = actions.add_parser("trigger", help="run a task once now (its due time unchanged)")
    trigger.add_argument("id", help="task id")
    common(trigger)
    trigger.set_defaults(func=lambda ns: _run(_trigger, ns))

    backfill = actions.add_parser(
        "backfill", help="run a recurring task for each of its instants in [--from, --to)"
    )
    backfill.add_argument("id", help="task id")
    common(backfill)
    for flag, dest in (("--from", "start"), ("--to", "end")):
        backfill.add_argument(
            flag,
            dest=dest,
            required=True,
            type=_moment,
            metavar="TIME",
            help="ISO 8601 time, e.g. 2026-12-01T00:00Z (no offset: UTC)",
        )
    backfill.add_argument(
        "--dry-run", action="store_true", help="only list the instants; run nothing"
    )
    backfill.set_defaults(func=lambda ns: _run(_backfill, ns))

    history = actions.add_parser(
        "history", help="what became of a task's recent instants (oldest first)"
    )
    history.add_argument("id", help="task id")
    common(history)
    history.add_argument(
        "--json", action="store_true", help="print one JSON document (fields: docs/cli.md)"
    )
    history.set_defaults(func=lambda ns: _run(_history, ns, read_only=True))


def _moment(text: str) -> datetime:
    """An ISO 8601 time for ``--from``/``--to`` (no offset: UTC); argparse's type."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not an ISO 8601 time: {text!r} (e.g. 2026-12-01T00:00Z)"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _run(
    handler: Callable[[Store, argparse.Namespace], Coroutine[Any, Any, None]],
    ns: argparse.Namespace,
    *,
    read_only: bool = False,
) -> int:
    try:
        store = _store(ns.store, read_only=read_only)
        actor = _actor(ns.actor)
    except (_Usage, StoreError) as exc:
        print(f"tocsin tasks: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    ns.actor_key = actor

    async def main() -> None:
        await store.open()
        try:
            await handler(store, ns)
        finally:
            await store.close()

    try:
        asyncio.run(main())
    except (_Failure, StoreError) as exc:
        print(f"tocsin tasks: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def _store(url: str | None, *, read_only: bool) -> Store:
    """The store ``url`` names, not opened; a SQLite file is checked first.

    Raises:
        _Usage: no URL, or a bad one.
        StoreError: the SQLite path is not an existing tocsin store (each reason has its
            own message); nothing is created.
    """
    if not url:
        raise _Usage("no store: pass --store URL or set TOCSIN_STORE")
    try:
        store = open_store(url)
    except InvalidStoreURLError as exc:
        raise _Usage(str(exc)) from None
    if isinstance(store, MemoryStore) or (
        isinstance(store, SQLiteStore) and store.path == ":memory:"
    ):
        # A fresh, empty store of this process: "no tasks" would be an answer about
        # nothing (issue 31, item 5: a mistake must not look like an empty store).
        raise _Usage(
            f"store URL {url!r} names a store inside one process's memory; the command "
            "line can only reach a store on disk or a server (sqlite:///app.db, "
            "postgresql://...)"
        )
    if isinstance(store, SQLiteStore):
        # Checked read-only before any read-write open: a write command pointed at
        # another application's database must not create tocsin's tables in it.
        connect_read_only(store.path).close()
        if read_only:
            store = SQLiteStore(store.path, synchronous=store.synchronous, read_only=True)
    return store


def _actor(text: str | None) -> tuple[str, str] | None:
    if text is None:
        return None
    kind, sep, identity = text.partition("/")
    if not sep or not kind or not identity:
        raise _Usage(f"--actor must be KIND/ID (e.g. Order/order-42), got {text!r}")
    return kind, identity


async def _list(store: Store, ns: argparse.Namespace) -> None:
    kind, identity = ns.actor_key or (None, None)
    rows = await store.list_tasks(kind, identity, ns.state)
    if ns.json:
        print(json.dumps({"tasks": [task_json(r) for r in rows]}, indent=2))
    else:
        print(_table(rows))
        for line in waiting_note(rows, SystemClock().wall()):
            print(line, file=sys.stderr)


#: Seconds a pending task may be overdue before ``tasks list`` says why it may wait.
OVERDUE_NOTE_SECONDS = 60.0


def waiting_note(rows: list[TaskRow], now: float) -> list[str]:
    """Why pending tasks long overdue may be waiting (printed on stderr, after the table).

    A task runs only in a process that defined its class: a job, in a worker that
    imported the job's module; a durable kind, in a system that imported its
    ``DurableActor`` subclass. This process cannot see the workers, so it names the
    kinds whose tasks wait and what would run them.
    """
    late: dict[str, int] = {}
    for r in rows:
        if r.state == "pending" and r.due < now - OVERDUE_NOTE_SECONDS:
            late[r.kind] = late.get(r.kind, 0) + 1
    notes = []
    for kind, count in sorted(late.items()):
        what = f"{count} pending task{'s' if count > 1 else ''} of {kind}"
        if kind.startswith(JOB_KIND_PREFIX):
            name = kind[len(JOB_KIND_PREFIX) :]
            notes.append(
                f"note: {what} overdue by more than a minute: runs of job {name!r} start "
                "only in a worker that imported the job's module (ActorSystem(jobs=[...]) "
                "or tocsin run MODULE:main); is one running on this store?"
            )
        else:
            notes.append(
                f"note: {what} overdue by more than a minute: they run only in a system on "
                f"this store that imported the DurableActor subclass with kind {kind!r}; "
                "is one running?"
            )
    return notes


def task_json(row: TaskRow) -> dict[str, Any]:
    """One task as ``tocsin tasks list --json`` prints it (stable names: docs/cli.md)."""
    return {
        "actor": f"{row.kind}/{row.identity}",
        "kind": row.kind,
        "identity": row.identity,
        "id": row.id,
        "name": row.name,
        "state": row.state,
        "due": _iso(row.due),
        "due_epoch": row.due,
        "every": row.every,
        # Durable cron tasks (issue 15 part 2, harden branch) add `cron` and `timezone`
        # to TaskRow; until that lands, every task reads None here.
        "cron": getattr(row, "cron", None),
        "timezone": getattr(row, "timezone", None),
        "attempts": row.attempts,
        "runs_allowed": row.max_retries + 1,
        "max_retries": row.max_retries,
        "last_error": row.last_error,
        "timeout": row.timeout,
        "created_at": _iso(row.created_at),
    }


async def _one(store: Store, ns: argparse.Namespace) -> TaskRow:
    """The one task ``ns.id`` names (``--actor`` chooses among actors sharing the id)."""
    rows = await store.find_tasks(ns.id)
    if ns.actor_key is not None:
        rows = [r for r in rows if (r.kind, r.identity) == ns.actor_key]
    if not rows:
        where = f" of actor {ns.actor}" if ns.actor else ""
        raise _Failure(f"no task with id {ns.id!r}{where}")
    if len(rows) > 1:
        actors = ", ".join(f"{r.kind}/{r.identity}" for r in rows)
        raise _Failure(
            f"task id {ns.id!r} is used by {len(rows)} actors ({actors}); "
            "choose one with --actor KIND/ID"
        )
    return rows[0]


async def _parked(store: Store, ns: argparse.Namespace) -> TaskRow:
    """The one task ``ns.id`` names, which must be parked."""
    row = await _one(store, ns)
    if row.state != "parked":
        raise _Failure(
            f"task {ns.id!r} of {row.kind}/{row.identity} is {row.state}, not parked; "
            "only parked tasks can be retried or discarded"
        )
    return row


async def _retry(store: Store, ns: argparse.Namespace) -> None:
    row = await _parked(store, ns)
    now = SystemClock().wall()
    await store.apply(
        [UpsertTask(msgspec.structs.replace(row, state="pending", attempts=0, due=now))]
    )
    await store.announce()  # a system running on this store runs it now (issue 15 part 4)
    print(f"retrying {row.kind}/{row.identity} {row.id} ({row.name}) at {_iso(now)}")


async def _discard(store: Store, ns: argparse.Namespace) -> None:
    row = await _parked(store, ns)
    await store.apply([DeleteTask(row.kind, row.identity, row.id)])
    await store.announce()  # see _retry
    print(f"discarded {row.kind}/{row.identity} {row.id} ({row.name})")


async def _trigger(store: Store, ns: argparse.Namespace) -> None:
    row = await _one(store, ns)
    child = trigger_row(row, SystemClock().wall())
    await store.apply([UpsertTask(child)])
    await store.announce()  # see _retry
    print(f"triggered {row.kind}/{row.identity} {row.id} ({row.name}): run {child.id}")


async def _backfill(store: Store, ns: argparse.Namespace) -> None:
    row = await _one(store, ns)
    try:
        # The zone only matters to an `every` task's calendar, whose zone is recorded.
        instants = backfill_instants(row, ns.start.timestamp(), ns.end.timestamp(), "UTC")
    except ValueError as exc:
        raise _Failure(str(exc)) from None
    if not ns.dry_run and instants:
        rows = backfill_rows(row, instants, SystemClock().wall())
        await store.apply([UpsertTask(r) for r in rows])
        await store.announce()  # see _retry
    verb = "would run" if ns.dry_run else "backfilling"
    print(f"{verb} {len(instants)} instants of {row.kind}/{row.identity} {row.id} ({row.name})")
    for instant in instants:
        print(_iso(instant))


async def _history(store: Store, ns: argparse.Namespace) -> None:
    if ns.actor_key is not None:
        kind, identity = ns.actor_key
    else:
        row = await _one(store, ns)
        kind, identity = row.kind, row.identity
    entries = [tick_outcome(r) for r in await store.task_history(kind, identity, ns.id)]
    if ns.json:
        document = {
            "actor": f"{kind}/{identity}",
            "id": ns.id,
            "history": [
                {
                    "instant": e.instant.isoformat(timespec="milliseconds"),
                    "at": e.at.isoformat(timespec="milliseconds"),
                    "outcome": e.outcome.value,
                    "detail": e.detail,
                    "node": e.node,
                }
                for e in entries
            ],
        }
        print(json.dumps(document, indent=2))
        return
    if not entries:
        print(f"no history for {kind}/{identity} {ns.id}")
        return
    lines = [("INSTANT (UTC)", "AT (UTC)", "OUTCOME", "DETAIL", "NODE")]
    lines += [
        (
            e.instant.isoformat(timespec="seconds"),
            e.at.isoformat(timespec="seconds"),
            e.outcome.value,
            "" if e.detail is None else str(e.detail),
            e.node,
        )
        for e in entries
    ]
    widths = [max(len(line[i]) for line in lines) for i in range(5)]
    for line in lines:
        print("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).isoformat(timespec="seconds")


def _table(rows: list[TaskRow]) -> str:
    if not rows:
        return "no tasks"
    # The cron expression and zone columns of durable cron tasks (issue 15 part 2) go
    # after EVERY: a task repeats either every N seconds or on a cron expression.
    header = ("ACTOR", "ID", "NAME", "STATE", "DUE (UTC)", "EVERY", "ATTEMPTS", "LAST ERROR")
    lines = [header]
    for r in rows:
        error = (r.last_error or "").replace("\n", " ")
        if len(error) > ERROR_WIDTH:
            error = error[: ERROR_WIDTH - 1] + "…"
        every = "" if r.every is None else f"{r.every:g}s"
        if r.cron is not None:  # a durable cron task: its expression and zone
            every = f"cron {r.cron} ({r.timezone})" if r.timezone else f"cron {r.cron}"
        lines.append(
            (
                f"{r.kind}/{r.identity}",
                r.id,
                r.name,
                r.state,
                _iso(r.due),
                every,
                # Failed runs since the last success, of the runs allowed (the first run
                # plus max_retries retries): a parked task reads "3/3", never "3/2".
                f"{r.attempts}/{r.max_retries + 1}",
                error,
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )
