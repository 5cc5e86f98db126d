import type { Artifact } from '../../protocol/task.js';
import type { Part } from '../../protocol/parts.js';
import type { BusEnvelope, HopOutcome, Usage, WorkHeaders } from '../../protocol/work-envelope.js';
import { CommitBatcher } from '../kernel/commit-batcher.js';
import { type Clock, systemClock } from '../kernel/clock.js';
import { type SqliteDatabase, type SqliteStatement, type SqliteTransaction, openDatabase } from '../kernel/database.js';
import { type MigrationSet, migrate } from '../kernel/migrations.js';
import { ContextStoreError, checkKey, checkPatch, toJson } from './arguments.js';
import {
  type ContextRetentionOptions,
  type PruneCounts,
  type PruneOutcome,
  checkPruneBatch,
  checkPruneIntervalMs,
  checkRetentionMs,
} from './retention.js';

export { CONTEXT_STORE_ERROR_CODES, ContextStoreError, type ContextStoreErrorCode } from './arguments.js';
export {
  type ContextRetentionOptions,
  DEFAULT_CONTEXT_PRUNE_BATCH,
  DEFAULT_CONTEXT_PRUNE_INTERVAL_MS,
  DEFAULT_CONTEXT_RETENTION_MS,
  type PruneCounts,
  type PruneOutcome,
} from './retention.js';

/**
 * The Context Engine: what a stateless worker needs to pick up a work item
 * (a workflow run) where the previous hop left it, durable in SQLite.
 * - outputs of the run's past hops, in the order they completed;
 * - the run's memory: a JSON map any hop may update;
 * - checkpoints of suspended hops, under continuation tokens;
 * - completion records by idempotency key: a redelivered hop that already
 *   completed is recognised and its results re-published, never re-run;
 * - effect markers: a side effect keyed by (hop, effect key) is applied once.
 * Everything a hop's completion writes commits in one transaction.
 * Completion records, effect markers and resumed checkpoints are kept for a
 * retention (`persistence/context/retention.ts`), then pruned; checkpoints not yet
 * resumed are kept. A run's outputs, memory and checkpoints are kept until
 * the run is forgotten (`forgetRun`): the Coordinator does it once the run
 * has been over for the retention.
 */

export interface HopOutput {
  runId: string;
  hop: number;
  role: string;
  taskId: string;
  idempotencyKey: string;
  parts: Part[];
  artifacts: Artifact[];
  usage: Usage | undefined;
  recordedAt: number;
}

/** What a hop sees of its work item: the run's completed hop outputs, oldest first, and its memory. */
export interface WorkItemContext {
  /** The run (work item) the context is of. */
  runId: string;
  /** The run's completed hops, oldest first. */
  outputs: HopOutput[];
  /** The run's memory: what its hops' handlers kept. */
  memory: Record<string, unknown>;
}

/** A suspended hop's checkpoint: its headers and the state its handler asked to keep, until a reply resumes it. */
export interface Checkpoint {
  token: string;
  runId: string;
  taskId: string;
  hop: number;
  role: string;
  /** The headers of the hop that suspended. */
  headers: WorkHeaders;
  /** What the handler asked to keep. */
  state: unknown;
  createdAt: number;
  /** When a reply resumed it and the resumed hop completed. */
  resumedAt: number | undefined;
}

/** A message to publish as part of a hop's completion (re-published as-is on a redelivery). */
export interface PendingPublish {
  role: string;
  envelope: BusEnvelope;
  idempotencyKey: string;
  taskKey?: string;
}

/** A hop's recorded completion: its outcome and the messages to publish, re-published as-is on a redelivery. */
export interface HopCompletion {
  idempotencyKey: string;
  outcome: HopOutcome;
  publishes: PendingPublish[];
  recordedAt: number;
}

