import { type Clock, systemClock } from '../kernel/clock.js';
import {
  type Checkpoint,
  type CompletionRecord,
  type ContextStore,
  ContextStoreError,
  type HopCompletion,
  type HopOutput,
  type WorkItemContext,
} from './sqlite-store.js';
import type { Artifact } from '../../protocol/task.js';
import type { Part } from '../../protocol/parts.js';
import type { Usage, WorkHeaders } from '../../protocol/work-envelope.js';
import { checkKey, checkPatch, toJson } from './arguments.js';
import { type ContextRetentionOptions, checkRetentionMs } from './retention.js';
import { hashTag } from '../kernel/redis/hash-tag.js';
import { safeRedisUrl } from '../kernel/redis/url.js';
import { type LuaScript, type ScriptConnection, luaScript, readLua, runScript } from '../kernel/redis/lua-script.js';
import { type RedisClient, connectWithin, createRedisClient, loadNodeRedis } from '../kernel/redis/node-redis.js';
import { CommandTimeouts, UNTIMED } from '../kernel/redis/command-timeouts.js';

/**
 * The Context Engine on Redis: what workers on several machines share when
 * the bus is Redis (they cannot read the Coordinator's SQLite file). Same
 * contract as `SqliteContextStore`; a hop's completion (completion record,
 * output, memory updates, checkpoint, the resumed checkpoint's mark) is one
 * Lua script, so it applies whole or not at all, and a second completion of
 * the same idempotency key writes nothing and returns the first.
 *
 * Keys share the bus's hash tag (one cluster slot per deployment):
 *
 *   {p}:cx:o:<runId>        the run's hop outputs, oldest first (list of JSON)
 *   {p}:cx:q:<runId>        whose outputs those are (set of their `cx:d:` key names)
 *   {p}:cx:m:<runId>        the run's memory (hash: key -> JSON)
 *   {p}:cx:c:<token>        a checkpoint (hash: `body` JSON, `resumedAt`)
 *   {p}:cx:k:<runId>        the run's checkpoints (set of their `cx:c:` key names)
 *   {p}:cx:d:<key>          a hop's completion record (string: JSON)
 *   {p}:cx:e:<scope>        effect markers of a scope (hash: key -> JSON value)
 *
 * Retention (`persistence/context/retention.ts`, default 24 h): the idempotency records
 * expire on their own, with a `PX` TTL set by the same script that writes
 * them: a completion record when it is written; a checkpoint when the hop
 * that resumes from it completes (never before: a suspended run may wait
 * longer than any retention); an effect scope (one hop's markers) each time
 * a marker is added, so it lives the retention past its newest marker. TTLs
 * run on the Redis server's clock. Outputs, memory and checkpoints not yet
 * resumed are the run's context: kept until `forgetRun` deletes them (one
 * script: the run's `o`, `q`, `m`, `k` keys and every checkpoint `k` names),
 * which the Coordinator calls once the run has been over for the retention.
 * A hop that returns after its completion record expired runs again, but its
 * output is not appended a second time: the run's `q` set names the hops
 * whose output the list holds (as SQLite's unique idempotency key does;
 * outputs written before the set existed are not in it).
 *
 * `applyOnce` (effects written in the store's own SQLite transaction) has no
 * Redis counterpart: `effects.atomic` is refused on this store and handlers
 * use `effects.once` with `effects.key(...)` as the external idempotency key.
 */

/** The store's scripts, in `./scripts/*.lua` (each file's header declares its KEYS and ARGV), read on first use. */
interface ContextScripts {
  readonly complete: LuaScript;
  readonly effect: LuaScript;
  readonly forget: LuaScript;
  readonly hydrate: LuaScript;
  readonly memory: LuaScript;
}

let scripts: ContextScripts | undefined;

function contextScript(name: string): LuaScript {
  return luaScript(name, readLua(new URL(`./scripts/${name}`, import.meta.url)));
}

/** The Context Engine's scripts, read once on first use (never on the embedded path). */
function contextScripts(): ContextScripts {
  scripts ??= {
    complete: contextScript('complete.lua'),
    effect: contextScript('effect.lua'),
    forget: contextScript('forget.lua'),
    hydrate: contextScript('hydrate.lua'),
    memory: contextScript('memory.lua'),
  };
  return scripts;
}

/** Options of `createRedisContextStore`: the server URL, key prefix, clock, connect timeout and retention. */
export interface RedisContextStoreOptions extends ContextRetentionOptions {
  /** `redis://host:port[/db]` (default `redis://127.0.0.1:6379`). */
  url?: string;
  /** The deployment's key prefix, the bus's (default `switchboard`). */
  prefix?: string;
  /** The clock of retention (tests pass a fake one). */
  clock?: Clock;
  /** How long connecting may take before `createRedisContextStore` fails (default 5000 ms). */
  connectTimeoutMs?: number;
}

