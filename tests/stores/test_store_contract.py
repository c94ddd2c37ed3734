# SPDX-License-Identifier: Apache-2.0
"""The Store contract, run unchanged on memory, SQLite and PostgreSQL.

Fixtures are sync (the async hook in conftest runs tests with ``asyncio.run``): they hand
out a :class:`Backend` that makes store instances; each test opens and closes its own.
"""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import msgspec
import pytest

from tocsin.errors import FencedError, StoreError
from tocsin.stores import (
    DeleteState,
    DeleteTask,
    DueActor,
    DueWork,
    Fence,
    MemoryStore,
    Op,
    PauseTask,
    PutState,
    Store,
    TaskRow,
    UpsertTask,
)
from tocsin.stores.postgres import PostgresStore
from tocsin.stores.sqlite import SQLiteStore


@dataclass(frozen=True)
class Backend:
    name: str
    #: A new store instance on the same underlying data (for reopen tests).
    make: Callable[[], Store]
    #: Make the database itself fail any write of a task with this id (None: no database).
    inject_failure: Callable[[str], Awaitable[None]] | None
    persistent: bool


def _sqlite_backend(tmp_path: Path) -> Backend:
    from tocsin.stores.sqlite import SQLiteStore

    path = tmp_path / "tasks.db"

    async def inject(task_id: str) -> None:
        with sqlite3.connect(path) as conn:
            conn.execute(
                "CREATE TRIGGER boom BEFORE INSERT ON tocsin_tasks "
                f"WHEN NEW.id = '{task_id}' BEGIN SELECT RAISE(ABORT, 'injected'); END"
            )
        conn.close()

    return Backend("sqlite", lambda: SQLiteStore(path), inject, persistent=True)


def _postgres_backend(dsn: str) -> Backend:
    from tocsin.stores.postgres import PostgresStore

    schema = f"t_{uuid.uuid4().hex[:16]}"  # a fresh schema: tests stay independent

    async def inject(task_id: str) -> None:
        import asyncpg

        conn = await asyncpg.connect(dsn, server_settings={"search_path": schema})
        try:
            await conn.execute(
                "CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                f"IF NEW.id = '{task_id}' THEN RAISE EXCEPTION 'injected'; END IF; "
                "RETURN NEW; END $$; "
                "CREATE TRIGGER boom BEFORE INSERT ON tocsin_tasks "
                "FOR EACH ROW EXECUTE FUNCTION boom();"
            )
        finally:
            await conn.close()

    return Backend("postgres", lambda: PostgresStore(dsn, schema=schema), inject, True)


@pytest.fixture(
    params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.integration)]
)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "memory":
        store = MemoryStore()
        return Backend("memory", lambda: store, None, persistent=False)
    if request.param == "sqlite":
        return _sqlite_backend(tmp_path)
    return _postgres_backend(request.getfixturevalue("postgres_dsn"))


def task(
    id: str = "t1",
    *,
    kind: str = "Order",
    identity: str = "o-1",
    due: float = 100.0,
    state: str = "pending",
    payload: bytes = b"\x01",
    **fields: object,
) -> TaskRow:
    base = TaskRow(
        kind=kind,
        identity=identity,
        id=id,
        name="ship",
        payload=payload,
        due=due,
        every=None,
        attempts=0,
        max_retries=5,
        created_at=1.5,
        state=state,  # type: ignore[arg-type]
    )
    return msgspec.structs.replace(base, **fields)


async def opened(backend: Backend) -> Store:
    store = backend.make()
    await store.open()
    return store


async def test_store_satisfies_the_protocol(backend: Backend) -> None:
    store = backend.make()
    assert isinstance(store, Store)
    assert isinstance(store.url, str)


async def test_task_and_state_round_trip_every_field(backend: Backend) -> None:
    store = await opened(backend)
    try:
        row = task(
            every=30.0,
            attempts=2,
            state="parked",
            last_error="ValueError: boom",
            timeout=9.5,
            payload=b"\x00\xff" * 3,
        )
        await store.apply([UpsertTask(row), PutState("Order", "o-1", "k", b"v")])
        assert await store.get_task("Order", "o-1", "t1") == row
        assert await store.get_state("Order", "o-1", "k") == b"v"
        assert await store.get_task("Order", "o-1", "nope") is None
        assert await store.get_task("Order", "o-2", "t1") is None
        assert await store.get_state("Order", "o-1", "nope") is None
        cron = task("c1", cron="0 30 2 * * ?", timezone="America/New_York")
        await store.apply([UpsertTask(cron)])
        assert await store.get_task("Order", "o-1", "c1") == cron
    finally:
        await store.close()