/** What a hop's completion writes in one transaction: its output, memory updates, checkpoint and publishes. */
export interface CompletionRecord {
  idempotencyKey: string;
  runId: string;
  taskId: string;
  hop: number;
  role: string;
  outcome: HopOutcome;
  /** A completed hop's output, visible to the run's later hops. */
  output?: { parts: Part[]; artifacts: Artifact[]; usage?: Usage };
  /** Memory updates: a key set to `null` is deleted. */
  memory?: Record<string, unknown>;
  /** A suspending hop's checkpoint. */
  checkpoint?: { token: string; state: unknown; headers: WorkHeaders };
  /** The checkpoint this (resumed) hop consumed. */
  resumedToken?: string;
  publishes: PendingPublish[];
}

/** The Context Engine's contract; `SqliteContextStore` is the embedded implementation. */
export interface ContextStore {
  /** A run's context: its hops' outputs and its memory. */
  hydrate(runId: string): Promise<WorkItemContext>;
  /** Updates a run's memory outside a hop (the Coordinator seeding a run): `null` deletes a key. */
  updateMemory(runId: string, patch: Record<string, unknown>): Promise<void>;
  /** The checkpoint a suspended hop kept under its continuation token, if any. */
  checkpoint(token: string): Promise<Checkpoint | undefined>;
  /** The recorded completion of a hop by its idempotency key, if it completed. */
  completion(idempotencyKey: string): Promise<HopCompletion | undefined>;
  /**
   * Records a hop's completion and everything it implies, atomically. When the
   * idempotency key was already completed nothing is written and the first
   * completion is returned (with `first: false`).
   */
  complete(record: CompletionRecord): Promise<{ completion: HopCompletion; first: boolean }>;
  /** The recorded value of an effect, if it was applied. */
  effect(scope: string, key: string): Promise<{ value: unknown } | undefined>;
  /** Records an applied effect; false when it was already recorded (the first value stays). */
  recordEffect(scope: string, key: string, value: unknown): Promise<boolean>;
  /**
   * Runs `apply` at most once per (scope, key), in the same transaction as its
   * marker, on the store's own database: writes `apply` makes there commit
   * with the marker or not at all (exactly once across crashes).
   */
  applyOnce?<T>(scope: string, key: string, apply: (db: SqliteDatabase) => T): { value: T; applied: boolean };
  /**
   * Forgets a run: its hop outputs, its memory and its checkpoints (resumed or
   * not), atomically. Only for a run that has ended: the Coordinator calls it
   * once the run has been over for `retentionMs`. Forgetting a run twice, or
   * one the store never saw, does nothing.
   */
  forgetRun(runId: string): Promise<void>;
  /** How long the store keeps idempotency records (and the Coordinator a finished run's context), in ms. */
  readonly retentionMs: number;
  /** Closes the store (what it opened itself). */
  close(): Promise<void>;
}

export const CONTEXT_SCHEMA: MigrationSet = {
  component: 'context',
  current: 3,
  migrations: [
    {
      version: 1,
      name: 'context engine',
      up(db) {
        db.exec(`
          CREATE TABLE context_outputs (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id TEXT NOT NULL,
            hop INTEGER NOT NULL,
            role TEXT NOT NULL,
            task_id TEXT NOT NULL,
            idempotency_key TEXT NOT NULL UNIQUE,
            body TEXT NOT NULL,
            recorded_at INTEGER NOT NULL
          ) STRICT;
          CREATE INDEX context_outputs_run ON context_outputs (run_id, seq);
          CREATE TABLE context_memory (
            run_id TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            updated_at INTEGER NOT NULL,
            PRIMARY KEY (run_id, key)
          ) STRICT;
          CREATE TABLE context_checkpoints (
            token TEXT PRIMARY KEY,
            run_id TEXT NOT NULL,
            task_id TEXT NOT NULL,
            hop INTEGER NOT NULL,
            role TEXT NOT NULL,
            headers TEXT NOT NULL,
            state TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            resumed_at INTEGER
          ) STRICT;
          CREATE TABLE context_completions (
            idempotency_key TEXT PRIMARY KEY,
            outcome TEXT NOT NULL,
            publishes TEXT NOT NULL,
            recorded_at INTEGER NOT NULL
          ) STRICT;
          CREATE INDEX context_completions_age ON context_completions (recorded_at);
          CREATE TABLE context_effects (
            scope TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            recorded_at INTEGER NOT NULL,
            PRIMARY KEY (scope, key)
          ) STRICT;
          CREATE INDEX context_effects_age ON context_effects (recorded_at);
        `);
      },
    },
    {
      version: 2,
      name: 'resumed checkpoints by age',
      up(db) {
        // Pruning finds resumed checkpoints past the retention without scanning the live ones.
        db.exec(`CREATE INDEX context_checkpoints_resumed ON context_checkpoints (resumed_at)
                 WHERE resumed_at IS NOT NULL`);
      },
    },
    {
      version: 3,
      name: "a run's checkpoints by run",
      up(db) {
        // Forgetting an ended run deletes its checkpoints (one never resumed would otherwise stay forever).
        db.exec('CREATE INDEX context_checkpoints_run ON context_checkpoints (run_id)');
      },
    },
  ],
};