/** Memory updates as script arguments: `S key json` sets, `D key -` deletes. */
function memoryArgs(patch: Record<string, unknown>): string[] {
  const args: string[] = [];
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) args.push('D', key, '-');
    else args.push('S', key, toJson(value, `memory.${key}`));
  }
  return args;
}

/** A bad deployment prefix: refused as the Context Engine refuses any bad argument. */
function invalidPrefix(message: string): ContextStoreError {
  return new ContextStoreError('CONTEXT_INVALID_ARGUMENT', message);
}

interface StoredOutput {
  hop: number;
  role: string;
  taskId: string;
  idempotencyKey: string;
  parts: Part[];
  artifacts: Artifact[];
  usage?: Usage;
  recordedAt: number;
}

interface StoredCheckpoint {
  runId: string;
  taskId: string;
  hop: number;
  role: string;
  headers: WorkHeaders;
  state: unknown;
  createdAt: number;
}

/** The Context Engine on Redis: runs' outputs, memory, checkpoints and hop completions under the bus's key prefix. */
export class RedisContextStore implements ContextStore {
  readonly prefix: string;
  /** How long completion records, effect markers and resumed checkpoints live (their TTL). */
  readonly retentionMs: number;
  readonly #client: RedisClient;
  readonly #tag: string;
  readonly #clock: Clock;
  readonly #scripts = contextScripts();
  /** The hot paths' answers (scripts, the completion read) are waited for under these: one timer, not one a command. */
  readonly #timeouts = new CommandTimeouts();
  #closed = false;

  constructor(client: RedisClient, options: { prefix: string; clock?: Clock; retentionMs?: number }) {
    this.retentionMs = checkRetentionMs(options.retentionMs);
    this.#client = client;
    this.prefix = options.prefix;
    this.#tag = hashTag(options.prefix, invalidPrefix);
    this.#clock = options.clock ?? systemClock;
  }

