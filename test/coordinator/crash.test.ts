import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteCoordinatorStore } from '../../src/persistence/coordinator/sqlite-store.js';
import { AuditLog } from '../../src/persistence/audit/sqlite-chain.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import { tempDir, until } from './helpers.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const fixture = join(here, 'fixtures', 'coordinator-process.ts');

interface Child {
  child: ChildProcess;
  lines: string[];
  exited: Promise<number | null>;
}

function start(path: string, ...args: string[]): Child {
  const child = spawn(process.execPath, ['--import', 'tsx', fixture, path, ...args], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: string[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => lines.push(line));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, lines, exited };
}

function completedHops(path: string): number {
  if (!existsSync(path)) return 0;
  const db = openDatabase(path, { readonly: true });
  try {
    const row = db.prepare("SELECT count(*) AS n FROM coord_hops WHERE state IN ('completed', 'failed')").get() as {
      n: number;
    };
    return row.n;
  } catch {
    return 0;
  } finally {
    db.close();
  }
}

/** What a recovery that does not finish is waiting for: unfinished items and hops, unsettled bus jobs. */
function stuckState(path: string, lines: string[]): string {
  const db = openDatabase(path, { readonly: true });
  try {
    const q = (sql: string) => JSON.stringify(db.prepare(sql).all());
    return [
      'the restarted Coordinator did not finish within 60 s',
      `its output: ${lines.slice(-5).join(' | ')}`,
      `items: ${q("SELECT id, state FROM coord_items WHERE state NOT IN ('completed')")}`,
      `hops: ${q("SELECT id, item_id, hop, kind, role, state FROM coord_hops WHERE state NOT IN ('completed', 'failed')")}`,
      `bus: ${q("SELECT role, state, deliveries, last_error FROM bus_jobs WHERE state <> 'done'")}`,
      `outbox: ${q('SELECT count(*) AS n FROM coord_outbox')}`,
    ].join('\n');
  } catch (error) {
    return `the restarted Coordinator did not finish within 60 s (state unreadable: ${String(error)})`;
  } finally {
    db.close();
  }
}

describe('a Coordinator process killed mid-run', () => {
  const children: Child[] = [];
  let dir: string | undefined;
  afterEach(async () => {
    for (const c of children.splice(0)) {
      if (c.child.exitCode === null && c.child.signalCode === null) {
        c.child.kill('SIGKILL');
        await c.exited;
      }
    }
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  // Killed twice, so a hop can die between its dead-letter move and its failure result: the queue
  // publishes that result in the move itself (dead-letter-notice.ts), or the item would never finish.
  it('finishes every item after a restart on the same file, no hop lost or applied twice', {
    timeout: 150_000,
  }, async () => {
    dir = tempDir();
    const path = join(dir, 'switchboard.db');
    const items = 3;
    // Killed twice: early (first hops out) and later (suspensions, failures and gates in flight).
    const first = start(path, 'create', String(items));
    children.push(first);
    await until(() => completedHops(path) >= 4, 30_000, 'hops before the first kill');
    first.child.kill('SIGKILL');
    await first.exited;

    const second = start(path, 'resume');
    children.push(second);
    await until(() => second.lines.some((l) => l.includes('"ready"')), 30_000, 'the second process');
    // It found live runs to restore (the kill landed mid-run).
    const ready = JSON.parse(second.lines.find((l) => l.includes('"ready"'))!) as { restored: number };
    expect(ready.restored).toBeGreaterThan(0);
    const killedAt = completedHops(path);
    await until(() => completedHops(path) >= killedAt + 5, 30_000, 'hops before the second kill');
    second.child.kill('SIGKILL');
    await second.exited;

    const third = start(path, 'resume');
    children.push(third);
    const code = await Promise.race([third.exited, new Promise<'stuck'>((r) => setTimeout(() => r('stuck'), 60_000))]);
    // A stuck recovery fails with the state it is stuck in.
    expect(code, code === 'stuck' ? stuckState(path, third.lines) : '').toBe(0);
    expect(third.lines.at(-1)).toBe('{"done":true}');

    const db = openDatabase(path);
    try {
      const store = new SqliteCoordinatorStore(db);
      const all = store.listItems();
      expect(all).toHaveLength(items);
      const effects = new Map(
        (db.prepare('SELECT key, n FROM fixture_effects').all() as { key: string; n: number }[]).map((r) => [
          r.key,
          r.n,
        ]),
      );
      const expectedKeys = new Set<string>();
      for (const item of all) {
        expect(item.state).toBe('completed');
        const hops = store.listHops(item.id);
        // The same path as an uninterrupted run: nothing dispatched twice, nothing lost.
        expect(hops.map((h) => `${h.kind}:${h.role}:${h.state}`)).toEqual([
          'stage:architect:completed',
          'stage:coding:completed',
          'query:architect:completed',
          'stage:testing:failed',
          'stage:coding:completed',
          'stage:testing:completed',
          'stage:devops:completed',
        ]);
        for (const h of hops) {
          expectedKeys.add(h.idempotencyKey);
          if (h.kind === 'query') expectedKeys.add(`${store.getHop(h.askedBy!)!.idempotencyKey}#resume`);
        }
        // Cost accrued once per result: the rollup equals its rows.
        const rows = store.usageRows({ itemId: item.id });
        expect(rows.reduce((s, r) => s + r.inputTokens + r.outputTokens, 0)).toBe(
          item.usage.inputTokens + item.usage.outputTokens,
        );
        expect(rows).toHaveLength(hops.length + 1);
        const audit = new AuditLog(db).list({ itemId: item.id });
        expect(audit.filter((r) => r.kind === 'dispatch')).toHaveLength(hops.length);
        expect(audit.filter((r) => r.kind === 'cost')).toHaveLength(hops.length + 1);
        expect(audit.filter((r) => r.kind === 'item-completed')).toHaveLength(1);
      }
      // Every hop's effect applied exactly once, and no effect of a hop the Coordinator does not know.
      expect(new Set(effects.keys())).toEqual(expectedKeys);
      for (const [key, n] of effects) expect(`${key}:${n}`).toBe(`${key}:1`);
      expect(new AuditLog(db).verifyChain().ok).toBe(true);
      expect(db.prepare('SELECT count(*) AS n FROM coord_outbox').get()).toEqual({ n: 0 });
    } finally {
      db.close();
    }
  });
});