async def test_integer_times_read_back_as_floats(backend: Backend) -> None:
    store = await opened(backend)
    try:
        await store.apply([UpsertTask(task(due=5, created_at=7, every=3, timeout=2))])
        got = await store.get_task("Order", "o-1", "t1")
        assert got is not None
        assert (got.due, got.created_at, got.every, got.timeout) == (5.0, 7.0, 3.0, 2.0)
        assert all(type(v) is float for v in (got.due, got.created_at, got.every, got.timeout))
    finally:
        await store.close()


async def test_upsert_replaces_the_row_with_the_same_key(backend: Backend) -> None:
    store = await opened(backend)
    try:
        await store.apply([UpsertTask(task(due=1.0)), PutState("Order", "o-1", "k", b"1")])
        replaced = task(due=2.0, name="other", attempts=3, every=4.0, payload=b"new")
        await store.apply([UpsertTask(replaced), PutState("Order", "o-1", "k", b"2")])
        assert await store.list_tasks() == [replaced]
        assert await store.get_state("Order", "o-1", "k") == b"2"
    finally:
        await store.close()


async def test_pause_is_written_by_pause_task_alone_and_kept_by_upserts(
    backend: Backend,
) -> None:
    store = await opened(backend)
    try:
        await store.apply([UpsertTask(task(due=1.0))])
        await store.apply([PauseTask("Order", "o-1", "t1", 50.0, "db migration", "node-a")])
        paused = task(due=1.0, paused_at=50.0, pause_note="db migration", paused_by="node-a")
        assert await store.get_task("Order", "o-1", "t1") == paused
        # A completion (or a re-registration) that read the row before the pause keeps it.
        await store.apply([UpsertTask(task(due=2.0, attempts=1))])
        got = await store.get_task("Order", "o-1", "t1")
        assert got is not None
        assert got == msgspec.structs.replace(paused, due=2.0, attempts=1)
        assert type(got.paused_at) is float
        await store.apply([PauseTask("Order", "o-1", "t1", None)])  # resume: all cleared
        assert await store.get_task("Order", "o-1", "t1") == task(due=2.0, attempts=1)
        await store.apply([PauseTask("Order", "o-1", "absent", 1.0)])  # no row: nothing
        assert [row.id for row in await store.list_tasks()] == ["t1"]
        await store.apply([DeleteTask("Order", "o-1", "t1"), UpsertTask(task(due=3.0))])
        assert (await store.get_task("Order", "o-1", "t1")) == task(due=3.0)  # a new row
        with pytest.raises(StoreError, match="note"):
            await store.apply([PauseTask("Order", "o-1", "t1", 1.0, "bad\x00note")])
    finally:
        await store.close()


async def test_deletes_remove_and_absent_deletes_are_no_ops(backend: Backend) -> None:
    store = await opened(backend)
    try:
        await store.apply([UpsertTask(task()), PutState("Order", "o-1", "k", b"v")])
        await store.apply(
            [
                DeleteTask("Order", "o-1", "t1"),
                DeleteState("Order", "o-1", "k"),
                DeleteTask("Order", "o-1", "absent"),
                DeleteState("Nope", "x", "absent"),
            ]
        )
        assert await store.list_tasks() == []
        assert await store.list_state("Order", "o-1") == []
    finally:
        await store.close()


async def test_ops_in_one_batch_apply_in_order(backend: Backend) -> None:
    store = await opened(backend)
    try:
        await store.apply(
            [
                PutState("A", "1", "gone", b"x"),
                DeleteState("A", "1", "gone"),
                DeleteState("A", "1", "back"),
                PutState("A", "1", "back", b"y"),
                UpsertTask(task("t", due=1.0)),
                DeleteTask("Order", "o-1", "t"),
                UpsertTask(task("u", due=1.0)),
                UpsertTask(task("u", due=2.0)),
            ]
        )
        assert await store.list_state("A", "1") == [("back", b"y")]
        assert [(r.id, r.due) for r in await store.list_tasks()] == [("u", 2.0)]
    finally:
        await store.close()


