-- SPDX-License-Identifier: Apache-2.0
-- tocsin SQLite schema, version 4 (2 added tocsin_tasks.cron and .timezone, 3 added
-- tocsin_tasks.policy, 4 the pause: paused_at, pause_note, paused_by; the store adds
-- them to an older file on open, before this script
-- runs). Run on every open inside one write transaction, so it
-- is idempotent and safe when several processes open the same file at once.
-- Times are epoch seconds (REAL); payloads and state values are codec bytes (BLOB).

CREATE TABLE IF NOT EXISTS tocsin_tasks (
    kind        TEXT    NOT NULL,
    identity    TEXT    NOT NULL,
    id          TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    payload     BLOB    NOT NULL,
    due         REAL    NOT NULL,
    every       REAL,
    attempts    INTEGER NOT NULL,
    max_retries INTEGER NOT NULL,
    created_at  REAL    NOT NULL,
    state       TEXT    NOT NULL CHECK (state IN ('pending', 'running', 'parked')),
    last_error  TEXT,
    timeout     REAL,
    cron        TEXT,
    timezone    TEXT,
    policy      BLOB,
    paused_at   REAL,
    pause_note  TEXT,
    paused_by   TEXT,
    PRIMARY KEY (kind, identity, id)
) WITHOUT ROWID;
-- WITHOUT ROWID: rows live in the primary-key B-tree itself, so a task write touches one
-- B-tree fewer (bench/durable.py: inserts and deletes 1.6-3x faster than with a rowid
-- table plus an id index).

-- "When is this actor's alarm?" (next_due) and "what is due?" (due_tasks): one index
-- probe per actor.
CREATE INDEX IF NOT EXISTS tocsin_tasks_actor_state_due
    ON tocsin_tasks (kind, identity, state, due);
