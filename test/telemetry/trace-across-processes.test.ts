import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createClient } from 'redis';
import { afterEach, describe, expect, it } from 'vitest';
import { type Proc, isLog, readItems, runCli, startCli, terminate, until } from '../scaleout/processes.js';
import { REDIS_URL, redisGate } from '../redis-availability.js';

/**
 * One work item of the dev-sdlc workflow (a query that suspends a hop and
 * resumes it, a testing loop, an approval gate) through a Coordinator process
 * and a worker process on Redis, each with the OpenTelemetry SDK loaded by
 * `NODE_OPTIONS=--import` (test/telemetry/fixtures/otel-setup.mjs, spans as
 * JSON lines): the item yields ONE trace, rooted at `createWorkItem`, whose
 * spans cover every hop in both processes with every parent link intact, and
 * no attribute of any span carries the item's input or a capability token.
 */

const { runRedis } = await redisGate();
const SETUP = new URL('./fixtures/otel-setup.mjs', import.meta.url).pathname;
/** A broker capability token: 32 random bytes, base64url. */
const TOKEN_PATTERN = /[A-Za-z0-9_-]{43}/;

interface SpanLine {
  pid: number;
  name: string;
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  startMs: number;
  endMs: number;
  status: { code: number; message?: string };
  attributes: Record<string, unknown>;
  events: { name: string; attributes: Record<string, unknown> }[];
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function track(proc: Proc): Proc {
  cleanups.push(async () => {
    if (proc.child.exitCode === null && proc.child.signalCode === null) {
      proc.child.kill('SIGKILL');
      await proc.exited;
    }
  });
  return proc;
}

function readSpans(file: string): SpanLine[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as SpanLine);
}

