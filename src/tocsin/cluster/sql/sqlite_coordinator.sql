-- SPDX-License-Identifier: Apache-2.0
-- The SQLite coordinator's tables (cluster/_sqlite.py). Idempotent: run on every open,
-- statement by statement inside one BEGIN IMMEDIATE transaction, so nodes opening a new
-- file at once create it one after the other. Columns added later (the leases' zone, the
-- claims' fence and held) are migrations in cluster/_sqlite.py, run after this script
-- (tables of every age).
CREATE TABLE IF NOT EXISTS tocsin_cluster_leases (
    node TEXT PRIMARY KEY, incarnation TEXT NOT NULL, address TEXT NOT NULL,
    joined REAL NOT NULL, renewed REAL NOT NULL, expires REAL NOT NULL,
    zone TEXT NOT NULL DEFAULT 'UTC');
CREATE TABLE IF NOT EXISTS tocsin_cluster_directory (
    kind TEXT NOT NULL, identity TEXT NOT NULL, node TEXT NOT NULL,
    incarnation TEXT NOT NULL, epoch INTEGER NOT NULL, PRIMARY KEY (kind, identity));
-- fence: the grant's token (tocsin_cluster_fences); held: an at_least_once claim's
-- delivery lease end while undone, 0 once done (and for at_most_once claims).
CREATE TABLE IF NOT EXISTS tocsin_cluster_claims (
    key TEXT PRIMARY KEY, node TEXT NOT NULL, expires REAL NOT NULL,
    fence INTEGER NOT NULL DEFAULT 0, held REAL NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS tocsin_cluster_claims_expires ON tocsin_cluster_claims (expires);
CREATE TABLE IF NOT EXISTS tocsin_cluster_paused (reference TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS tocsin_cluster_pause_notes (
    reference TEXT PRIMARY KEY, note TEXT, paused_at REAL NOT NULL, paused_by TEXT NOT NULL
);
-- The last fence granted per cron reference (never purged: one row per reference).
CREATE TABLE IF NOT EXISTS tocsin_cluster_fences (
    reference TEXT PRIMARY KEY, fence INTEGER NOT NULL);
