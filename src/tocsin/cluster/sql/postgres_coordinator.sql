-- SPDX-License-Identifier: Apache-2.0
-- The PostgreSQL coordinator's tables (cluster/_postgres.py). Idempotent: run on every
-- open, in one transaction under an advisory lock, in the coordinator's schema (the
-- search_path). Columns added later (the leases' zone) are migrations in
-- cluster/_postgres.py, run after this script (tables of every age).
CREATE TABLE IF NOT EXISTS tocsin_cluster_leases (
    node text PRIMARY KEY, incarnation text NOT NULL, address text NOT NULL,
    joined float8 NOT NULL, renewed float8 NOT NULL, expires float8 NOT NULL,
    zone text NOT NULL DEFAULT 'UTC');
CREATE TABLE IF NOT EXISTS tocsin_cluster_directory (
    kind text NOT NULL, identity text NOT NULL, node text NOT NULL,
    incarnation text NOT NULL, epoch bigint NOT NULL, PRIMARY KEY (kind, identity));
CREATE TABLE IF NOT EXISTS tocsin_cluster_claims (
    key text PRIMARY KEY, node text NOT NULL, expires float8 NOT NULL);
CREATE INDEX IF NOT EXISTS tocsin_cluster_claims_expires ON tocsin_cluster_claims (expires);
CREATE TABLE IF NOT EXISTS tocsin_cluster_paused (reference text PRIMARY KEY);