async def test_empty_batch_is_a_no_op(backend: Backend) -> None:
    store = await opened(backend)
    try:
        await store.apply([])
        assert await store.list_tasks() == []
    finally:
        await store.close()


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (UpsertTask(task("bad", state="bogus")), r"ops\[2\]\.row\.state"),
        (UpsertTask(task("bad", due=float("nan"))), r"ops\[2\]\.row\.due"),
        (UpsertTask(task("bad", every=0.0)), r"ops\[2\]\.row\.every"),
        (UpsertTask(task("bad", attempts=-1)), r"ops\[2\]\.row\.attempts"),
        (UpsertTask(task("bad", max_retries=True)), r"ops\[2\]\.row\.max_retries"),
        (UpsertTask(task("b\x00d")), r"ops\[2\]\.row\.id.*NUL"),
        (PutState("A", "1", "k", "not bytes"), r"ops\[2\]\.value"),  # type: ignore[arg-type]
        (DeleteState("A", 1, "k"), r"ops\[2\]\.identity"),  # type: ignore[arg-type]
        ("not an op", r"ops\[2\] must be"),
    ],
)
async def test_a_batch_with_an_invalid_op_raises_and_writes_nothing(
    backend: Backend, bad: object, message: str
) -> None:
    store = await opened(backend)
    try:
        await store.apply([PutState("A", "1", "old", b"kept")])
        ops = [UpsertTask(task("ok")), PutState("A", "1", "new", b"x"), bad]
        with pytest.raises(StoreError, match=message):
            await store.apply(ops)  # type: ignore[arg-type]
        assert await store.list_tasks() == []
        assert await store.list_state("A", "1") == [("old", b"kept")]
    finally:
        await store.close()


async def test_a_database_failure_midway_rolls_back_the_whole_batch(backend: Backend) -> None:
    if backend.inject_failure is None:
        pytest.skip("no database to fail: the memory store validates, then cannot fail")
    store = await opened(backend)
    try:
        await backend.inject_failure("boom")
        ops: list[Op] = [
            PutState("A", "1", "k", b"x"),
            UpsertTask(task("first")),
            UpsertTask(task("boom")),
            UpsertTask(task("after")),
        ]
        with pytest.raises(StoreError, match="injected"):
            await store.apply(ops)
        assert await store.list_tasks() == []
        assert await store.get_state("A", "1", "k") is None
        await store.apply([UpsertTask(task("fine"))])  # the store is still usable
        assert [r.id for r in await store.list_tasks()] == ["fine"]
    finally:
        await store.close()


async def test_list_tasks_filters_and_orders_by_due_then_id(backend: Backend) -> None:
    store = await opened(backend)
    rows = [
        task("b", due=5.0),
        task("a", due=5.0),
        task("c", due=1.0, state="parked"),
        task("d", due=3.0, identity="o-2", state="running"),
        task("e", due=2.0, kind="Invoice", identity="o-1"),
    ]
    try:
        await store.apply([UpsertTask(r) for r in rows])
        ids = [r.id for r in await store.list_tasks()]
        assert ids == ["c", "e", "d", "a", "b"]
        assert [r.id for r in await store.list_tasks(kind="Order")] == ["c", "d", "a", "b"]
        assert [r.id for r in await store.list_tasks("Order", "o-1")] == ["c", "a", "b"]
        assert [r.id for r in await store.list_tasks(identity="o-1")] == ["c", "e", "a", "b"]
        assert [r.id for r in await store.list_tasks(state="parked")] == ["c"]
        assert [r.id for r in await store.list_tasks(state="running")] == ["d"]
        assert [r.id for r in await store.list_tasks("Order", "o-1", "pending")] == ["a", "b"]
        assert await store.list_tasks(kind="Nope") == []
    finally:
        await store.close()


async def test_next_due_is_the_earliest_pending_task_and_ignores_parked(
    backend: Backend,
) -> None:
    store = await opened(backend)
    try:
        assert await store.next_due("Order", "o-1") is None
        await store.apply(
            [
                UpsertTask(task("p", due=1.0, state="parked")),
                UpsertTask(task("r", due=2.0, state="running")),
                UpsertTask(task("x", due=9.0)),
                UpsertTask(task("y", due=4.0)),
                UpsertTask(task("other", due=0.5, identity="o-2")),
            ]
        )
        assert await store.next_due("Order", "o-1") == 4.0
        assert await store.next_due("Order", "o-2") == 0.5
        await store.apply([DeleteTask("Order", "o-1", "y"), DeleteTask("Order", "o-1", "x")])
        assert await store.next_due("Order", "o-1") is None
    finally:
        await store.close()


