# SPDX-License-Identifier: Apache-2.0
"""HTML of the console page, built from a :class:`Snapshot`.

Every value from the runtime or the store goes through :func:`html.escape` (quotes
included) before it reaches the page: task names, payload-derived errors, references and
actor paths are data, never markup. The page works without JavaScript (forms post, the
server redirects back); ``console.js`` only swaps in the sections pushed over
server-sent events. The Content-Security-Policy header forbids inline script anyway.

Accessibility: one ``h1``, a skip link, ``section`` landmarks named by their ``h2``,
tables with captions and ``th scope``, buttons named with what they act on, visible
focus, colours at WCAG AA contrast or better, no information carried by colour alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from html import escape
from typing import Any, Final
from urllib.parse import quote, urlencode

from ._data import ScheduleHistory, ScheduleView, Snapshot, TaskView
from ._stored import StoredHistory, StoredView
from ._task_page import TaskHistory

__all__ = [
    "SECTIONS",
    "render_history_page",
    "render_page",
    "render_sections",
    "render_stored_page",
    "render_task_page",
]

#: Section ids, in page order; each is replaced as a whole by a live update.
SECTIONS: Final = ("summary", "stored", "schedules", "parked", "tasks", "actors", "members")

_TITLES: Final = {
    "summary": "Overview",
    "stored": "Stored schedules",
    "schedules": "Schedules",
    "parked": "Parked tasks",
    "tasks": "Durable tasks",
    "actors": "Actors",
    "members": "Cluster members",
}


def e(value: Any) -> str:
    """Escape any value for HTML text or a quoted attribute."""
    return escape(str(value), quote=True)


def _time(moment: datetime | None) -> str:
    if moment is None:
        return "—"
    # Whole seconds: a sub-second jitter between reads must not make a section "changed".
    exact = moment.isoformat(timespec="seconds")
    return f'<time datetime="{e(exact)}">{e(exact.replace("+00:00", "Z"))}</time>'


def _table(caption: str, headers: tuple[str, ...], rows: list[list[str]], empty: str) -> str:
    if not rows:
        return f'<p class="empty">{e(empty)}</p>'
    head = "".join(f'<th scope="col">{e(h)}</th>' for h in headers)
    # data-label lets a narrow screen show each row as a card of "label: value" lines.
    body = "".join(
        "<tr>"
        + "".join(f'<td data-label="{e(h)}">{c}</td>' for h, c in zip(headers, cells, strict=True))
        + "</tr>"
        for cells in rows
    )
    return (
        f'<div class="scroll" tabindex="0" role="region" aria-label="{e(caption)}">'
        f"<table><caption>{e(caption)}</caption><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table></div>"
    )


def _row(cells: Iterable[str]) -> list[str]:
    return list(cells)


def _summary(s: Snapshot, rate: float | None) -> str:
    items = [("Source", e(s.mode)), ("Read at", _time(s.taken_at))]
    if s.dead_letters is not None:
        per_second = "—" if rate is None else f"{rate:.2f}"
        items.append(("Dead letters", f"{s.dead_letters} total, {per_second} per second"))
    if s.lateness is not None:
        p50, p99, worst = s.lateness
        items.append(
            (
                "Tick lateness",
                f"p50 {p50 * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms, max {worst * 1000:.2f} ms",
            )
        )
    items.append(("Durable tasks", f"{s.tasks_total} ({len(s.parked)} parked)"))
    if s.store_error is not None:
        items.append(("Store error", f'<strong class="bad">{e(s.store_error)}</strong>'))
    body = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in items)
    return f'<dl class="summary">{body}</dl>'


def _schedules(s: Snapshot) -> str:
    if s.schedules is None:
        return (
            '<p class="empty">Schedules live in a running system; this console reads a store.</p>'
        )
    rows = [
        _row(
            (
                _history_link(v.reference),
                e(v.target),
                e(v.kind),
                f"<code>{e(v.every)}</code>"
                + (f'<br><span class="note">{e(v.description)}</span>' if v.description else ""),
                e(v.timezone or "—"),
                f'<span class="next-fire">{_time(v.next_fire_at)}</span>',
                _state(v),
                e(v.ticks),
                "—" if v.lateness is None else e(_ms(v.lateness)),
            )
        )
        for v in s.schedules
    ]
    headers = ("Reference", "Target", "Kind", "Every / cron", "Zone", "Next fire (UTC)",
               "State", "Ticks", "Last tick late by")  # fmt: skip
    table = _table("Live schedules, soonest first", headers, rows, "No live schedules.")
    return table + _more(s.schedules_total, len(s.schedules))


def _history_link(reference: str) -> str:
    href = "schedule?reference=" + quote(reference, safe="")
    return f'<a href="{e(href)}" aria-label="{e("History of " + reference)}">{e(reference)}</a>'


def _state(v: ScheduleView) -> str:
    """ "active", or "paused" with why, since when and by whom (pause_schedule's note)."""
    if not v.paused:
        return "active"
    parts = []
    if v.note:
        parts.append(f'<q class="pause-note">{e(v.note)}</q>')
    if v.paused_at is not None:
        parts.append(f"since {_time(v.paused_at)}")
    if v.paused_by:
        parts.append(f"by {e(v.paused_by)}")
    detail = f'<br><span class="note">{" ".join(parts)}</span>' if parts else ""
    return "paused" + detail


def _ms(seconds: float) -> str:
    """A lateness for people: milliseconds to one decimal below 10 s, else seconds."""
    return f"{seconds * 1000:.1f} ms" if seconds < 10 else f"{seconds:,.0f} s"


def _attempts(t: TaskView) -> str:
    """*Runs made / runs allowed*, as ``tocsin tasks list`` prints it (docs/cli.md): failed
    runs since the last success, of the first run plus ``max_retries`` retries. A task
    with ``max_retries=0`` that failed once is parked at "1/1", never "1/0"."""
    return e(f"{t.attempts}/{t.max_retries + 1}")


def _actions(t: TaskView, csrf: str) -> str:
    hidden = (
        f'<input type="hidden" name="csrf" value="{e(csrf)}">'
        f'<input type="hidden" name="kind" value="{e(t.kind)}">'
        f'<input type="hidden" name="identity" value="{e(t.identity)}">'
        f'<input type="hidden" name="id" value="{e(t.id)}">'
    )
    what = f"task {t.id} ({t.name}) of {t.kind}/{t.identity}"
    return (
        f'<form method="post" action="tasks/retry" class="inline">{hidden}'
        f'<button type="submit" class="retry" aria-label="{e("Retry " + what)}">Retry</button>'
        f"</form>"
        f'<form method="post" action="tasks/discard" class="inline">{hidden}'
        f'<button type="submit" class="discard" aria-label="{e("Discard " + what)}">'
        f"Discard</button></form>"
    )


def _parked(s: Snapshot, csrf: str) -> str:
    rows = [
        _row(
            (
                e(f"{t.kind}/{t.identity}"),
                f"<code>{e(t.id)}</code>",
                e(t.name),
                _attempts(t),
                f'<span class="error">{e(t.last_error or "")}</span>',
                _actions(t, csrf),
            )
        )
        for t in s.parked
    ]
    headers = ("Actor", "Task id", "Method", "Attempts", "Last error", "Actions")
    return _table("Parked tasks (failed every retry)", headers, rows, "No parked tasks.")


def _tasks(s: Snapshot) -> str:
    rows = [
        _row(
            (
                e(t.kind),
                e(t.identity),
                _task_link(t),
                e(t.name),
                e(t.state),
                _time(t.due),
                "—" if t.every is None else e(f"{t.every:g} s"),
                _attempts(t),
            )
        )
        for t in s.tasks
    ]
    headers = ("Kind", "Identity", "Task id", "Method", "State", "Due (UTC)", "Every", "Attempts")
    table = _table("Durable tasks by kind and identity", headers, rows, "No durable tasks.")
    return table + _more(s.tasks_total, len(s.tasks))


def _more(total: int, shown: int) -> str:
    return f'<p class="note">{total - shown} more not shown.</p>' if total > shown else ""


def _actors(s: Snapshot) -> str:
    if s.actors is None:
        return '<p class="empty">Actors live in a running system; this console reads a store.</p>'
    rows = [_row((e(a.path), e(a.state), e(a.mailbox), e(a.mailbox_high))) for a in s.actors]
    headers = ("Path", "State", "Mailbox", "Mailbox high-water")
    table = _table("Live actors, fullest mailbox first", headers, rows, "No live actors.")
    return table + _more(s.actors_total, len(s.actors))


def _members(s: Snapshot) -> str:
    if s.members_error is not None:
        return (
            '<p class="empty"><strong class="bad">Cannot read the members: '
            f"{e(s.members_error)}</strong> (tried again at the next refresh)</p>"
        )
    if s.members is None:
        return '<p class="empty">Not part of a cluster.</p>'
    rows = []
    for m in s.members:
        joined = getattr(m, "joined", None)
        seen = getattr(m, "last_seen", None)
        rows.append(
            _row(
                (
                    e(getattr(m, "name", m)),
                    e(getattr(m, "address", "")),
                    _time(joined) if isinstance(joined, datetime) else e(joined or "—"),
                    _time(seen) if isinstance(seen, datetime) else e(seen or "—"),
                )
            )
        )
    headers = ("Node", "Address", "Joined", "Last seen")
    return _table("Live members", headers, rows, "No members.")


def _stored_actions(v: StoredView, csrf: str) -> str:
    hidden = (
        f'<input type="hidden" name="csrf" value="{e(csrf)}">'
        f'<input type="hidden" name="id" value="{e(v.id)}">'
    )
    if v.paused:
        toggle = (
            f'<form method="post" action="schedules/resume" class="inline">{hidden}'
            f'<button type="submit" class="resume" aria-label="{e("Resume " + v.id)}">'
            "Resume</button></form>"
        )
    else:
        toggle = (
            f'<form method="post" action="schedules/pause" class="inline">{hidden}'
            f'<label class="note-field">Note <input type="text" name="note" maxlength="500" '
            f'aria-label="{e("Pause note for " + v.id)}"></label>'
            f'<button type="submit" class="pause" aria-label="{e("Pause " + v.id)}">'
            "Pause</button></form>"
        )
    trigger = (
        f'<form method="post" action="schedules/trigger" class="inline">{hidden}'
        f'<button type="submit" class="trigger" aria-label="{e("Trigger " + v.id + " now")}">'
        "Trigger</button></form>"
    )
    return toggle + trigger


def _stored_state(v: StoredView) -> str:
    if not v.paused:
        return "active"
    by = f" by {e(v.paused_by)}" if v.paused_by else ""
    note = f": {e(v.note)}" if v.note else ""
    return f'<strong class="paused">paused</strong>{by}{note}'


def _stored(s: Snapshot, csrf: str) -> str:
    if s.stored_error is not None:
        error = e(s.stored_error)
        return f'<p class="empty"><strong class="bad">Cannot read them: {error}</strong></p>'
    if s.stored is None:
        return '<p class="empty">No store with stored schedules here.</p>'
    rows = [
        _row(
            (
                f'<a href="stored?id={quote(v.id, safe="")}">{e(v.id)}</a>',
                e(v.describe),
                e(v.version),
                _time(v.next_fire_at),
                e(v.last_outcome or "—"),
                _stored_state(v),
                _stored_actions(v, csrf),
            )
        )
        for v in s.stored
    ]
    headers = ("Id", "Spec", "Version", "Next instant (UTC)", "Last outcome", "State", "Actions")
    table = _table("Stored schedules (system.schedules)", headers, rows, "No stored schedules.")
    return table + _more(s.stored_total, len(s.stored))


def render_stored_page(h: StoredHistory | None, schedule_id: str) -> str:
    """A stored schedule's page: its spec, pause state and ledger, newest first (one row
    per instant, whichever node decided it). ``None``: not found (served as a 404)."""
    if h is None:
        return _page(
            f"{schedule_id}: not found",
            f"Stored schedule {schedule_id}",
            f'<p class="empty">No stored schedule <code>{e(schedule_id)}</code>.</p>',
        )
    v = h.schedule
    items = [
        ("Spec", e(v.describe)),
        ("Version", e(v.version)),
        ("Next instant (UTC)", _time(v.next_fire_at)),
        ("State", _stored_state(v)),
    ]
    facts = "".join(f"<dt>{k}</dt><dd>{val}</dd>" for k, val in items)
    rows = [
        _row(
            (
                _time(t.instant),
                f'<span class="outcome outcome-{e(t.outcome)}">{e(t.outcome)}</span>'
                + (" (manual run)" if t.manual else ""),
                "—" if t.detail is None else e(t.detail),
                _time(t.started),
                e(t.node),
                e(t.version if t.version is not None else "—"),
                e(
                    " ".join(
                        x for x in (t.note or "", f"({t.paused_by})" if t.paused_by else "") if x
                    )
                    or "—"
                ),
            )
        )
        for t in reversed(h.entries)
    ]
    headers = ("Instant (UTC)", "Outcome", "Detail", "Started (UTC)", "Node", "Version", "Note")
    table = _table(f"The ledger of {v.id}, newest first", headers, rows, "Nothing recorded yet.")
    return _page(
        f"{v.id}: ledger",
        f"Stored schedule {v.id}",
        f'<dl class="summary" id="schedule-facts">{facts}</dl>'
        '<section aria-labelledby="history-title"><h2 id="history-title">Ledger</h2>'
        f'<div id="history">{table}</div></section>',
    )


def render_sections(s: Snapshot, csrf: str, dead_letter_rate: float | None) -> dict[str, str]:
    """The inner HTML of every section, by section id."""
    return {
        "summary": _summary(s, dead_letter_rate),
        "stored": _stored(s, csrf),
        "schedules": _schedules(s),
        "parked": _parked(s, csrf),
        "tasks": _tasks(s),
        "actors": _actors(s),
        "members": _members(s),
    }


def render_page(
    sections: dict[str, str], notice: str | None, has_metrics: bool, sign_out: str | None = None
) -> str:
    """The whole page around ``sections``; ``notice`` is the result of the last action;
    ``sign_out`` is the CSRF token of the sign-out form (None: no token, no sign-out)."""
    nav = "".join(f'<li><a href="#{sid}">{e(_TITLES[sid])}</a></li>' for sid in SECTIONS)
    if has_metrics:
        nav += '<li><a href="metrics">Prometheus metrics</a></li>'
    body = "".join(
        f'<section aria-labelledby="{sid}-title"><h2 id="{sid}-title">{e(_TITLES[sid])}</h2>'
        f'<div id="{sid}" class="live">{sections[sid]}</div></section>'
        for sid in SECTIONS
    )
    status = f"<p>{e(notice)}</p>" if notice else ""
    account = (
        ""
        if sign_out is None
        else '<form method="post" action="logout" class="sign-out">'
        f'<input type="hidden" name="csrf" value="{e(sign_out)}">'
        '<button type="submit" id="sign-out">Sign out</button></form>'
    )
    return (
        "<!doctype html>"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>tocsin console</title>"
        '<link rel="stylesheet" href="static/console.css">'
        '<script src="static/console.js" defer></script>'
        "</head><body>"
        '<a class="skip" href="#main">Skip to content</a>'
        "<header><h1>tocsin console</h1>"
        f'<nav aria-label="Sections"><ul>{nav}</ul></nav>'
        '<div class="controls"><p class="live-control"><button type="button" id="live-toggle" '
        'aria-pressed="false" hidden>Pause live updates</button> '
        '<span id="live-state" class="note"></span></p>'
        f"{account}</div></header>"
        f'<main id="main"><div id="notice" role="status" aria-live="polite">{status}</div>'
        f"{body}</main></body></html>"
    )


def _history_table(h: ScheduleHistory) -> str:
    rows = [
        _row(
            (
                _time(t.instant),
                _time(t.at),
                f'<span class="outcome outcome-{e(t.outcome)}">{e(t.outcome)}</span>',
                "—" if t.detail is None else e(t.detail),
                e(t.node),
            )
        )
        for t in reversed(h.entries)
    ]
    headers = ("Instant (UTC)", "At (UTC)", "Outcome", "Detail", "Node")
    return _table(
        f"What became of the recent instants of {h.schedule.reference}, newest first",
        headers,
        rows,
        "Nothing recorded yet: no instant has come due.",
    )


def render_history_page(h: ScheduleHistory | None, reference: str) -> str:
    """A schedule's own page: what it is, whether (and why) it is paused, and its
    history ring (``schedule_history``), newest first. Read when loaded (reload to
    refresh): a table that moves under the reader's eyes helps nobody here. ``None``:
    the page saying there is no such live schedule here (served as a 404)."""
    if h is None:
        return _page(
            f"{reference}: not found",
            f"Schedule {reference}",
            f'<p class="empty">No live schedule with reference <code>{e(reference)}</code> '
            "here: it was cancelled, or its last tick was delivered, or it lives on "
            "another node.</p>",
        )
    v = h.schedule
    items = [
        ("Target", e(v.target)),
        ("Kind", e(v.kind)),
        ("Every / cron", f"<code>{e(v.every)}</code>"),
        ("Next fire (UTC)", _time(v.next_fire_at)),
        ("State", _state(v)),
        ("Ticks", e(v.ticks)),
    ]
    facts = "".join(f"<dt>{k}</dt><dd>{val}</dd>" for k, val in items)
    return _page(
        f"{v.reference}: history",
        f"Schedule {v.reference}",
        f'<dl class="summary" id="schedule-facts">{facts}</dl>'
        '<section aria-labelledby="history-title"><h2 id="history-title">History</h2>'
        f'<div id="history">{_history_table(h)}</div></section>',
    )


def render_task_page(h: TaskHistory | None, kind: str, identity: str, task_id: str) -> str:
    """A durable task's own page: the task as stored (or that it is gone) and what became
    of its recent instants, newest first, read from the store when loaded. ``None``: the
    page saying the store holds no such task (served as a 404)."""
    name = f"{kind}/{identity}/{task_id}"
    if h is None:
        return _page(
            f"{name}: not found",
            f"Durable task {name}",
            f'<p class="empty">No durable task <code>{e(task_id)}</code> of '
            f"<code>{e(kind)}/{e(identity)}</code> in the store, and no history under "
            "that id.</p>",
        )
    state = "gone (its history is kept)" if h.state is None else h.state
    if h.paused:
        state += " — paused" + (f": {h.note}" if h.note else "")
    items = [
        ("Actor", e(f"{h.kind}/{h.identity}")),
        ("Task id", f"<code>{e(h.id)}</code>"),
        ("Method", e(h.name or "—")),
        ("State", e(state)),
        ("Due (UTC)", _time(h.due)),
    ]
    facts = "".join(f"<dt>{k}</dt><dd>{val}</dd>" for k, val in items)
    rows = [
        _row(
            (
                _time(t.instant),
                _time(t.at),
                f'<span class="outcome outcome-{e(t.outcome)}">{e(t.outcome)}</span>',
                "—" if t.detail is None else e(t.detail),
                e(t.node),
            )
        )
        for t in reversed(h.entries)
    ]
    headers = ("Instant (UTC)", "At (UTC)", "Outcome", "Detail", "Node")
    table = _table(
        f"What became of the recent instants of task {h.id}, newest first",
        headers,
        rows,
        "Nothing recorded yet: no instant has come due.",
    )
    return _page(
        f"{name}: history",
        f"Durable task {name}",
        f'<dl class="summary" id="task-facts">{facts}</dl>'
        '<section aria-labelledby="history-title"><h2 id="history-title">History</h2>'
        f'<div id="history">{table}</div></section>',
    )


def _task_link(t: TaskView) -> str:
    href = "task?" + urlencode({"kind": t.kind, "identity": t.identity, "id": t.id})
    return (
        f'<a href="{e(href)}" aria-label="{e("History of task " + t.id)}">'
        f"<code>{e(t.id)}</code></a>"
    )


def _page(title: str, heading: str, main: str) -> str:
    """A console page of its own (no live sections) around ``main`` (already HTML)."""
    return (
        "<!doctype html>"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)} — tocsin console</title>"
        '<link rel="stylesheet" href="static/console.css">'
        "</head><body>"
        '<a class="skip" href="#main">Skip to content</a>'
        f"<header><h1>{e(heading)}</h1>"
        '<nav aria-label="Back"><ul><li><a href="./#schedules">All schedules</a></li></ul></nav>'
        f'</header><main id="main">{main}</main></body></html>'
    )
