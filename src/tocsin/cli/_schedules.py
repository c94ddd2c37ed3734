# SPDX-License-Identifier: Apache-2.0
"""``tocsin schedules``: stored schedules from the shell (DESIGN.md "Schedules as data").

``list``, ``show ID``, ``history ID``, ``why ID [--at TIME]`` read (``--json`` on each);
``pause ID [--note TEXT]``, ``resume ID``, ``remove ID`` change the store (every node
running schedules sees it at once, or at its change watch); ``trigger ID`` and
``backfill ID START END [--dry-run]`` ask the nodes for runs (the first node to see a
request claims it; nothing runs in this process); ``plan MODULE:ATTR`` prints what
``apply MODULE:ATTR [--prune]`` would change, and ``apply`` does it (the attribute: a
list of ``Schedule``, or a function returning one).

Exit codes: 0 done (``why`` answered, whether TIME is an instant or not), 1 with one
line naming the id for an unknown one (a typo never reports success) or a failed
operation, 2 bad usage. The store URL comes from ``--store`` or ``TOCSIN_STORE``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import socket
import sys
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from typing import Any, Final

from ..clock import SystemClock
from ..errors import InvalidStoreURLError, ScheduleNotFoundError, StoreError
from ..schedules import Schedule, Schedules, StoredSchedule
from ..schedules._spi import spec_to_wire, trigger_of
from ..stores import open_store
from ..stores._spi import connect_read_only
from ..stores.sqlite import SQLiteStore
from ..triggers import TickOutcome, last_at

__all__ = ["register"]

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2


class _Usage(Exception):
    """The command line is wrong (exit code 2)."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``schedules`` command to a ``tocsin`` parser."""
    top = subparsers.add_parser("schedules", help="stored schedules: list, pause, why, apply")
    verbs = top.add_subparsers(dest="schedules_command", required=True, metavar="COMMAND")

    def verb(
        name: str, handler: Handler, text: str, *, with_id: bool = True, json: bool = False
    ) -> argparse.ArgumentParser:
        parser = verbs.add_parser(name, help=text)
        if with_id:
            parser.add_argument("id", help="schedule id")
        parser.add_argument(
            "--store",
            default=os.environ.get("TOCSIN_STORE"),
            help="store URL, e.g. sqlite:///app.db (default: $TOCSIN_STORE)",
        )
        if json:
            parser.add_argument("--json", action="store_true", help="print one JSON document")
        parser.set_defaults(func=lambda ns: _run(handler, ns))
        return parser

    verb("list", _list, "list stored schedules", with_id=False, json=True)
    verb("show", _show, "show one stored schedule", json=True)
    verb("history", _history, "its ledger: what became of each instant", json=True)
    why = verb("why", _why, "what became of the instant nearest TIME (default: now)", json=True)
    why.add_argument("--at", type=_moment, metavar="TIME", help="ISO 8601 (no offset: UTC)")
    pause = verb("pause", _pause, "pause it cluster-wide (kept across deploys)")
    pause.add_argument("--note", help="why (shown with every paused instant)")
    verb("resume", _resume, "resume it (goes on from now)")
    verb("trigger", _trigger, "ask the nodes for one run now")
    backfill = verb("backfill", _backfill, "ask the nodes to run its instants in [START, END)")
    backfill.add_argument("start", type=_moment, help="ISO 8601 (no offset: UTC)")
    backfill.add_argument("end", type=_moment, help="ISO 8601 (no offset: UTC)")
    backfill.add_argument("--dry-run", action="store_true", help="only list the instants")
    verb("remove", _remove, "remove it (its ledger stays)")
    plan = verb("plan", _plan, "what `apply` would change", with_id=False, json=True)
    plan.add_argument("target", metavar="MODULE:ATTR", help="a list of Schedule values")
    plan.add_argument("--prune", action="store_true", help="also list removals")
    apply = verb("apply", _apply, "store MODULE:ATTR's schedules", with_id=False, json=True)
    apply.add_argument("target", metavar="MODULE:ATTR", help="a list of Schedule values")
    apply.add_argument("--prune", action="store_true", help="remove schedules declared nowhere")