interface OutputRow {
  run_id: string;
  hop: number;
  role: string;
  task_id: string;
  idempotency_key: string;
  body: string;
  recorded_at: number;
}

interface CheckpointRow {
  token: string;
  run_id: string;
  task_id: string;
  hop: number;
  role: string;
  headers: string;
  state: string;
  created_at: number;
  resumed_at: number | null;
}

interface CompletionRow {
  idempotency_key: string;
  outcome: HopOutcome;
  publishes: string;
  recorded_at: number;
}

/** Options of `createSqliteContextStore`: the database (open or a path), clock, retention and pruning. */
export interface SqliteContextStoreOptions extends ContextRetentionOptions {
  /** An open database (the caller closes it) or a path (closed by `close()`). */
  database: SqliteDatabase | string;
  /** Where `recordedAt` and the retention's cut-off come from. */
  clock?: Clock;
  /**
   * How often the store prunes records past the retention (default 60 s):
   * an unref'd timer, stopped by `close()`. `0`: never by itself (call
   * `pruneExpired()`).
   */
  pruneIntervalMs?: number;
  /** Rows of each kind deleted per transaction while pruning (default 500). */
  pruneBatch?: number;
  /** Told what each pruning pass deleted, or why it failed (the next pass tries again). */
  onPrune?: (outcome: PruneOutcome) => void;
}

/**
 * The Context Engine on SQLite: its own migration component (`context`) in
 * the file the user passes. Writes made in one event-loop turn share one
 * transaction (group commit); each resolves after its commit.
 */
export class SqliteContextStore implements ContextStore {
  readonly database: SqliteDatabase;
  private readonly ownsDb: boolean;
  private readonly clock: Clock;
  /** How long completion records, effect markers and resumed checkpoints are kept. */
  readonly retentionMs: number;
  private readonly pruneBatch: number;
  private readonly onPrune: SqliteContextStoreOptions['onPrune'];
  private pruneTimer: NodeJS.Timeout | undefined;
  private pruning: Promise<PruneCounts> | undefined;
  private closed = false;
  /** Writes of one event-loop turn share a commit (many workers completing hops at once). */
  private readonly batcher: CommitBatcher;
  private readonly readContext: SqliteTransaction<(runId: string) => WorkItemContext>;
  private readonly s: Record<
    | 'outputs'
    | 'memory'
    | 'setMemory'
    | 'deleteMemory'
    | 'checkpoint'
    | 'insertCheckpoint'
    | 'resumeCheckpoint'
    | 'completion'
    | 'insertCompletion'
    | 'insertOutput'
    | 'effect'
    | 'insertEffect'
    | 'pruneCompletions'
    | 'pruneEffects'
    | 'pruneCheckpoints'
    | 'forgetOutputs'
    | 'forgetMemory'
    | 'forgetCheckpoints',
    SqliteStatement
  >;