  #key(kind: 'o' | 'q' | 'm' | 'c' | 'k' | 'd' | 'e', id: string): string {
    return `${this.#tag}:cx:${kind}:${id}`;
  }

  #run(script: keyof ContextScripts, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    return runScript(this.#client as unknown as ScriptConnection, this.#scripts[script], keys, args, this.#timeouts);
  }

  #assertOpen(): void {
    if (this.#closed) throw new ContextStoreError('CONTEXT_CLOSED', 'the context store is closed');
  }

  async hydrate(runId: string): Promise<WorkItemContext> {
    this.#assertOpen();
    const run = checkKey(runId, 'runId');
    // One script (one command, one round trip) reads both, atomically.
    const [outputs, flat] = (await this.#run('hydrate', [this.#key('o', run), this.#key('m', run)], [])) as [
      string[],
      string[],
    ];
    const memory: [string, string][] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) memory.push([flat[i]!, flat[i + 1]!]);
    return {
      runId: run,
      outputs: outputs.map((text): HopOutput => {
        const o = JSON.parse(text) as StoredOutput;
        return {
          runId: run,
          hop: o.hop,
          role: o.role,
          taskId: o.taskId,
          idempotencyKey: o.idempotencyKey,
          parts: o.parts,
          artifacts: o.artifacts,
          usage: o.usage,
          recordedAt: o.recordedAt,
        };
      }),
      memory: Object.fromEntries(
        memory.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => [k, JSON.parse(v) as unknown]),
      ),
    };
  }

  async updateMemory(runId: string, patch: Record<string, unknown>): Promise<void> {
    this.#assertOpen();
    const run = checkKey(runId, 'runId');
    const args = memoryArgs(checkPatch(patch));
    if (args.length === 0) return;
    await this.#run('memory', [this.#key('m', run)], args);
  }

  async checkpoint(token: string): Promise<Checkpoint | undefined> {
    this.#assertOpen();
    const t = checkKey(token, 'token');
    const row = await this.#client.hGetAll(this.#key('c', t));
    if (row.body === undefined) return undefined;
    const body = JSON.parse(row.body) as StoredCheckpoint;
    return {
      token: t,
      runId: body.runId,
      taskId: body.taskId,
      hop: body.hop,
      role: body.role,
      headers: body.headers,
      state: body.state,
      createdAt: body.createdAt,
      resumedAt: row.resumedAt === undefined ? undefined : Number(row.resumedAt),
    };
  }

  async completion(idempotencyKey: string): Promise<HopCompletion | undefined> {
    this.#assertOpen();
    const key = this.#key('d', checkKey(idempotencyKey, 'idempotencyKey'));
    const text = (await this.#timeouts.watch(() => this.#client.sendCommand(['GET', key], UNTIMED))) as string | null;
    return text === null ? undefined : (JSON.parse(text) as HopCompletion);
  }

  async complete(record: CompletionRecord): Promise<{ completion: HopCompletion; first: boolean }> {
    this.#assertOpen();
    const key = checkKey(record.idempotencyKey, 'idempotencyKey');
    const runId = checkKey(record.runId, 'runId');
    const memory = record.memory === undefined ? [] : memoryArgs(checkPatch(record.memory));
    const now = this.#clock.now();
    const completion: HopCompletion = {
      idempotencyKey: key,
      outcome: record.outcome,
      publishes: record.publishes,
      recordedAt: now,
    };
    const completionText = toJson(completion, 'publishes');
    const output =
      record.output === undefined
        ? ''
        : toJson(
            {
              hop: record.hop,
              role: record.role,
              taskId: record.taskId,
              idempotencyKey: key,
              parts: record.output.parts,
              artifacts: record.output.artifacts,
              ...(record.output.usage === undefined ? {} : { usage: record.output.usage }),
              recordedAt: now,
            } satisfies StoredOutput,
            'output',
          );
    const token = record.checkpoint === undefined ? undefined : checkKey(record.checkpoint.token, 'checkpoint token');
    const checkpoint =
      record.checkpoint === undefined
        ? ''
        : toJson(
            {
              runId,
              taskId: record.taskId,
              hop: record.hop,
              role: record.role,
              headers: record.checkpoint.headers,
              state: record.checkpoint.state,
              createdAt: now,
            } satisfies StoredCheckpoint,
            'checkpoint state',
          );
    const resumed = record.resumedToken === undefined ? undefined : checkKey(record.resumedToken, 'resumed token');
    const reply = (await this.#run(
      'complete',
      [
        this.#key('d', key),
        this.#key('o', runId),
        this.#key('m', runId),
        this.#key('c', token ?? key),
        this.#key('c', resumed ?? key),
        this.#key('k', runId),
        this.#key('q', runId),
      ],
      [
        completionText,
        output,
        checkpoint,
        String(now),
        resumed === undefined ? '0' : '1',
        String(this.retentionMs),
        ...memory,
      ],
    )) as [number, string];
    return { completion: JSON.parse(reply[1]) as HopCompletion, first: reply[0] === 1 };
  }

  async effect(scope: string, key: string): Promise<{ value: unknown } | undefined> {
    this.#assertOpen();
    const text = await this.#client.hGet(this.#key('e', checkKey(scope, 'effect scope')), checkKey(key, 'effect key'));
    return text === null || text === undefined ? undefined : { value: JSON.parse(text) as unknown };
  }

  async recordEffect(scope: string, key: string, value: unknown): Promise<boolean> {
    this.#assertOpen();
    const text = toJson(value, 'effect value');
    const added = await this.#run(
      'effect',
      [this.#key('e', checkKey(scope, 'effect scope'))],
      [checkKey(key, 'effect key'), text, String(this.retentionMs)],
    );
    return Number(added) === 1;
  }

  async forgetRun(runId: string): Promise<void> {
    this.#assertOpen();
    const run = checkKey(runId, 'runId');
    await this.#run('forget', [this.#key('o', run), this.#key('m', run), this.#key('k', run), this.#key('q', run)], []);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      await this.#client.quit();
    } catch {
      this.#client.destroy();
    }
    this.#timeouts.close();
  }
}

/** Connects and returns a Redis Context Engine; fails with `CONTEXT_BACKEND` when Redis cannot be reached in time. */
export async function createRedisContextStore(options: RedisContextStoreOptions = {}): Promise<RedisContextStore> {
  const url = options.url ?? 'redis://127.0.0.1:6379';
  const prefix = options.prefix ?? 'switchboard';
  hashTag(prefix, invalidPrefix);
  const retentionMs = checkRetentionMs(options.retentionMs);
  const timeout = options.connectTimeoutMs ?? 5000;
  const redis = await loadNodeRedis(
    'the Redis Context Engine store',
    (message, cause) => new ContextStoreError('CONTEXT_BACKEND', message, { cause }),
  );
  const client = createRedisClient(redis, { url, name: 'switchboard-context', connectTimeoutMs: timeout });
  client.on('error', () => {
    // node-redis reconnects by itself; calls made meanwhile fail at once.
  });
  try {
    await connectWithin(
      client,
      timeout,
      () => new ContextStoreError('CONTEXT_BACKEND', `could not connect to ${safeRedisUrl(url)} within ${timeout} ms`),
    );
  } catch (error) {
    if (error instanceof ContextStoreError) throw error;
    throw new ContextStoreError(
      'CONTEXT_BACKEND',
      `could not connect to ${safeRedisUrl(url)}: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
  return new RedisContextStore(client, {
    prefix,
    retentionMs,
    ...(options.clock === undefined ? {} : { clock: options.clock }),
  });
}
