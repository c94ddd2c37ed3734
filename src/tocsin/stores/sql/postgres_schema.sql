-- SPDX-License-Identifier: Apache-2.0
-- tocsin PostgreSQL schema, version 4 (2 added tocsin_tasks.cron and .timezone, and
-- tocsin_owner; 3 added tocsin_tasks.policy, the schedule policies of issue 22; 4 the
-- pause of a task: paused_at, pause_note, paused_by). Run on every open inside a transaction holding an
-- advisory lock (CREATE ... IF NOT EXISTS alone races when two nodes open at once).
-- Times are epoch seconds (double precision), like the Python API: no time zone
-- conversions between the store and the scheduler. Text columns use the "C" collation so
-- ORDER BY matches Python's code point order whatever the database's locale.

CREATE TABLE IF NOT EXISTS tocsin_tasks (
    kind        text COLLATE "C" NOT NULL,
    identity    text COLLATE "C" NOT NULL,
    id          text COLLATE "C" NOT NULL,
    name        text             NOT NULL,
    payload     bytea            NOT NULL,
    due         double precision NOT NULL,
    every       double precision,
    attempts    integer          NOT NULL,
    max_retries integer          NOT NULL,
    created_at  double precision NOT NULL,
    state       text             NOT NULL CHECK (state IN ('pending', 'running', 'parked')),
    last_error  text,
    timeout     double precision,
    cron        text,
    timezone    text,
    policy      bytea,
    paused_at   double precision,
    pause_note  text,
    paused_by   text,
    PRIMARY KEY (kind, identity, id)
);
-- Version 1 tables: add what version 2 added.
ALTER TABLE tocsin_tasks ADD COLUMN IF NOT EXISTS cron text;
ALTER TABLE tocsin_tasks ADD COLUMN IF NOT EXISTS timezone text;
-- Version 2 tables: add what version 3 added (NULL: the default policies, today's behaviour).
ALTER TABLE tocsin_tasks ADD COLUMN IF NOT EXISTS policy bytea;
-- Version 3 tables: add what version 4 added (NULL: not paused).
ALTER TABLE tocsin_tasks ADD COLUMN IF NOT EXISTS paused_at double precision;
ALTER TABLE tocsin_tasks ADD COLUMN IF NOT EXISTS pause_note text;
ALTER TABLE tocsin_tasks ADD COLUMN IF NOT EXISTS paused_by text;

-- "Which actors have work due?" (due_actors): only pending rows matter, so a partial index.
CREATE INDEX IF NOT EXISTS tocsin_tasks_pending_due
    ON tocsin_tasks (due) WHERE state = 'pending';
-- "When is this actor's alarm?" (next_due) and per-actor listings.
CREATE INDEX IF NOT EXISTS tocsin_tasks_actor_state_due
    ON tocsin_tasks (kind, identity, state, due);
-- `tocsin tasks retry ID` looks a task up by id alone (find_tasks).
CREATE INDEX IF NOT EXISTS tocsin_tasks_id ON tocsin_tasks (id);

CREATE TABLE IF NOT EXISTS tocsin_state (
    kind     text COLLATE "C" NOT NULL,
    identity text COLLATE "C" NOT NULL,
    key      text COLLATE "C" NOT NULL,
    value    bytea NOT NULL,
    PRIMARY KEY (kind, identity, key)
);

-- Who owns this store outside cluster mode (one row, written by the session that holds
-- the ownership advisory lock; read only to name the holder in an error message).
CREATE TABLE IF NOT EXISTS tocsin_owner (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    host      text,
    pid       integer
);

-- Cluster fencing (docs/cluster.md): the newest ownership epoch written for each durable
-- identity, and its owner (node/incarnation; '' in rows written before owners were
-- recorded). Every batch of a cluster owner begins with an upsert of its epoch and owner
-- here; the trigger aborts the transaction (SQLSTATE T0C51) when the epoch goes back, or
-- stays equal under another owner (two owners given one epoch by a coordinator that lost
-- its data), so a zombie owner writes nothing.
CREATE TABLE IF NOT EXISTS tocsin_fences (
    kind     text COLLATE "C" NOT NULL,
    identity text COLLATE "C" NOT NULL,
    epoch    bigint NOT NULL,
    owner    text NOT NULL DEFAULT '',
    PRIMARY KEY (kind, identity)
);
ALTER TABLE tocsin_fences ADD COLUMN IF NOT EXISTS owner text NOT NULL DEFAULT '';
CREATE OR REPLACE FUNCTION tocsin_fence() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.epoch < OLD.epoch
        OR (NEW.epoch = OLD.epoch AND OLD.owner <> '' AND NEW.owner <> OLD.owner) THEN
        RAISE EXCEPTION 'tocsin fenced: epoch % of % against % of %',
            NEW.epoch, quote_literal(NEW.owner), OLD.epoch, quote_literal(OLD.owner)
            USING ERRCODE = 'T0C51';
    END IF;
    RETURN NEW;
END $$;
DROP TRIGGER IF EXISTS tocsin_fence ON tocsin_fences;
CREATE TRIGGER tocsin_fence BEFORE UPDATE OF epoch, owner ON tocsin_fences
    FOR EACH ROW EXECUTE FUNCTION tocsin_fence();

-- Facts about the store itself, one row per key (issue 19). 'cluster': the fingerprint of
-- the coordinator of the cluster this store belongs to, written at that cluster's first
-- join (Store.swap_cluster); a node with another coordinator refuses to start.
CREATE TABLE IF NOT EXISTS tocsin_meta (
    key   text COLLATE "C" PRIMARY KEY,
    value text NOT NULL
);

-- Task history (issue 23): what became of each recurring task's recent instants, kept to
-- the 64 newest per task (stores._protocols.HISTORY_LIMIT) by the trigger. Added in
-- version 3 (CREATE ... IF NOT EXISTS: older schemas get it on open).
CREATE TABLE IF NOT EXISTS tocsin_task_history (
    seq      bigserial PRIMARY KEY,
    kind     text COLLATE "C" NOT NULL,
    identity text COLLATE "C" NOT NULL,
    id       text COLLATE "C" NOT NULL,
    instant  double precision NOT NULL,
    at       double precision NOT NULL,
    outcome  text NOT NULL,
    detail   text,
    node     text NOT NULL
);
CREATE INDEX IF NOT EXISTS tocsin_task_history_task
    ON tocsin_task_history (kind, identity, id, seq);
CREATE OR REPLACE FUNCTION tocsin_task_history_bound() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM tocsin_task_history
    WHERE kind = NEW.kind AND identity = NEW.identity AND id = NEW.id
      AND seq < (SELECT seq FROM tocsin_task_history
                 WHERE kind = NEW.kind AND identity = NEW.identity AND id = NEW.id
                 ORDER BY seq DESC OFFSET 63 LIMIT 1);
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS tocsin_task_history_bound ON tocsin_task_history;
CREATE TRIGGER tocsin_task_history_bound AFTER INSERT ON tocsin_task_history
    FOR EACH ROW EXECUTE FUNCTION tocsin_task_history_bound();

-- Stored schedules (system.schedules, issue 30): the spec as codec bytes, its version,
-- the pause state beside it. Added after version 3 (CREATE ... IF NOT EXISTS: older
-- schemas get them on open). The store-wide revision nodes poll is
-- tocsin_meta['schedules'], bumped in the same transaction as every change here.
CREATE TABLE IF NOT EXISTS tocsin_schedules (
    id          text COLLATE "C" PRIMARY KEY,
    spec        bytea            NOT NULL,
    version     bigint           NOT NULL,
    created_at  double precision NOT NULL,
    updated_at  double precision NOT NULL,
    paused      boolean          NOT NULL DEFAULT false,
    note        text,
    paused_by   text,
    paused_at   double precision
);
-- The ledger: one row per instant per schedule, kept after the schedule is removed; the
-- newest `history` per schedule are kept by the writer (record_schedule_tick).
CREATE TABLE IF NOT EXISTS tocsin_schedule_history (
    id       text COLLATE "C" NOT NULL,
    instant  double precision NOT NULL,
    at       double precision NOT NULL,
    outcome  text             NOT NULL,
    node     text             NOT NULL,
    version  bigint           NOT NULL,
    detail   text,
    note     text,
    paused_by text,
    started  double precision,
    manual   boolean          NOT NULL DEFAULT false,
    PRIMARY KEY (id, instant, manual)
);
-- A ledger made before manual runs were keyed apart: the column, then the wider key.
ALTER TABLE tocsin_schedule_history ADD COLUMN IF NOT EXISTS manual boolean NOT NULL DEFAULT false;
DO $$
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM information_schema.key_column_usage
        WHERE table_schema = current_schema() AND table_name = 'tocsin_schedule_history'
          AND constraint_name = 'tocsin_schedule_history_pkey' AND column_name = 'manual'
    ) THEN
        ALTER TABLE tocsin_schedule_history DROP CONSTRAINT tocsin_schedule_history_pkey,
            ADD PRIMARY KEY (id, instant, manual);
    END IF;
END $$;
-- Single-node claims (no coordinator): put-if-absent by key until they expire.
CREATE TABLE IF NOT EXISTS tocsin_schedule_claims (
    key      text COLLATE "C" PRIMARY KEY,
    node     text             NOT NULL,
    expires  double precision NOT NULL
);
CREATE INDEX IF NOT EXISTS tocsin_schedule_claims_expires ON tocsin_schedule_claims (expires);
-- Runs asked for from another process (tocsin schedules trigger/backfill): every node
-- running schedules claims each; the winner runs it and deletes the row.
CREATE TABLE IF NOT EXISTS tocsin_schedule_requests (
    id       text COLLATE "C" NOT NULL,
    instant  double precision NOT NULL,
    manual   boolean          NOT NULL,
    at       double precision NOT NULL,
    PRIMARY KEY (id, instant, manual)
);
