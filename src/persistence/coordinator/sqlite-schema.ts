import type { MigrationSet } from '../kernel/migrations.js';

/**
 * The Coordinator's tables: its own migration component (`coordinator`) in
 * the file it shares with the broker, the bus, the Context Engine and the
 * audit. Rows in, plain objects out; `commit` applies a batch of decided
 * changes in one transaction (the other writes run inside the caller's).
 *
 * The read functions (`getItem`, `listItems`, `listHops`, `usageBy`,
 * `usageTotals`) are public: the CLI (`tasks`, `usage`, `items`) reads
 * through them. An ended item's `output` lives in its row: the Context
 * Engine's retention never touches it.
 */

export const COORDINATOR_SCHEMA: MigrationSet = {
  component: 'coordinator',
  current: 13,
  migrations: [
    {
      version: 1,
      name: 'work items, hops, runs, definitions, usage, outbox',
      up(db) {
        db.exec(`
          CREATE TABLE coord_items (
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
            input_tokens INTEGER NOT NULL DEFAULT 0,
            output_tokens INTEGER NOT NULL DEFAULT 0,
            cost_usd REAL NOT NULL DEFAULT 0,
            elapsed_ms REAL NOT NULL DEFAULT 0,
            failure TEXT,
            approval TEXT,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            finished_at INTEGER,
            mirrored INTEGER NOT NULL DEFAULT 0
          ) STRICT;
          CREATE INDEX coord_items_live ON coord_items (created_at) WHERE finished_at IS NULL;
          CREATE TABLE coord_definitions (
            id TEXT NOT NULL,
            version INTEGER NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (id, version)
          ) STRICT, WITHOUT ROWID;
          CREATE TABLE coord_runs (
            item_id TEXT PRIMARY KEY,
            machine_version INTEGER NOT NULL,
            snapshot TEXT NOT NULL,
            updated_at INTEGER NOT NULL
          ) STRICT;
          CREATE TABLE coord_hops (
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
            input_tokens INTEGER NOT NULL DEFAULT 0,
            output_tokens INTEGER NOT NULL DEFAULT 0,
            cost_usd REAL NOT NULL DEFAULT 0,
            elapsed_ms REAL NOT NULL DEFAULT 0,
            error TEXT,
            reply TEXT,
            dispatched_at INTEGER NOT NULL,
            active_since INTEGER,
            finished_at INTEGER,
            UNIQUE (item_id, seq)
          ) STRICT, WITHOUT ROWID;
          CREATE UNIQUE INDEX coord_hops_continuation ON coord_hops (continuation) WHERE continuation IS NOT NULL;
          CREATE TABLE coord_usage (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            hop_id TEXT NOT NULL,
            item_id TEXT NOT NULL,
            agent TEXT NOT NULL,
            model TEXT NOT NULL,
            input_tokens INTEGER NOT NULL,
            output_tokens INTEGER NOT NULL,
            cost_usd REAL NOT NULL,
            elapsed_ms REAL NOT NULL,
            at INTEGER NOT NULL
          ) STRICT;
          CREATE INDEX coord_usage_item ON coord_usage (item_id);
          CREATE TABLE coord_outbox (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            item_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            body TEXT NOT NULL
          ) STRICT;
        `);
      },
    },
    {
      version: 2,
      name: 'the Coordinator that owns the file',
      up(db) {
        db.exec(`
          CREATE TABLE coord_owner (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            token TEXT NOT NULL,
            pid INTEGER NOT NULL,
            host TEXT NOT NULL,
            since INTEGER NOT NULL,
            heartbeat_at INTEGER NOT NULL
          ) STRICT;
        `);
      },
    },
    {
      version: 3,
      name: "a run's snapshot lives in its item's row (one row written per step, not two)",
      up(db) {
        db.exec(`
          ALTER TABLE coord_items ADD COLUMN run_version INTEGER;
          ALTER TABLE coord_items ADD COLUMN run_snapshot TEXT;
          UPDATE coord_items SET run_version = r.machine_version, run_snapshot = r.snapshot
            FROM coord_runs AS r WHERE r.item_id = coord_items.id;
          DROP TABLE coord_runs;
        `);
      },
    },
    {
      version: 4,
      name: 'usage and outbox rows numbered by rowid (no AUTOINCREMENT: no sqlite_sequence write per row)',
      up(db) {
        // Usage rows are never deleted, so their numbers only grow anyway. An outbox number may be
        // used again once its row is gone: nothing refers to a published row after its deletion.
        db.exec(`
          CREATE TABLE coord_usage_v4 (
            seq INTEGER PRIMARY KEY,
            hop_id TEXT NOT NULL,
            item_id TEXT NOT NULL,
            agent TEXT NOT NULL,
            model TEXT NOT NULL,
            input_tokens INTEGER NOT NULL,
            output_tokens INTEGER NOT NULL,
            cost_usd REAL NOT NULL,
            elapsed_ms REAL NOT NULL,
            at INTEGER NOT NULL
          ) STRICT;
          INSERT INTO coord_usage_v4 SELECT seq, hop_id, item_id, agent, model, input_tokens, output_tokens,
            cost_usd, elapsed_ms, at FROM coord_usage ORDER BY seq;
          DROP TABLE coord_usage;
          ALTER TABLE coord_usage_v4 RENAME TO coord_usage;
          CREATE INDEX coord_usage_item ON coord_usage (item_id);
          CREATE TABLE coord_outbox_v4 (
            id INTEGER PRIMARY KEY,
            item_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            body TEXT NOT NULL
          ) STRICT;
          INSERT INTO coord_outbox_v4 SELECT id, item_id, kind, body FROM coord_outbox ORDER BY id;
          DROP TABLE coord_outbox;
          ALTER TABLE coord_outbox_v4 RENAME TO coord_outbox;
          DELETE FROM sqlite_sequence WHERE name IN ('coord_usage', 'coord_outbox');
        `);
      },
    },
    {
      version: 5,
      name: "when an ended run's context was forgotten (the Context Engine's outputs, memory, checkpoints)",
      up(db) {
        // Items ended before this version are forgotten too: the first sweeps find them (in batches).
        db.exec(`
          ALTER TABLE coord_items ADD COLUMN context_forgotten_at INTEGER;
          CREATE INDEX coord_items_unforgotten ON coord_items (finished_at)
            WHERE finished_at IS NOT NULL AND context_forgotten_at IS NULL;
        `);
      },
    },
    {
      version: 6,
      name: "an ended item's output (the last stage's parts and artifacts, or the failure), kept with the item",
      up(db) {
        // Items that ended before this version have no output recorded (null).
        db.exec('ALTER TABLE coord_items ADD COLUMN output TEXT;');
      },
    },
    {
      version: 7,
      name: 'how many times a hop ran past its stage timeout (re-published each time)',
      up(db) {
        db.exec('ALTER TABLE coord_hops ADD COLUMN timeouts INTEGER NOT NULL DEFAULT 0');
      },
    },
    {
      version: 8,
      name: "a query's question, kept to re-publish it when it times out",
      up(db) {
        // Queries asked before this version have no question recorded (null): a timeout fails them.
        db.exec('ALTER TABLE coord_hops ADD COLUMN question TEXT');
      },
    },
    {
      version: 9,
      name: "the trace an item's spans continue (its root span's traceparent and tracestate), when tracing is on",
      up(db) {
        // Items made before this version, or with tracing off, have none (null): their spans start new traces.
        db.exec('ALTER TABLE coord_items ADD COLUMN trace TEXT');
      },
    },
    {
      version: 10,
      name: "the console's users: one row per approver, the SHA-256 of their token, revoked or not",
      up(db) {
        db.exec(`
          CREATE TABLE coord_console_users (
            name TEXT PRIMARY KEY,
            token_sha256 TEXT NOT NULL UNIQUE,
            created_at INTEGER NOT NULL,
            revoked_at INTEGER
          ) STRICT;
        `);
      },
    },
    {
      version: 11,
      name: "each work item's subtree usage, live: its own hops' and every descendant's, added as they are charged",
      up(db) {
        // Items charged before this version have no row: their subtree reads as nothing charged.
        db.exec(`
          CREATE TABLE coord_rollups (
            item_id TEXT PRIMARY KEY,
            input_tokens INTEGER NOT NULL DEFAULT 0,
            output_tokens INTEGER NOT NULL DEFAULT 0,
            cost_usd REAL NOT NULL DEFAULT 0,
            elapsed_ms REAL NOT NULL DEFAULT 0,
            hops INTEGER NOT NULL DEFAULT 0
          ) STRICT, WITHOUT ROWID;
        `);
      },
    },
    {
      version: 12,
      name: "each child work item's place among the children of its hop (its switchboard.position attribute)",
      up(db) {
        // Children made before this version get theirs from the order they were made in (their
        // creation time, then their row's: the rows of one commit are written in the order decided).
        db.exec(`
          UPDATE coord_items SET attributes = json_set(attributes, '$."switchboard.position"', p.position)
          FROM (
            SELECT rid, ROW_NUMBER() OVER (PARTITION BY parent, hop ORDER BY created_at, rid) - 1 AS position
            FROM (
              SELECT rowid AS rid, created_at,
                json_extract(attributes, '$."switchboard.parent"') AS parent,
                substr(json_extract(attributes, '$."switchboard.branch"'), 1,
                  instr(json_extract(attributes, '$."switchboard.branch"'), ':') - 1) AS hop
              FROM coord_items
              WHERE json_valid(attributes)
                AND json_type(attributes, '$."switchboard.parent"') = 'text'
                AND json_type(attributes, '$."switchboard.branch"') = 'text'
                AND json_type(attributes, '$."switchboard.position"') IS NULL
            )
          ) AS p
          WHERE coord_items.rowid = p.rid;
        `);
      },
    },
    {
      version: 13,
      name: "an open join's branches in rows of their own, one per branch, written only when the branch changes",
      up(db) {
        // Runs written before this version keep their branches in their snapshot's text, and load as they are.
        db.exec(`
          CREATE TABLE coord_join_branches (
            item_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (item_id, position)
          ) STRICT, WITHOUT ROWID;
        `);
      },
    },
  ],
};