def _moment(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not an ISO 8601 time: {text!r} (e.g. 2026-12-01T00:00Z)"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


Handler = Callable[[Schedules, argparse.Namespace], Coroutine[Any, Any, None]]


def _run(handler: Handler, ns: argparse.Namespace) -> int:
    url = ns.store
    try:
        if not url:
            raise _Usage("no store: pass --store URL or set TOCSIN_STORE")
        try:
            store: Any = open_store(url)
        except InvalidStoreURLError as exc:
            raise _Usage(str(exc)) from None
        if isinstance(store, SQLiteStore) and store.path != ":memory:":
            connect_read_only(store.path).close()  # an existing tocsin store, or refused
    except (_Usage, StoreError) as exc:
        print(f"tocsin schedules: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    node = f"cli@{socket.gethostname()}"

    async def main() -> None:
        await store.open()
        try:
            await handler(Schedules(store, SystemClock(), node, None), ns)
        finally:
            await store.close()

    try:
        asyncio.run(main())
    except ScheduleNotFoundError as exc:
        print(f"tocsin schedules: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except _Usage as exc:
        print(f"tocsin schedules: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (StoreError, ValueError, TypeError) as exc:
        print(f"tocsin schedules: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat(timespec="milliseconds")


def _describe(spec: Schedule) -> str:
    wire = spec_to_wire(spec)
    trigger = wire["trigger"]
    if "interval" in trigger:
        what = f"every {trigger['interval']:g} s"
    elif "cron" in trigger:
        what = f"cron {trigger['cron']!r}" + (
            f" {trigger['timezone']}" if trigger["timezone"] else ""
        )
    else:
        what = "once"
    target = wire["target"]
    to = target["job"] if "job" in target else "/".join(target["durable"])
    return f"{what} -> {to}"


def stored_json(info: StoredSchedule) -> dict[str, Any]:
    """One stored schedule as ``--json`` prints it (stable names: docs/cli.md)."""
    return {
        "id": info.id,
        "version": info.version,
        "spec": spec_to_wire(info.spec),
        "describe": _describe(info.spec),
        "paused": info.paused,
        "note": info.note,
        "paused_by": info.paused_by,
        "paused_at": _iso(info.paused_at),
        "next_fire_at": _iso(info.next_fire_at),
        "last_outcome": info.last_outcome,
        "created_at": _iso(info.created_at),
        "updated_at": _iso(info.updated_at),
    }


def outcome_json(entry: TickOutcome) -> dict[str, Any]:
    """One ledger row as ``--json`` prints it."""
    return {
        "instant": _iso(entry.instant),
        "at": _iso(entry.at),
        "outcome": str(entry.outcome),
        "detail": entry.detail,
        "node": entry.node,
        "version": entry.version,
        "note": entry.note,
        "paused_by": entry.paused_by,
        "started": _iso(entry.started),
        "manual": entry.manual,
    }


def _row_text(entry: TickOutcome) -> str:
    extra = ["manual run"] if entry.manual else []
    if entry.detail is not None:
        extra.append(str(entry.detail))
    if entry.note is not None or entry.paused_by is not None:
        extra.append(f"note={entry.note!r} by={entry.paused_by}")
    if entry.started is not None:
        late = (entry.started - entry.instant).total_seconds()
        extra.append(f"started +{late:.3f}s")
    tail = f"  ({'; '.join(extra)})" if extra else ""
    return f"{_iso(entry.instant)}  {entry.outcome:<16} v{entry.version} on {entry.node}{tail}"


async def _list(schedules: Schedules, ns: argparse.Namespace) -> None:
    found = await schedules.list()
    if ns.json:
        print(json.dumps({"schedules": [stored_json(s) for s in found]}, indent=2))
        return
    if not found:
        print("no stored schedules")
        return
    for info in found:
        state = f"paused ({info.note})" if info.paused else f"next {_iso(info.next_fire_at)}"
        last = info.last_outcome or "-"
        print(f"{info.id}  v{info.version}  {_describe(info.spec)}  {state}  last {last}")


async def _show(schedules: Schedules, ns: argparse.Namespace) -> None:
    info = await schedules.get(ns.id)
    document = stored_json(info)
    if ns.json:
        print(json.dumps(document, indent=2))
        return
    for key, value in document.items():
        print(f"{key}: {value}")


async def _history(schedules: Schedules, ns: argparse.Namespace) -> None:
    entries = await schedules.history(ns.id)
    if ns.json:
        print(json.dumps({"id": ns.id, "history": [outcome_json(e) for e in entries]}, indent=2))
        return
    for entry in entries:
        print(_row_text(entry))


async def _why(schedules: Schedules, ns: argparse.Namespace) -> None:
    info = await schedules.get(ns.id)
    at = ns.at.timestamp() if ns.at is not None else SystemClock().wall()
    trigger = trigger_of(info.spec)
    before = last_at(trigger, at)
    after = trigger.after(at)
    # The instants' own rows (a manual run at one of them is a row of its own, not why).
    history = await schedules.history(ns.id)
    ledger = {round(e.instant.timestamp(), 3): e for e in history if not e.manual}
    exact = before is not None and abs(before - at) < 0.001
    nearest = before if exact else _nearest(at, before, after)

    def told(instant: float | None) -> dict[str, Any] | None:
        if instant is None:
            return None
        entry = ledger.get(round(instant, 3))
        moment = datetime.fromtimestamp(instant, UTC)
        reason = _reason(entry, instant, at, info)
        return {"instant": _iso(moment), "row": None if entry is None else outcome_json(entry),
                "why": reason}  # fmt: skip

    document = {
        "id": ns.id,
        "at": _iso(datetime.fromtimestamp(at, UTC)),
        "is_instant": exact,
        "nearest": told(nearest),
        "before": None if exact else told(before),
        "after": None if exact else told(after),
    }
    if ns.json:
        print(json.dumps(document, indent=2))
        return
    if not exact:
        print(
            f"{document['at']} is no instant of {ns.id!r}; the nearest are "
            f"{(document['before'] or {}).get('instant')} and "
            f"{(document['after'] or {}).get('instant')}"
        )
    near = document["nearest"]
    if near is not None:
        print(f"{near['instant']}: {near['why']}")


def _nearest(at: float, before: float | None, after: float | None) -> float | None:
    if before is None:
        return after
    if after is None:
        return before
    return before if at - before <= after - at else after


def _reason(entry: TickOutcome | None, instant: float, at: float, info: StoredSchedule) -> str:
    if entry is not None:
        text = _row_text(entry)
        return text.split("  ", 1)[1] if "  " in text else text
    now = SystemClock().wall()
    if instant > now:
        return "not come yet" + (" (the schedule is paused now)" if info.paused else "")
    if instant < info.created_at.timestamp():
        return "before the schedule was added (no instant of it then)"
    if trigger_of(info.spec).excluded(instant):
        return "excluded by its calendar (no row: no node decided it)"
    return (
        "no ledger row: no node running schedules decided it (none was running, or its "
        f"row aged out of the newest {info.spec.history})"
    )


async def _pause(schedules: Schedules, ns: argparse.Namespace) -> None:
    info = await schedules.pause(ns.id, note=ns.note)
    print(f"paused {info.id} (version {info.version})" + (f": {ns.note}" if ns.note else ""))


async def _resume(schedules: Schedules, ns: argparse.Namespace) -> None:
    info = await schedules.resume(ns.id)
    print(f"resumed {info.id}; next {_iso(info.next_fire_at)}")


async def _trigger(schedules: Schedules, ns: argparse.Namespace) -> None:
    instant = await schedules.trigger(ns.id)
    print(f"asked for a run of {ns.id} at {_iso(instant)} (the first node to see it runs it)")


async def _backfill(schedules: Schedules, ns: argparse.Namespace) -> None:
    found = await schedules.backfill(ns.id, ns.start, ns.end, dry_run=ns.dry_run)
    verb = "would run" if ns.dry_run else "asked for"
    print(f"{verb} {len(found)} instants of {ns.id}")
    for moment in found:
        print(_iso(moment))


async def _remove(schedules: Schedules, ns: argparse.Namespace) -> None:
    await schedules.remove(ns.id)
    print(f"removed {ns.id} (its ledger is kept)")


def _declared(target: str) -> list[Schedule]:
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise _Usage(f"expected MODULE:ATTR (e.g. billing.schedules:SCHEDULES), got {target!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` would: the project's modules
    try:
        value: Any = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise _Usage(f"cannot load {target!r}: {exc}") from None
    if callable(value):
        value = value()
    found = list(value)
    bad = [v for v in found if not isinstance(v, Schedule)]
    if bad:
        raise _Usage(f"{target!r} must be a list of tocsin.Schedule, got {bad[0]!r}")
    return found


async def _plan(schedules: Schedules, ns: argparse.Namespace) -> None:
    changes = await schedules.plan(_declared(ns.target), prune=ns.prune)
    _print_changes(changes, ns, dry=True)


async def _apply(schedules: Schedules, ns: argparse.Namespace) -> None:
    changes = await schedules.apply(_declared(ns.target), prune=ns.prune)
    _print_changes(changes, ns, dry=False)


def _print_changes(changes: list[Any], ns: argparse.Namespace, *, dry: bool) -> None:
    if ns.json:
        document = [{"id": c.id, "action": c.action, "fields": list(c.fields)} for c in changes]
        print(json.dumps({"applied": not dry, "changes": document}, indent=2))
        return
    for change in changes:
        fields = f" ({', '.join(change.fields)})" if change.fields else ""
        print(f"{change.action:<9} {change.id}{fields}")
    if dry:
        print("(plan only: nothing was changed)")