async def test_fence_epoch_is_the_highest_epoch_fenced_per_identity(backend: Backend) -> None:
    # Cluster mode claims above it after a coordinator lost its directory (issue 19).
    store = await opened(backend)
    try:
        assert await store.fence_epoch("Order", "o-1") == 0
        await store.apply([Fence("Order", "o-1", 4), PutState("Order", "o-1", "k", b"v")])
        await store.apply([Fence("Order", "o-2", 2)])
        assert await store.fence_epoch("Order", "o-1") == 4
        assert await store.fence_epoch("Order", "o-2") == 2
        with pytest.raises(FencedError):
            await store.apply([Fence("Order", "o-1", 3)])
        assert await store.fence_epoch("Order", "o-1") == 4  # a refused fence changes nothing
        assert await store.fence_epoch("Other", "o-1") == 0
    finally:
        await store.close()


async def test_the_fence_refuses_an_equal_epoch_from_another_owner(backend: Backend) -> None:
    # Issue 20, item 4: a coordinator that lost its data gave one epoch to two nodes; the
    # second owner to write it must be refused, whatever the directory says.
    store = await opened(backend)
    try:
        await store.apply([Fence("Order", "o-1", 5, "a/1"), PutState("Order", "o-1", "k", b"a")])
        await store.apply([Fence("Order", "o-1", 5, "a/1"), PutState("Order", "o-1", "k", b"a2")])
        with pytest.raises(FencedError):  # the zombie: equal epoch, another owner
            await store.apply(
                [Fence("Order", "o-1", 5, "b/1"), PutState("Order", "o-1", "k", b"b")]
            )
        with pytest.raises(FencedError):  # the same node's earlier life (incarnation)
            await store.apply(
                [Fence("Order", "o-1", 5, "a/0"), PutState("Order", "o-1", "k", b"c")]
            )
        assert await store.get_state("Order", "o-1", "k") == b"a2"  # nothing of them landed
        # A higher epoch takes it over, whoever holds it; then the old owner is refused.
        await store.apply([Fence("Order", "o-1", 6, "b/1"), PutState("Order", "o-1", "k", b"b")])
        with pytest.raises(FencedError):
            await store.apply([Fence("Order", "o-1", 6, "a/1")])
        assert await store.fence_epoch("Order", "o-1") == 6
        assert await store.get_state("Order", "o-1", "k") == b"b"
    finally:
        await store.close()


async def test_due_tasks_are_one_actors_pending_tasks_due_by_then_in_due_order_within_limit(
    backend: Backend,
) -> None:
    store = await opened(backend)
    try:
        await store.apply(
            [
                UpsertTask(task("parked", due=1.0, state="parked")),
                UpsertTask(task("late", due=9.0)),
                UpsertTask(task("b", due=3.0)),
                UpsertTask(task("a", due=3.0)),
                UpsertTask(task("first", due=2.0)),
                UpsertTask(task("other-actor", due=0.5, identity="o-2")),
            ]
        )
        due = await store.due_tasks("Order", "o-1", 3.0, 10)
        assert [row.id for row in due] == ["first", "a", "b"]
        assert [row.id for row in await store.due_tasks("Order", "o-1", 3.0, 2)] == ["first", "a"]
        assert await store.due_tasks("Order", "o-1", 1.5, 10) == []
        assert await store.due_tasks("Order", "o-1", 3.0, 0) == []
    finally:
        await store.close()


async def test_due_work_is_due_tasks_and_the_earliest_pending_due_after_the_window(
    backend: Backend,
) -> None:
    # Issue 32: one read per drain; it arms the alarm from `later` without a next_due
    # after its commit. Many at once (PostgreSQL combines them into one query) answer
    # each exactly what one alone answers.
    store = await opened(backend)
    try:
        await store.apply(
            [
                UpsertTask(task("parked", due=1.0, state="parked")),
                UpsertTask(task("parked-later", due=5.0, state="parked")),
                UpsertTask(task("late", due=9.0)),
                UpsertTask(task("later", due=12.0)),
                UpsertTask(task("b", due=3.0)),
                UpsertTask(task("a", due=3.0)),
                UpsertTask(task("first", due=2.0)),
                UpsertTask(task("other", due=4.0, identity="o-2")),
            ]
        )
        assert isinstance(store, MemoryStore | SQLiteStore | PostgresStore)
        work = await store.due_work("Order", "o-1", 3.0, 10)
        assert [row.id for row in work.rows] == ["first", "a", "b"]
        assert work.rows == await store.due_tasks("Order", "o-1", 3.0, 10)
        assert work.later == 9.0
        limited = await store.due_work("Order", "o-1", 3.0, 2)
        assert ([r.id for r in limited.rows], limited.later) == (["first", "a"], 9.0)
        assert await store.due_work("Order", "o-1", 1.5, 10) == DueWork([], 2.0)
        assert await store.due_work("Order", "o-1", 12.0, 0) == DueWork([], None)
        assert await store.due_work("Order", "none", 99.0, 10) == DueWork([], None)
        together = await asyncio.gather(
            store.due_work("Order", "o-1", 3.0, 10),
            store.due_tasks("Order", "o-1", 3.0, 10),
            store.due_work("Order", "o-2", 3.0, 10),
            store.due_work("Order", "o-2", 4.0, 10),
            store.due_work("Order", "o-1", 1.5, 10),
        )
        assert list(together) == [
            work,
            work.rows,
            DueWork([], 4.0),
            DueWork([task("other", due=4.0, identity="o-2")], None),
            DueWork([], 2.0),
        ]
    finally:
        await store.close()


