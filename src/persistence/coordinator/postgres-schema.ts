import type { PgMigrationSet } from '../kernel/postgres-migrations.js';
import { NOT_LEADING_SQLSTATE } from './postgres-commit.js';
import { COORDINATOR_SCHEMA } from './sqlite-schema.js';

/**
 * The Coordinator's component in PostgreSQL, numbered on its own (a
 * PostgreSQL database is never a SQLite file): version 1 holds the tables as
 * SQLite's schema 8 has them; version 2 adds the functions of one-statement
 * commits (`coord_batch_rows`, the rows of a batch; `coord_not_leading`, the
 * refusal of a fenced statement); version 3 adds the console's users
 * (`coord_console_users`, as SQLite's schema 10); version 4 each item's
 * live subtree usage (`coord_rollups`, as SQLite's schema 11); version 5
 * each child's `switchboard.position` (as SQLite's schema 12).
 */
export const COORDINATOR_PG_SCHEMA: PgMigrationSet = {
  component: COORDINATOR_SCHEMA.component,
  current: 5,
  migrations: [
    {
      version: 1,
      name: "the Coordinator's tables (as SQLite's schema 8 has them)",
      sql: [
        `CREATE TABLE coord_items (
          id TEXT PRIMARY KEY,
          task_id TEXT,
          workflow_id TEXT NOT NULL,
          workflow_version INTEGER NOT NULL,
          state TEXT NOT NULL,
          stage TEXT,
          hop INTEGER NOT NULL DEFAULT 0,
          hops INTEGER NOT NULL DEFAULT 0,
          input TEXT NOT NULL,
          budget TEXT,
          attributes TEXT,
          input_tokens BIGINT NOT NULL DEFAULT 0,
          output_tokens BIGINT NOT NULL DEFAULT 0,
          cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0,
          elapsed_ms DOUBLE PRECISION NOT NULL DEFAULT 0,
          failure TEXT,
          approval TEXT,
          created_at BIGINT NOT NULL,
          updated_at BIGINT NOT NULL,
          finished_at BIGINT,
          mirrored BOOLEAN NOT NULL DEFAULT false,
          run_version INTEGER,
          run_snapshot TEXT,
          context_forgotten_at BIGINT,
          output TEXT
        )`,
        'CREATE INDEX coord_items_live ON coord_items (created_at, id) WHERE finished_at IS NULL',
        'CREATE INDEX coord_items_unmirrored ON coord_items (created_at, id) WHERE NOT mirrored',
        `CREATE INDEX coord_items_unforgotten ON coord_items (finished_at)
          WHERE finished_at IS NOT NULL AND context_forgotten_at IS NULL`,
        'CREATE INDEX coord_items_order ON coord_items (created_at, id)',
        `CREATE TABLE coord_definitions (
          id TEXT NOT NULL,
          version INTEGER NOT NULL,
          body TEXT NOT NULL,
          PRIMARY KEY (id, version)
        )`,
        `CREATE TABLE coord_hops (
          id TEXT PRIMARY KEY,
          item_id TEXT NOT NULL,
          seq INTEGER NOT NULL,
          hop INTEGER NOT NULL,
          attempt INTEGER NOT NULL,
          kind TEXT NOT NULL,
          stage TEXT NOT NULL,
          role TEXT NOT NULL,
          idempotency_key TEXT NOT NULL UNIQUE,
          continuation TEXT,
          asked_by TEXT,
          state TEXT NOT NULL,
          task_id TEXT,
          model TEXT,
          input_tokens BIGINT NOT NULL DEFAULT 0,
          output_tokens BIGINT NOT NULL DEFAULT 0,
          cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0,
          elapsed_ms DOUBLE PRECISION NOT NULL DEFAULT 0,
          error TEXT,
          reply TEXT,
          dispatched_at BIGINT NOT NULL,
          active_since BIGINT,
          finished_at BIGINT,
          timeouts INTEGER NOT NULL DEFAULT 0,
          question TEXT,
          UNIQUE (item_id, seq)
        )`,
        'CREATE UNIQUE INDEX coord_hops_continuation ON coord_hops (continuation) WHERE continuation IS NOT NULL',
        `CREATE TABLE coord_usage (
          seq BIGSERIAL PRIMARY KEY,
          hop_id TEXT NOT NULL,
          item_id TEXT NOT NULL,
          agent TEXT NOT NULL,
          model TEXT NOT NULL,
          input_tokens BIGINT NOT NULL,
          output_tokens BIGINT NOT NULL,
          cost_usd DOUBLE PRECISION NOT NULL,
          elapsed_ms DOUBLE PRECISION NOT NULL,
          at BIGINT NOT NULL
        )`,
        'CREATE INDEX coord_usage_item ON coord_usage (item_id)',
        `CREATE TABLE coord_outbox (
          id BIGSERIAL PRIMARY KEY,
          item_id TEXT NOT NULL,
          kind TEXT NOT NULL,
          body TEXT NOT NULL
        )`,
      ],
    },
    {
      version: 2,
      // The rows of one table in a one-statement commit (see COMMIT_STATEMENT). STRICT keeps the planner
      // from inlining it (it would see jsonb_array_elements' estimate of 100 rows again).
      name: 'the functions of one-statement commits: coord_batch_rows (the rows of a batch, with its row estimate), coord_not_leading',
      sql: [
        `CREATE FUNCTION coord_batch_rows(jsonb) RETURNS SETOF jsonb
          LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE ROWS 4
          AS 'SELECT jsonb_array_elements($1)'`,
        // What a fenced one-statement commit calls when the lease row is not the one it expected: its error
        // refuses the statement whole, and says the lease's epoch now.
        `CREATE FUNCTION coord_not_leading() RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
          BEGIN
            RAISE EXCEPTION 'the leader lease is at epoch %',
              coalesce((SELECT epoch::text FROM coordinator_lease WHERE id = 1), 'unknown')
              USING ERRCODE = '${NOT_LEADING_SQLSTATE}';
          END $$`,
      ],
    },
    {
      version: 3,
      name: "the console's users: one row per approver, the SHA-256 of their token, revoked or not",
      sql: [
        `CREATE TABLE coord_console_users (
          name TEXT PRIMARY KEY,
          token_sha256 TEXT NOT NULL UNIQUE,
          created_at BIGINT NOT NULL,
          revoked_at BIGINT
        )`,
      ],
    },
    {
      version: 4,
      name: "each work item's subtree usage, live: its own hops' and every descendant's, added as they are charged",
      sql: [
        `CREATE TABLE coord_rollups (
          item_id TEXT PRIMARY KEY,
          input_tokens BIGINT NOT NULL DEFAULT 0,
          output_tokens BIGINT NOT NULL DEFAULT 0,
          cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0,
          elapsed_ms DOUBLE PRECISION NOT NULL DEFAULT 0,
          hops INTEGER NOT NULL DEFAULT 0
        )`,
      ],
    },
    {
      version: 5,
      name: "each child work item's place among the children of its hop (its switchboard.position attribute)",
      sql: [
        // Children made before this version get theirs from the order they were made in: their creation
        // time, then their id, shorter first (a map's elements of one time in their list's order).
        `UPDATE coord_items AS i
          SET attributes = (i.attributes::jsonb || jsonb_build_object('switchboard.position', p.position))::text
          FROM (
            SELECT id, ROW_NUMBER() OVER (
                PARTITION BY a->>'switchboard.parent', split_part(a->>'switchboard.branch', ':', 1)
                ORDER BY created_at, length(id), id) - 1 AS position
            FROM (SELECT id, created_at, attributes::jsonb AS a FROM coord_items WHERE attributes IS NOT NULL) AS c
            WHERE jsonb_typeof(a) = 'object'
              AND jsonb_typeof(a->'switchboard.parent') = 'string'
              AND jsonb_typeof(a->'switchboard.branch') = 'string'
              AND NOT (a ? 'switchboard.position')
          ) AS p
          WHERE i.id = p.id`,
      ],
    },
  ],
};