  constructor(options: SqliteContextStoreOptions) {
    this.retentionMs = checkRetentionMs(options.retentionMs);
    this.pruneBatch = checkPruneBatch(options.pruneBatch);
    const pruneIntervalMs = checkPruneIntervalMs(options.pruneIntervalMs);
    this.onPrune = options.onPrune;
    if (typeof options.database === 'string') {
      this.database = openDatabase(options.database);
      this.ownsDb = true;
    } else {
      this.database = options.database;
      this.ownsDb = false;
    }
    this.clock = options.clock ?? systemClock;
    migrate(this.database, CONTEXT_SCHEMA);
    const db = this.database;
    this.s = {
      outputs: db.prepare(
        'SELECT run_id, hop, role, task_id, idempotency_key, body, recorded_at FROM context_outputs WHERE run_id = ? ORDER BY seq',
      ),
      memory: db.prepare('SELECT key, value FROM context_memory WHERE run_id = ? ORDER BY key'),
      setMemory: db.prepare(
        `INSERT INTO context_memory (run_id, key, value, updated_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
      ),
      deleteMemory: db.prepare('DELETE FROM context_memory WHERE run_id = ? AND key = ?'),
      checkpoint: db.prepare('SELECT * FROM context_checkpoints WHERE token = ?'),
      insertCheckpoint: db.prepare(
        `INSERT INTO context_checkpoints (token, run_id, task_id, hop, role, headers, state, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      resumeCheckpoint: db.prepare(
        'UPDATE context_checkpoints SET resumed_at = ? WHERE token = ? AND resumed_at IS NULL',
      ),
      completion: db.prepare('SELECT * FROM context_completions WHERE idempotency_key = ?'),
      insertCompletion: db.prepare(
        `INSERT INTO context_completions (idempotency_key, outcome, publishes, recorded_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (idempotency_key) DO NOTHING`,
      ),
      insertOutput: db.prepare(
        `INSERT INTO context_outputs (run_id, hop, role, task_id, idempotency_key, body, recorded_at)
         VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (idempotency_key) DO NOTHING`,
      ),
      effect: db.prepare('SELECT value FROM context_effects WHERE scope = ? AND key = ?'),
      insertEffect: db.prepare(
        `INSERT INTO context_effects (scope, key, value, recorded_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (scope, key) DO NOTHING`,
      ),
      // Oldest first, at most `limit` rows a statement (the index on the age column finds them).
      pruneCompletions: db.prepare(
        `DELETE FROM context_completions WHERE rowid IN (
           SELECT rowid FROM context_completions WHERE recorded_at < ? ORDER BY recorded_at LIMIT ?)`,
      ),
      pruneEffects: db.prepare(
        `DELETE FROM context_effects WHERE rowid IN (
           SELECT rowid FROM context_effects WHERE recorded_at < ? ORDER BY recorded_at LIMIT ?)`,
      ),
      // Only resumed checkpoints: one not yet resumed is what its suspended run resumes from.
      pruneCheckpoints: db.prepare(
        `DELETE FROM context_checkpoints WHERE token IN (
           SELECT token FROM context_checkpoints WHERE resumed_at IS NOT NULL AND resumed_at < ?
           ORDER BY resumed_at LIMIT ?)`,
      ),
      forgetOutputs: db.prepare('DELETE FROM context_outputs WHERE run_id = ?'),
      forgetMemory: db.prepare('DELETE FROM context_memory WHERE run_id = ?'),
      forgetCheckpoints: db.prepare('DELETE FROM context_checkpoints WHERE run_id = ?'),
    };
    this.batcher = new CommitBatcher(db);
    this.readContext = db.transaction((run: string) => {
      const outputs = (this.s.outputs.all(run) as OutputRow[]).map((row): HopOutput => {
        const body = JSON.parse(row.body) as { parts: Part[]; artifacts: Artifact[]; usage?: Usage };
        return {
          runId: row.run_id,
          hop: row.hop,
          role: row.role,
          taskId: row.task_id,
          idempotencyKey: row.idempotency_key,
          parts: body.parts,
          artifacts: body.artifacts,
          usage: body.usage,
          recordedAt: row.recorded_at,
        };
      });
      const memory: Record<string, unknown> = {};
      for (const row of this.s.memory.all(run) as { key: string; value: string }[]) {
        memory[row.key] = JSON.parse(row.value);
      }
      return { runId: run, outputs, memory };
    });
    if (pruneIntervalMs > 0) {
      this.pruneTimer = setInterval(() => void this.prunePass(), pruneIntervalMs);
      this.pruneTimer.unref();
    }
  }

  /** One timed pass: reports to `onPrune`, never throws (the next pass tries again). */
  private async prunePass(): Promise<void> {
    if (this.closed || this.pruning !== undefined) return;
    const started = performance.now();
    try {
      const pruned = await this.pruneExpired();
      this.onPrune?.({ pruned, ms: performance.now() - started });
    } catch (error) {
      if (this.closed) return;
      this.onPrune?.({ error });
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new ContextStoreError('CONTEXT_CLOSED', 'the context store is closed');
  }

  async hydrate(runId: string): Promise<WorkItemContext> {
    this.assertOpen();
    const run = checkKey(runId, 'runId');
    return this.readContext.deferred(run);
  }

  private applyMemory(runId: string, patch: Record<string, unknown>, now: number): void {
    for (const [key, value] of Object.entries(patch)) {
      if (value === null) this.s.deleteMemory.run(runId, key);
      else this.s.setMemory.run(runId, key, toJson(value, `memory.${key}`), now);
    }
  }

  async updateMemory(runId: string, patch: Record<string, unknown>): Promise<void> {
    this.assertOpen();
    const run = checkKey(runId, 'runId');
    const checked = checkPatch(patch);
    await this.batcher.submit(() => this.applyMemory(run, checked, this.clock.now()));
  }

  async checkpoint(token: string): Promise<Checkpoint | undefined> {
    this.assertOpen();
    const row = this.s.checkpoint.get(checkKey(token, 'token')) as CheckpointRow | undefined;
    if (row === undefined) return undefined;
    return {
      token: row.token,
      runId: row.run_id,
      taskId: row.task_id,
      hop: row.hop,
      role: row.role,
      headers: JSON.parse(row.headers) as WorkHeaders,
      state: JSON.parse(row.state) as unknown,
      createdAt: row.created_at,
      resumedAt: row.resumed_at ?? undefined,
    };
  }

  private rowToCompletion(row: CompletionRow): HopCompletion {
    return {
      idempotencyKey: row.idempotency_key,
      outcome: row.outcome,
      publishes: JSON.parse(row.publishes) as PendingPublish[],
      recordedAt: row.recorded_at,
    };
  }

  async completion(idempotencyKey: string): Promise<HopCompletion | undefined> {
    this.assertOpen();
    const row = this.s.completion.get(checkKey(idempotencyKey, 'idempotencyKey')) as CompletionRow | undefined;
    return row === undefined ? undefined : this.rowToCompletion(row);
  }

  async complete(record: CompletionRecord): Promise<{ completion: HopCompletion; first: boolean }> {
    this.assertOpen();
    const key = checkKey(record.idempotencyKey, 'idempotencyKey');
    const runId = checkKey(record.runId, 'runId');
    const memory = record.memory === undefined ? undefined : checkPatch(record.memory);
    const publishes = toJson(record.publishes, 'publishes');
    const output = record.output === undefined ? undefined : toJson(record.output, 'output');
    const checkpoint =
      record.checkpoint === undefined
        ? undefined
        : {
            token: checkKey(record.checkpoint.token, 'checkpoint token'),
            state: toJson(record.checkpoint.state, 'checkpoint state'),
            headers: toJson(record.checkpoint.headers, 'checkpoint headers'),
          };
    return this.batcher.submit(() => {
      const now = this.clock.now();
      const inserted = this.s.insertCompletion.run(key, record.outcome, publishes, now).changes === 1;
      if (!inserted) {
        return { completion: this.rowToCompletion(this.s.completion.get(key) as CompletionRow), first: false };
      }
      if (output !== undefined) {
        this.s.insertOutput.run(runId, record.hop, record.role, record.taskId, key, output, now);
      }
      if (memory !== undefined) this.applyMemory(runId, memory, now);
      if (checkpoint !== undefined) {
        this.s.insertCheckpoint.run(
          checkpoint.token,
          runId,
          record.taskId,
          record.hop,
          record.role,
          checkpoint.headers,
          checkpoint.state,
          now,
        );
      }
      if (record.resumedToken !== undefined) this.s.resumeCheckpoint.run(now, record.resumedToken);
      return {
        completion: { idempotencyKey: key, outcome: record.outcome, publishes: record.publishes, recordedAt: now },
        first: true,
      };
    });
  }

  async effect(scope: string, key: string): Promise<{ value: unknown } | undefined> {
    this.assertOpen();
    const row = this.s.effect.get(checkKey(scope, 'effect scope'), checkKey(key, 'effect key')) as
      | { value: string }
      | undefined;
    return row === undefined ? undefined : { value: JSON.parse(row.value) as unknown };
  }

  async recordEffect(scope: string, key: string, value: unknown): Promise<boolean> {
    this.assertOpen();
    const text = toJson(value, 'effect value');
    const s = checkKey(scope, 'effect scope');
    const k = checkKey(key, 'effect key');
    return this.batcher.submit(() => this.s.insertEffect.run(s, k, text, this.clock.now()).changes === 1, {
      atomic: false,
    });
  }

  applyOnce<T>(scope: string, key: string, apply: (db: SqliteDatabase) => T): { value: T; applied: boolean } {
    this.assertOpen();
    const s = checkKey(scope, 'effect scope');
    const k = checkKey(key, 'effect key');
    const run = this.database.transaction(() => {
      const existing = this.s.effect.get(s, k) as { value: string } | undefined;
      if (existing !== undefined) return { value: JSON.parse(existing.value) as T, applied: false };
      const value = apply(this.database);
      this.s.insertEffect.run(s, k, toJson(value, 'effect value'), this.clock.now());
      return { value, applied: true };
    });
    return run.immediate();
  }

  async forgetRun(runId: string): Promise<void> {
    this.assertOpen();
    const run = checkKey(runId, 'runId');
    // Forgetting many runs in one turn shares one commit (the Coordinator forgets a batch at once).
    await this.batcher.submit(() => {
      this.s.forgetOutputs.run(run);
      this.s.forgetMemory.run(run);
      this.s.forgetCheckpoints.run(run);
    });
  }

  /**
   * Deletes completion records, effect markers and resumed checkpoints
   * recorded (resumed) before `epochMs`: the oldest `limit` of each kind (one
   * transaction, shared with the writes of the same turn). Checkpoints not
   * yet resumed, outputs and memory are never deleted here (`forgetRun`
   * forgets an ended run's).
   */
  async prune(epochMs: number, limit = this.pruneBatch): Promise<PruneCounts> {
    this.assertOpen();
    checkPruneBatch(limit);
    if (!Number.isFinite(epochMs)) throw new ContextStoreError('CONTEXT_INVALID_ARGUMENT', 'epochMs must be a number');
    return this.batcher.submit(() => ({
      completions: this.s.pruneCompletions.run(epochMs, limit).changes,
      effects: this.s.pruneEffects.run(epochMs, limit).changes,
      checkpoints: this.s.pruneCheckpoints.run(epochMs, limit).changes,
    }));
  }

  /**
   * Prunes everything older than the retention (now, on the store's clock),
   * batch after batch, each its own transaction in its own event-loop turn,
   * until a batch finds less than a full one of every kind. A pass already
   * running is joined, not doubled.
   */
  pruneExpired(): Promise<PruneCounts> {
    if (this.closed) return Promise.reject(new ContextStoreError('CONTEXT_CLOSED', 'the context store is closed'));
    this.pruning ??= (async () => {
      const cutoff = this.clock.now() - this.retentionMs;
      const total: PruneCounts = { completions: 0, effects: 0, checkpoints: 0 };
      for (;;) {
        const batch = await this.prune(cutoff);
        total.completions += batch.completions;
        total.effects += batch.effects;
        total.checkpoints += batch.checkpoints;
        const full = Math.max(batch.completions, batch.effects, batch.checkpoints) >= this.pruneBatch;
        if (!full || this.closed) return total;
      }
    })().finally(() => {
      this.pruning = undefined;
    });
    return this.pruning;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.pruneTimer);
    this.batcher.flush();
    if (this.ownsDb) this.database.close();
  }
}

/** Opens the Context Engine on a SQLite database. */
export function createSqliteContextStore(options: SqliteContextStoreOptions): SqliteContextStore {
  return new SqliteContextStore(options);
}
