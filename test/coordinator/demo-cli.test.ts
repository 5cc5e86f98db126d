import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteCoordinatorStore } from '../../src/persistence/coordinator/sqlite-store.js';
import { AuditLog } from '../../src/persistence/audit/sqlite-chain.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import { tempDir } from './helpers.js';
import { type NodeRun, runNode } from '../node-run.js';

/** `switchboard demo` as a user runs it (the built CLI: `npm test` builds first). */
const bin = new URL('../../bin/switchboard.js', import.meta.url).pathname;

function run(args: string[]): Promise<NodeRun> {
  return runNode([bin, ...args]);
}

describe('switchboard demo', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it('--json --approve: exit 0, only the summary on stdout, both items completed, the audit verified', async () => {
    dir = tempDir();
    const db = join(dir, 'demo.db');
    const { code, stdout } = await run(['demo', '--json', '--approve', '--db', db]);
    expect(code).toBe(0);
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const summary = JSON.parse(lines[0]!) as {
      items: { id: string; state: string; hops: number; costUsd: number; tokens: number; elapsedMs: number }[];
      audit: { ok: boolean; entries: number };
    };
    expect(Object.keys(summary)).toEqual(['items', 'audit']);
    expect(summary.items).toHaveLength(2);
    for (const item of summary.items) {
      expect(Object.keys(item)).toEqual(['id', 'state', 'hops', 'costUsd', 'tokens', 'elapsedMs']);
      expect(item).toMatchObject({ state: 'completed', hops: 7 });
      expect(item.costUsd).toBeGreaterThan(0);
      expect(item.tokens).toBeGreaterThan(0);
      expect(item.elapsedMs).toBeGreaterThan(0);
    }
    expect(summary.audit.ok).toBe(true);
    // The file it left behind says the same.
    const handle = openDatabase(db);
    try {
      const audit = new AuditLog(handle).verifyChain();
      expect(audit).toMatchObject({ ok: true, entries: summary.audit.entries });
      const store = new SqliteCoordinatorStore(handle);
      expect(store.listItems().map((i) => i.id)).toEqual(summary.items.map((i) => i.id));
      expect(store.listItems()[0]!.usage.costUsd).toBe(summary.items[0]!.costUsd);
    } finally {
      handle.close();
    }
  }, 60_000);

  it('--deny: both items end failed by the denial, exit 0 (the demo did what it was asked)', async () => {
    dir = tempDir();
    const { code, stdout } = await run(['demo', '--json', '--deny', '--db', join(dir, 'demo.db')]);
    expect(code).toBe(0);
    const summary = JSON.parse(stdout) as { items: { state: string; hops: number }[]; audit: { ok: boolean } };
    expect(summary.items.map((i) => i.state)).toEqual(['failed', 'failed']);
    expect(summary.items.map((i) => i.hops)).toEqual([6, 6]);
    expect(summary.audit.ok).toBe(true);
  }, 60_000);

  it('without a terminal or a flag: approves and says so; prints progress, the tables and the audit', async () => {
    dir = tempDir();
    const db = join(dir, 'demo.db');
    const { code, stdout } = await run(['demo', '--db', db]);
    expect(code).toBe(0);
    expect(stdout).toContain('the gate will be approved as release-manager');
    expect(stdout).toContain(`Database: ${db}`);
    expect(stdout).toMatch(/item A\s+hop 2\s+coding\s+asked architect and stood down/);
    expect(stdout).toMatch(/item B\s+hop 3\s+testing\s+failed: TestsFailed/);
    expect(stdout).toMatch(/approved by release-manager/);
    expect(stdout).toMatch(/Item A: .*\n.*completed, 7 hops/);
    expect(stdout).toMatch(/total .*\n {2}output: Deployed behind a flag to 5%, then 100%; error rate unchanged\.\n/);
    expect(stdout).toContain(`Read the items and their outputs back: switchboard items list --db ${db}`);
    expect(stdout).toMatch(/Audit: \d+ entries, hash chain verified/);
  }, 60_000);

  it('without --db: a fresh file in a temporary folder, named', async () => {
    const { code, stdout } = await run(['demo', '--approve']);
    expect(code).toBe(0);
    const path = /Database: (.+) \(a new file in a temporary folder\)/.exec(stdout)?.[1];
    expect(path).toBeDefined();
    expect(existsSync(path!)).toBe(true);
    rmSync(join(path!, '..'), { recursive: true, force: true });
  }, 60_000);

  it('refuses bad flags with exit 2', async () => {
    const both = await run(['demo', '--approve', '--deny']);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('not both');
    const unknown = await run(['demo', '--nope']);
    expect(unknown.code).toBe(2);
    const help = await run(['demo', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('switchboard demo [--workflow dev-sdlc|review-fanout]');
  }, 60_000);
});