describe.runIf(runRedis)('one trace across a Coordinator process and a worker process on Redis', () => {
  it('every hop of one work item is one trace with intact parent links, and no body or token in any attribute', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-otel-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const db = join(dir, 'coordinator.db');
    const coordinatorSpans = join(dir, 'coordinator-spans.jsonl');
    const workerSpans = join(dir, 'worker-spans.jsonl');
    const prefix = `otel-${randomUUID().slice(0, 8)}`;
    const redis = createClient({ url: REDIS_URL });
    redis.on('error', () => undefined);
    await redis.connect();
    cleanups.push(async () => {
      const keys: string[] = [];
      for await (const batch of redis.scanIterator({ MATCH: `{${prefix}}*`, COUNT: 1000 })) keys.push(...batch);
      if (keys.length > 0) await redis.del(keys);
      await redis.close();
    });
    const bus = ['--bus', REDIS_URL, '--bus-prefix', prefix];
    const traced = (file: string) => ({ NODE_OPTIONS: `--import=${SETUP}`, SB_OTEL_SPANS: file });

    const coordinator = track(
      startCli(
        'coordinator',
        ['coordinator', '--db', db, ...bus, '--auto-approve', 'release-manager', '--log-level', 'info'],
        traced(coordinatorSpans),
      ),
    );
    await coordinator.waitForLine(isLog('coordinator ready'), 30_000, { seen: true });
    const roles = ['architect', 'coding', 'testing', 'devops'].flatMap((r) => ['--role', r]);
    const worker = track(
      startCli('worker', ['worker', ...bus, ...roles, '--handler', 'demo', '--log-level', 'warn'], traced(workerSpans)),
    );

    const marker = `secret-marker-${randomUUID()}`;
    const input = `Add rate limiting to the public API (${marker})`;
    const submitted = await runCli([
      'submit',
      ...bus,
      '--workflow',
      'dev-sdlc',
      '--input',
      input,
      '--id',
      `req-${prefix}`,
    ]);
    expect(submitted.code, submitted.stderr).toBe(0);
    await until(
      () => readItems(db).some((i) => i.state === 'completed'),
      90_000,
      () => JSON.stringify(readItems(db)),
    );
    // Stopped gracefully: every span still open (the last publishes, the mirror's calls) ends and is written.
    expect((await terminate(worker)).code).toBe(0);
    expect((await terminate(coordinator)).code).toBe(0);

    const items = readItems(db);
    expect(items).toHaveLength(1);
    const itemId = items[0]!.id;
    const all = [...readSpans(coordinatorSpans), ...readSpans(workerSpans)];
    const roots = all.filter(
      (s) => s.name === 'switchboard.item.create' && s.attributes['switchboard.item.id'] === itemId,
    );
    expect(roots).toHaveLength(1);
    const root = roots[0]!;
    expect(root.parentSpanId).toBeNull();
    const spans = all.filter((s) => s.traceId === root.traceId);

    // One root; every other span's parent is a span of the same trace.
    const ids = new Set(spans.map((s) => s.spanId));
    expect(ids.size).toBe(spans.length);
    expect(spans.filter((s) => s.parentSpanId === null)).toEqual([root]);
    const orphans = spans.filter((s) => s.parentSpanId !== null && !ids.has(s.parentSpanId));
    expect(orphans.map((s) => s.name)).toEqual([]);
    // Every span of the item's work is in it: nothing of this item started a trace of its own.
    const elsewhere = all.filter((s) => s.traceId !== root.traceId && s.attributes['switchboard.item.id'] === itemId);
    expect(elsewhere.map((s) => s.name)).toEqual([]);

    // Both processes are in the trace.
    const pids = new Set(spans.map((s) => s.pid));
    expect(pids).toEqual(new Set([coordinator.child.pid, worker.child.pid]));

    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const parentOf = (s: SpanLine) => (s.parentSpanId === null ? undefined : byId.get(s.parentSpanId));
    const named = (name: string) => spans.filter((s) => s.name === name);

    // The Coordinator's decisions: the creation under the root, results, the approval.
    const decisions = named('switchboard.decision');
    const inputs = new Set(decisions.map((s) => s.attributes['switchboard.decision.input']));
    expect(inputs).toContain('create');
    expect(inputs).toContain('result');
    const create = decisions.find((s) => s.attributes['switchboard.decision.input'] === 'create')!;
    expect(create.parentSpanId).toBe(root.spanId);
    for (const d of decisions) expect(d.attributes['switchboard.item.id']).toBe(itemId);
    // Governance: one span per policy per hop, under a decision.
    const checks = named('switchboard.governance.check');
    expect(checks.length).toBeGreaterThan(0);
    for (const c of checks) {
      expect(parentOf(c)?.name).toBe('switchboard.decision');
      expect(typeof c.attributes['switchboard.policy.name']).toBe('string');
      expect(['allow', 'deny', 'require-approval']).toContain(c.attributes['switchboard.policy.verdict']);
    }

    // Every hop: published by the Coordinator after its commit, consumed, handled and answered by the
    // worker, applied by the Coordinator.
    const hopRows = new Database(db, { readonly: true })
      .prepare('SELECT role, hop, attempt, kind FROM coord_hops WHERE item_id = ? ORDER BY seq')
      .all(itemId) as { role: string; hop: number; attempt: number; kind: string }[];
    expect(hopRows.length).toBeGreaterThanOrEqual(5);
    const publishes = named('switchboard.hop.publish');
    const consumes = named('switchboard.hop.consume');
    for (const p of publishes) {
      expect(p.pid).toBe(coordinator.child.pid);
      expect(parentOf(p)?.name).toMatch(/^switchboard\.(decision|item\.create)$/);
    }
    for (const c of consumes) {
      expect(c.pid).toBe(worker.child.pid);
      expect(parentOf(c)?.name).toBe('switchboard.hop.publish');
      expect(parentOf(c)?.pid).toBe(coordinator.child.pid);
    }
    // Each stage hop's publish was consumed (a query and the reply resuming its hop are publishes too).
    for (const hop of hopRows.filter((h) => h.kind === 'stage')) {
      const published = publishes.filter(
        (p) =>
          p.attributes['switchboard.publish.kind'] === 'start' &&
          p.attributes['switchboard.role'] === hop.role &&
          p.attributes['switchboard.hop'] === hop.hop,
      );
      expect(published.length, `hop ${hop.hop} (${hop.role})`).toBeGreaterThan(0);
      const consumed = consumes.filter((c) => published.some((p) => c.parentSpanId === p.spanId));
      expect(consumed.length, `hop ${hop.hop} (${hop.role}) consumed`).toBeGreaterThan(0);
    }
    const replies = publishes.filter((p) => p.attributes['switchboard.publish.kind'] === 'reply');
    expect(replies.length).toBeGreaterThan(0);
    const handles = named('switchboard.hop.handle');
    const results = named('switchboard.hop.result');
    const applies = named('switchboard.hop.apply');
    expect(handles.length).toBe(consumes.length);
    for (const h of handles) expect(parentOf(h)?.name).toBe('switchboard.hop.consume');
    // Each delivery ends in a result span, but a hop that failed (retried or dead-lettered: the queue publishes its failure).
    const outcomes = consumes.map((c) => c.attributes['switchboard.hop.outcome']);
    expect(results.length, JSON.stringify(outcomes)).toBe(outcomes.filter((o) => o !== 'failed').length);
    for (const r of results) {
      expect(parentOf(r)?.name).toBe('switchboard.hop.consume');
      expect(applies.some((a) => a.parentSpanId === r.spanId)).toBe(true);
    }
    for (const a of applies) {
      expect(a.pid).toBe(coordinator.child.pid);
      // A dead-lettered hop's failure result is published by the queue with the work's own trace fields.
      const expected =
        a.attributes['switchboard.hop.outcome'] === 'failed' ? 'switchboard.hop.publish' : 'switchboard.hop.result';
      expect(parentOf(a)?.name).toBe(expected);
      expect(decisions.some((d) => d.parentSpanId === a.spanId)).toBe(true);
    }
    expect(new Set(results.map((r) => r.attributes['switchboard.hop.outcome']))).toEqual(
      new Set(['completed', 'suspended']),
    );
    // The broker calls of the item's mirror are in the trace too.
    const calls = named('switchboard.broker.call');
    expect(new Set(calls.map((c) => c.attributes['rpc.method']))).toContain('a2a.message.send');

    // The hop tasks in the broker carry the item's trace in their first message's metadata.
    const broker = new Database(db, { readonly: true });
    const bodies = broker
      .prepare('SELECT body FROM a2a_messages WHERE body LIKE \'%"hopId"%\'')
      .all()
      .map((r) => JSON.parse((r as { body: string }).body) as { metadata?: Record<string, unknown> });
    broker.close();
    expect(bodies.length).toBe(hopRows.length);
    for (const body of bodies) {
      expect(body.metadata?.traceparent).toMatch(new RegExp(`^00-${root.traceId}-${root.spanId}-0[01]$`));
    }

    // Nothing recorded carries the input, a body or a token: every attribute and event of every span.
    const values: string[] = [];
    for (const s of all) {
      for (const [k, v] of Object.entries(s.attributes)) values.push(k, String(v));
      for (const e of s.events) for (const [k, v] of Object.entries(e.attributes)) values.push(k, String(v));
      if (s.status.message !== undefined) values.push(s.status.message);
    }
    expect(values.length).toBeGreaterThan(0);
    for (const v of values) {
      expect(v).not.toContain(marker);
      expect(v).not.toContain('rate limiting');
      expect(v.toLowerCase()).not.toContain('token');
      for (const piece of v.split(/[/:]/)) expect(piece).not.toMatch(TOKEN_PATTERN);
    }
  }, 180_000);
});
