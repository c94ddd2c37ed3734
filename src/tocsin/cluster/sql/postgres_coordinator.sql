-- SPDX-License-Identifier: Apache-2.0
-- The PostgreSQL coordinator's tables (cluster/_postgres.py). Idempotent: run on every
-- open, in one transaction under an advisory lock, in the coordinator's schema (the
-- search_path). Columns added later (the leases' zone, the claims' fence and held) are
-- migrations in cluster/_postgres.py, run after this script (tables of every age).
CREATE TABLE IF NOT EXISTS tocsin_cluster_leases (
    node text PRIMARY KEY, incarnation text NOT NULL, address text NOT NULL,
    joined float8 NOT NULL, renewed float8 NOT NULL, expires float8 NOT NULL,
    zone text NOT NULL DEFAULT 'UTC');
CREATE TABLE IF NOT EXISTS tocsin_cluster_directory (
    kind text NOT NULL, identity text NOT NULL, node text NOT NULL,
    incarnation text NOT NULL, epoch bigint NOT NULL, PRIMARY KEY (kind, identity));
-- fence: the grant's token (tocsin_cluster_fences); held: an at_least_once claim's
-- delivery lease end while undone, 0 once done (and for at_most_once claims).
CREATE TABLE IF NOT EXISTS tocsin_cluster_claims (
    key text PRIMARY KEY, node text NOT NULL, expires float8 NOT NULL,
    fence bigint NOT NULL DEFAULT 0, held float8 NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS tocsin_cluster_claims_expires ON tocsin_cluster_claims (expires);
CREATE TABLE IF NOT EXISTS tocsin_cluster_paused (reference text PRIMARY KEY);
CREATE TABLE IF NOT EXISTS tocsin_cluster_pause_notes (
    reference text PRIMARY KEY, note text, paused_at double precision NOT NULL,
    paused_by text NOT NULL
);
-- The last fence granted per cron reference (never purged: one row per reference).
CREATE TABLE IF NOT EXISTS tocsin_cluster_fences (
    reference text PRIMARY KEY, fence bigint NOT NULL);