async def test_many_due_work_reads_at_once_each_answer_what_one_alone_answers(
    backend: Backend,
) -> None:
    # Issue 32: the drains of identities coming due together read at once; the stores
    # combine them (more than one combined read's worth here, some calls with a limit
    # too large to combine), and each call still gets its own answer.
    store = await opened(backend)
    try:
        ops = []
        for i in range(300):
            for k in range(i % 4):  # 0 to 3 due tasks, one pending later for some
                ops.append(UpsertTask(task(f"t{k}", due=1.0 + k, identity=f"i{i}")))
            if i % 3 == 0:
                ops.append(UpsertTask(task("later", due=50.0 + i, identity=f"i{i}")))
        await store.apply(ops)
        assert isinstance(store, MemoryStore | SQLiteStore | PostgresStore)
        calls = [
            (f"i{i}", 2.5 if i % 5 else 99.0, 2_000 if i % 7 == 0 else 1 + i % 3)
            for i in range(300)
        ]
        # What one alone answers, read another way: due_tasks and the listing.
        listed = await store.list_tasks("Order")
        alone = [
            DueWork(
                await store.due_tasks("Order", ident, before, lim),
                min(
                    (r.due for r in listed if r.identity == ident and r.due > before),
                    default=None,
                ),
            )
            for ident, before, lim in calls
        ]
        together = await asyncio.gather(
            *(store.due_work("Order", ident, before, lim) for ident, before, lim in calls)
        )
        assert list(together) == alone
        assert sum(len(w.rows) for w in alone) > 200  # the case is not empty
    finally:
        await store.close()


async def test_due_actors_lists_each_actor_once_earliest_first_within_limit(
    backend: Backend,
) -> None:
    store = await opened(backend)
    try:
        await store.apply(
            [
                UpsertTask(task("a1", identity="a", due=30.0)),
                UpsertTask(task("a2", identity="a", due=10.0)),
                UpsertTask(task("b1", identity="b", due=20.0)),
                UpsertTask(task("c1", identity="c", due=20.0)),
                UpsertTask(task("d1", identity="d", due=5.0, state="parked")),
                UpsertTask(task("e1", identity="e", due=50.0)),
                UpsertTask(task("f1", kind="Alpha", identity="z", due=20.0)),
            ]
        )
        assert await store.due_actors(before=40.0, limit=10) == [
            DueActor("Order", "a", 10.0),
            DueActor("Alpha", "z", 20.0),
            DueActor("Order", "b", 20.0),
            DueActor("Order", "c", 20.0),
        ]
        assert await store.due_actors(before=20.0, limit=2) == [
            DueActor("Order", "a", 10.0),
            DueActor("Alpha", "z", 20.0),
        ]
        assert await store.due_actors(before=9.99, limit=10) == []
        assert await store.due_actors(before=100.0, limit=0) == []
    finally:
        await store.close()


async def test_list_state_returns_keys_with_the_prefix_sorted(backend: Backend) -> None:
    store = await opened(backend)
    keys = ["cart:2", "cart:10", "cart:1", "cartx", "car", "cart%_", "Cart:1", "cart:é", "cart:z"]
    try:
        await store.apply([PutState("A", "1", k, k.encode()) for k in keys])
        await store.apply([PutState("A", "2", "cart:other", b""), PutState("B", "1", "cart:", b"")])
        assert [k for k, _ in await store.list_state("A", "1", "cart:")] == [
            "cart:1",
            "cart:10",
            "cart:2",
            "cart:z",
            "cart:é",
        ]
        assert [k for k, _ in await store.list_state("A", "1", "cart%")] == ["cart%_"]
        assert await store.list_state("A", "1", "cart:1") == [
            ("cart:1", b"cart:1"),
            ("cart:10", b"cart:10"),
        ]
        assert [k for k, _ in await store.list_state("A", "1")] == sorted(keys)
        assert await store.list_state("A", "1", "zzz") == []
    finally:
        await store.close()