-- "Which actors have work due?" (due_actors: start-up and the look-ahead poll) reads only
-- the due window through this partial covering index (#24). Without it that poll scanned
-- the index above whole: 0.44 s and +72 MB of page cache at start with 1,000,000 pending
-- tasks, growing with the total. Files created before get it on open; the older
-- (state, due) index, which covered every row, is dropped.
CREATE INDEX IF NOT EXISTS tocsin_tasks_pending_due
    ON tocsin_tasks (due, kind, identity) WHERE state = 'pending';
DROP INDEX IF EXISTS tocsin_tasks_state_due;
-- No index on id alone: only `tocsin tasks retry ID` (find_tasks) looks a task up by id
-- without its actor, and a scan there costs less than an index on every task write.

CREATE TABLE IF NOT EXISTS tocsin_state (
    kind     TEXT NOT NULL,
    identity TEXT NOT NULL,
    key      TEXT NOT NULL,
    value    BLOB NOT NULL,
    PRIMARY KEY (kind, identity, key)
) WITHOUT ROWID;

PRAGMA user_version = 4;

-- Cluster fencing (docs/cluster.md): the newest ownership epoch written for each durable
-- identity, and its owner (node/incarnation; '' in rows written before owners were
-- recorded, which the store adds on open). Every batch of a cluster owner begins with an
-- upsert of its epoch and owner here; the trigger aborts the batch (and so the store's
-- transaction) when the epoch goes back, or stays equal under another owner (two owners
-- given one epoch by a coordinator that lost its data), so a zombie writes nothing.
CREATE TABLE IF NOT EXISTS tocsin_fences (
    kind     TEXT NOT NULL,
    identity TEXT NOT NULL,
    epoch    INTEGER NOT NULL,
    owner    TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (kind, identity)
) WITHOUT ROWID;
-- The trigger of files made before owners were recorded (epoch only).
DROP TRIGGER IF EXISTS tocsin_fence;
CREATE TRIGGER IF NOT EXISTS tocsin_fence_owner BEFORE UPDATE OF epoch, owner ON tocsin_fences
WHEN NEW.epoch < OLD.epoch
    OR (NEW.epoch = OLD.epoch AND OLD.owner <> '' AND NEW.owner <> OLD.owner)
BEGIN SELECT RAISE(ABORT, 'tocsin fenced: a newer epoch or another owner holds this identity'); END;

-- Facts about the store itself, one row per key (issue 19). 'cluster': the fingerprint of
-- the coordinator of the cluster this store belongs to, written at that cluster's first
-- join (Store.swap_cluster); a node with another coordinator refuses to start.
CREATE TABLE IF NOT EXISTS tocsin_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

-- Task history (issue 23): what became of each recurring task's recent instants, kept to
-- the 64 newest per task (stores._protocols.HISTORY_LIMIT) by the trigger, which walks
-- the task's index entries (64 of them) on each insert. Added in version 3; files made
-- before get it on open (CREATE ... IF NOT EXISTS).
CREATE TABLE IF NOT EXISTS tocsin_task_history (
    seq      INTEGER PRIMARY KEY,
    kind     TEXT NOT NULL,
    identity TEXT NOT NULL,
    id       TEXT NOT NULL,
    instant  REAL NOT NULL,
    at       REAL NOT NULL,
    outcome  TEXT NOT NULL,
    detail   TEXT,
    node     TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tocsin_task_history_task
    ON tocsin_task_history (kind, identity, id, seq);
CREATE TRIGGER IF NOT EXISTS tocsin_task_history_bound AFTER INSERT ON tocsin_task_history
BEGIN
    DELETE FROM tocsin_task_history
    WHERE kind = NEW.kind AND identity = NEW.identity AND id = NEW.id
      AND seq < (SELECT seq FROM tocsin_task_history
                 WHERE kind = NEW.kind AND identity = NEW.identity AND id = NEW.id
                 ORDER BY seq DESC LIMIT 1 OFFSET 63);
END;

-- Stored schedules (system.schedules, issue 30): the spec as codec bytes, its version,
-- the pause state beside it. Added after version 3; older files get them on open
-- (CREATE ... IF NOT EXISTS). The store-wide revision nodes poll is
-- tocsin_meta['schedules'], bumped in the same transaction as every change here.
CREATE TABLE IF NOT EXISTS tocsin_schedules (
    id          TEXT    NOT NULL PRIMARY KEY,
    spec        BLOB    NOT NULL,
    version     INTEGER NOT NULL,
    created_at  REAL    NOT NULL,
    updated_at  REAL    NOT NULL,
    paused      INTEGER NOT NULL DEFAULT 0,
    note        TEXT,
    paused_by   TEXT,
    paused_at   REAL
) WITHOUT ROWID;
-- The ledger: one row per instant per schedule (a manual run's row keyed apart), kept
-- after the schedule is removed; the newest `history` per schedule are kept by the writer
-- (record_schedule_tick). A ledger made before `manual` is rebuilt on open (_sqlite_schema).
CREATE TABLE IF NOT EXISTS tocsin_schedule_history (
    id       TEXT    NOT NULL,
    instant  REAL    NOT NULL,
    at       REAL    NOT NULL,
    outcome  TEXT    NOT NULL,
    node     TEXT    NOT NULL,
    version  INTEGER NOT NULL,
    detail   TEXT,
    note     TEXT,
    paused_by TEXT,
    started  REAL,
    manual   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (id, instant, manual)
) WITHOUT ROWID;
-- Single-node claims (no coordinator): put-if-absent by key until they expire.
CREATE TABLE IF NOT EXISTS tocsin_schedule_claims (
    key      TEXT NOT NULL PRIMARY KEY,
    node     TEXT NOT NULL,
    expires  REAL NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tocsin_schedule_claims_expires ON tocsin_schedule_claims (expires);
-- Runs asked for from another process (tocsin schedules trigger/backfill): every node
-- running schedules claims each; the winner runs it and deletes the row.
CREATE TABLE IF NOT EXISTS tocsin_schedule_requests (
    id       TEXT    NOT NULL,
    instant  REAL    NOT NULL,
    manual   INTEGER NOT NULL,
    at       REAL    NOT NULL,
    PRIMARY KEY (id, instant, manual)
) WITHOUT ROWID;