async def test_find_tasks_finds_an_id_across_actors(backend: Backend) -> None:
    store = await opened(backend)
    try:
        await store.apply(
            [
                UpsertTask(task("shared", identity="o-2", due=2.0)),
                UpsertTask(task("shared", kind="Invoice", due=1.0, state="parked")),
                UpsertTask(task("other")),
            ]
        )
        found = await store.find_tasks("shared")
        assert [(r.kind, r.identity) for r in found] == [("Invoice", "o-1"), ("Order", "o-2")]
        assert await store.find_tasks("missing") == []
    finally:
        await store.close()


async def test_big_payloads_and_values_round_trip(backend: Backend) -> None:
    store = await opened(backend)
    big = bytes(range(256)) * 20_000  # ~5 MB, every byte value
    try:
        await store.apply([UpsertTask(task(payload=big)), PutState("A", "1", "big", big)])
        got = await store.get_task("Order", "o-1", "t1")
        assert got is not None
        assert got.payload == big
        assert await store.get_state("A", "1", "big") == big
    finally:
        await store.close()


async def test_unicode_kinds_identities_ids_and_keys(backend: Backend) -> None:
    store = await opened(backend)
    kind, identity, key = "Kätzchen", "订单/42 🐈", "ключ:𝄞"
    try:
        row = task("tâche-✓", kind=kind, identity=identity, last_error="ошибка ☃")
        await store.apply([UpsertTask(row), PutState(kind, identity, key, b"v")])
        assert await store.get_task(kind, identity, "tâche-✓") == row
        assert await store.list_state(kind, identity, "ключ") == [(key, b"v")]
        assert await store.find_tasks("tâche-✓") == [row]
        assert await store.due_actors(1e9, 5) == [DueActor(kind, identity, 100.0)]
    finally:
        await store.close()


async def test_data_survives_close_and_reopen(backend: Backend) -> None:
    if not backend.persistent:
        pytest.skip("the memory store is not persistent")
    store = await opened(backend)
    await store.apply([UpsertTask(task()), PutState("A", "1", "k", b"v")])
    await store.close()
    again = await opened(backend)
    try:
        assert await again.get_task("Order", "o-1", "t1") == task()
        assert await again.get_state("A", "1", "k") == b"v"
    finally:
        await again.close()


async def test_concurrent_applies_from_many_tasks_all_land_and_fail_alone(
    backend: Backend,
) -> None:
    store = await opened(backend)
    try:
        if backend.inject_failure is not None:
            await backend.inject_failure("doomed")
            doomed = UpsertTask(task("doomed"))
        else:
            doomed = UpsertTask(task("doomed", state="bogus"))

        async def one(i: int) -> None:
            await store.apply(
                [UpsertTask(task(f"t{i:03}", due=float(i))), PutState("A", "1", f"k{i:03}", b"")]
            )

        results = await asyncio.gather(
            *(one(i) for i in range(100)),
            store.apply([PutState("A", "1", "doomed", b""), doomed]),
            *(one(i) for i in range(100, 200)),
            return_exceptions=True,
        )
        errors = [r for r in results if isinstance(r, BaseException)]
        assert len(errors) == 1
        assert isinstance(errors[0], StoreError)
        assert [r.id for r in await store.list_tasks()] == [f"t{i:03}" for i in range(200)]
        keys = [k for k, _ in await store.list_state("A", "1")]
        assert keys == [f"k{i:03}" for i in range(200)]
    finally:
        await store.close()


async def test_open_and_close_are_idempotent_and_closed_stores_refuse_work(
    backend: Backend,
) -> None:
    store = backend.make()
    await store.open()
    await store.open()
    await store.apply([UpsertTask(task())])
    await store.close()
    await store.close()
    if backend.persistent:
        with pytest.raises(StoreError, match="not open"):
            await store.get_task("Order", "o-1", "t1")
        with pytest.raises(StoreError, match="not open"):
            await store.apply([UpsertTask(task())])
    await store.open()  # a closed store can be opened again
    try:
        assert await store.get_task("Order", "o-1", "t1") == task()
    finally:
        await store.close()
