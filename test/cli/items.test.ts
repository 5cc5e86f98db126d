import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Coordinator, createCoordinator } from '../../src/actors/coordinator/coordinator.js';
import { NonRetryableError, type WorkHandler, complete, suspend } from '../../src/actors/worker/worker.js';
import { SqliteQueue } from '../../src/bus/sqlite/queue.js';
import { COORDINATOR_SCHEMA } from '../../src/persistence/coordinator/sqlite-store.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import { migrate } from '../../src/persistence/kernel/migrations.js';
import type { ItemOutput } from '../../src/protocol/item-output.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import type { HopRecord, ItemRecord } from '../../src/workflow/records.js';
import { type TempDir, fingerprint, runCli, runJson, tempDir } from './helpers.js';

/**
 * `switchboard items list|show`: the real command, run beside a live
 * Coordinator on the same file (read-only, never migrating), then after it
 * closed (the file unchanged by the reads).
 */

const draftReview = parseWorkflowDefinition({
  id: 'draft-review',
  version: 1,
  title: 'draft, then review',
  start: 'draft',
  stages: {
    draft: { role: 'drafter', next: [{ on: 'succeeded', goto: 'review' }] },
    review: { role: 'reviewer', next: [{ on: 'succeeded', end: 'completed' }] },
  },
});
// `oracle` is a known role no pool serves: a question to it waits while the tests run.
const oracleDesk = parseWorkflowDefinition({
  id: 'oracle-desk',
  version: 1,
  title: 'the oracle',
  start: 'ask',
  stages: { ask: { role: 'oracle', next: [{ on: 'succeeded', end: 'completed' }] } },
});

const text = (parts: readonly { kind: string; text?: string }[]) => parts.map((p) => p.text ?? '').join(' ');

const roles: Record<string, WorkHandler> = {
  drafter: ({ message }) =>
    complete({
      parts: [{ kind: 'text', text: `a draft of ${text(message.parts)}` }],
      usage: { inputTokens: 100, outputTokens: 20, costUsd: 0.01, model: 'm-draft' },
    }),
  reviewer: ({ message }) => {
    const request = text(message.parts);
    if (request.includes('reject')) throw new NonRetryableError('the draft contradicts itself', { type: 'Rejected' });
    if (request.includes('ask')) {
      return suspend({
        ask: { role: 'oracle', message: { role: 'agent', parts: [{ kind: 'text', text: 'is it true?' }] } },
        state: {},
      });
    }
    return complete({
      parts: [{ kind: 'text', text: `reviewed: ${request}\nship it` }],
      artifacts: [{ artifactId: 'review-report', name: 'report', parts: [{ kind: 'data', data: { nits: 2 } }] }],
      usage: { inputTokens: 300, outputTokens: 40, costUsd: 0.03, model: 'm-review' },
    });
  },
};

interface ItemJson extends ItemRecord {
  elapsedMs: number;
}

describe('switchboard items', () => {
  let tmp: TempDir;
  let path: string;
  let coordinator: Coordinator | undefined;
  const ids = { done: '', failed: '', waiting: '' };
  beforeAll(async () => {
    tmp = tempDir();
    path = tmp.file('switchboard.db');
    coordinator = await createCoordinator({
      path,
      definitions: [draftReview, oracleDesk],
      deployments: Object.fromEntries(
        Object.entries(roles).map(([role, handler]) => [
          role,
          {
            handler,
            deployment: { minReplicas: 1, maxReplicas: 1, idleTimeoutMs: 1_000, concurrency: 2 },
            observeIntervalMs: 10,
            pollWaitMs: 50,
          },
        ]),
      ),
    });
    ids.done = await coordinator.createWorkItem({ workflow: 'draft-review', input: 'the launch post' });
    ids.failed = await coordinator.createWorkItem({ workflow: 'draft-review', input: 'reject this' });
    ids.waiting = await coordinator.createWorkItem({ workflow: 'draft-review', input: 'ask the oracle' });
    await coordinator.settled(ids.done, { timeoutMs: 20_000 });
    await coordinator.settled(ids.failed, { timeoutMs: 20_000 });
    const deadline = Date.now() + 10_000;
    while ((await coordinator.getItem(ids.waiting))?.state !== 'suspended' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
    }
    expect((await coordinator.getItem(ids.waiting))?.state).toBe('suspended');
  }, 30_000);
  afterAll(async () => {
    await coordinator?.close();
    tmp.cleanup();
  });

  it('lists every item beside the running Coordinator: state, workflow, stage, hops, cost, output', async () => {
    const { code, json } = await runJson<{ total: number; items: ItemJson[] }>(['items', 'list', '--db', path]);
    expect(code).toBe(0);
    expect(json.total).toBe(3);
    expect(json.items.map((i) => [i.id, i.state])).toEqual([
      [ids.done, 'completed'],
      [ids.failed, 'failed'],
      [ids.waiting, 'suspended'],
    ]);
    for (const item of json.items) {
      const live = (await coordinator!.getItem(item.id))!;
      const { elapsedMs, ...record } = item;
      expect(record).toEqual(live);
      if (live.finishedAt !== null) expect(elapsedMs).toBe(live.finishedAt - live.createdAt);
      else expect(elapsedMs).toBeGreaterThanOrEqual(0);
    }
    const done = json.items[0]!.output as ItemOutput;
    expect(done).toMatchObject({ state: 'completed', stage: 'review', role: 'reviewer' });
    expect(json.items[1]!.output).toMatchObject({
      state: 'failed',
      code: 'NON_RETRYABLE',
      error: { type: 'Rejected' },
    });
    expect(json.items[2]!.output).toBeNull();

    const table = await runCli(['items', 'list', '--db', path]);
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^work item\s+state\s+workflow\s+stage\s+hops\s+tokens\s+cost\s+elapsed\s+output$/);
    expect(lines).toHaveLength(5);
    expect(lines[2]).toMatch(
      new RegExp(
        `^${ids.done}\\s+completed\\s+draft-review@1\\s+review\\s+2\\s+460\\s+\\$0\\.0400\\s+\\d+ ms\\s+reviewed: the launch post ship it \\(\\+1 artifact\\)$`,
      ),
    );
    expect(lines[3]).toMatch(new RegExp(`^${ids.failed}\\s+failed\\s+.*NON_RETRYABLE: hop 2 \\(review\\) failed`));
    expect(lines[4]).toMatch(new RegExp(`^${ids.waiting}\\s+suspended\\s+.*\\s-$`));
  });

  it('filters by --state and bounds by --limit', async () => {
    const failed = await runJson<{ total: number; items: ItemJson[] }>([
      'items',
      'list',
      '--db',
      path,
      '--state',
      'failed',
    ]);
    expect(failed.json.total).toBe(1);
    expect(failed.json.items.map((i) => i.id)).toEqual([ids.failed]);
    const none = await runCli(['items', 'list', '--db', path, '--state', 'canceled']);
    expect(none.code).toBe(0);
    expect(none.stdout).toBe('No work items in state canceled.\n');
    const one = await runCli(['items', 'list', '--db', path, '--limit', '1']);
    expect(one.stdout).toContain(ids.done);
    expect(one.stdout).not.toContain(ids.failed);
    expect(one.stdout).toContain('Showing 1 of 3 (--limit N).');
  });

  it('shows one item: its record, its hops and its whole output', async () => {
    const { code, json } = await runJson<{ item: ItemJson; hops: HopRecord[] }>([
      'items',
      'show',
      ids.done,
      '--db',
      path,
    ]);
    expect(code).toBe(0);
    const { elapsedMs, ...record } = json.item;
    expect(record).toEqual(await coordinator!.getItem(ids.done));
    expect(json.hops).toEqual(await coordinator!.listHops(ids.done));

    const shown = await runCli(['items', 'show', ids.done, '--db', path]);
    expect(shown.code).toBe(0);
    const out = shown.stdout;
    expect(out).toContain(`Work item ${ids.done}`);
    expect(out).toMatch(/state: +completed/);
    expect(out).toMatch(/workflow: +draft-review@1/);
    expect(out).toMatch(/usage: +400 in \/ 60 out tokens, \$0\.0400/);
    expect(out).toMatch(/Hops \(2\):/);
    expect(out).toMatch(/2 +2 +stage +review +reviewer +completed +m-review +340 +\$0\.0300/);
    expect(out).toContain(
      'Output (completed at stage review, hop 2, by reviewer):\n  reviewed: the launch post\n  ship it\n',
    );
    expect(out).toContain('Artifacts (1):\n  review-report (report):\n    {"nits":2}');

    const failed = await runCli(['items', 'show', ids.failed, '--db', path]);
    expect(failed.stdout).toMatch(
      /Output \(failed at stage review, hop 2\):\n {2}code: +NON_RETRYABLE\n {2}message: +hop 2/,
    );
    expect(failed.stdout).toMatch(/hop error: +Rejected: the draft contradicts itself/);
    const waiting = await runCli(['items', 'show', ids.waiting, '--db', path]);
    expect(waiting.stdout).toMatch(/state: +suspended/);
    expect(waiting.stdout).toMatch(/elapsed: +.* \(running\)/);
    expect(waiting.stdout).toContain('Output: none yet (the item has not ended)');
  });

  it('names an unknown item and an unreadable database with exit 1; bad usage exits 2', async () => {
    const unknown = await runCli(['items', 'show', 'no-such-item', '--db', path]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain(`switchboard items: no work item no-such-item in ${path}`);
    expect(unknown.stdout).toBe('');

    const missing = tmp.file('missing.db');
    const noFile = await runCli(['items', 'list', '--db', missing]);
    expect(noFile.code).toBe(1);
    expect(noFile.stderr).toBe(`switchboard items: no database at ${missing} (the file does not exist)\n`);
    const junk = tmp.file('junk.db');
    writeFileSync(junk, 'not a database at all, just some text that is long enough to not be empty');
    const notSqlite = await runCli(['items', 'list', '--db', junk]);
    expect(notSqlite.code).toBe(1);
    expect(notSqlite.stderr).toContain(`cannot read ${junk} as a switchboard database`);
    const busOnly = tmp.file('bus-only.db');
    await new SqliteQueue({ database: busOnly }).close();
    const noTables = await runCli(['items', 'show', 'x', '--db', busOnly]);
    expect(noTables.code).toBe(1);
    expect(noTables.stderr).toContain("holds no Coordinator tables (no 'coordinator' schema)");
    // A file of an older Coordinator schema is not migrated by a reader, nor is it touched.
    const older = tmp.file('older.db');
    const db = openDatabase(older);
    migrate(db, { ...COORDINATOR_SCHEMA, current: 5, migrations: COORDINATOR_SCHEMA.migrations.slice(0, 5) });
    db.close();
    const untouched = fingerprint(older);
    const old = await runCli(['items', 'list', '--db', older]);
    expect(old.code).toBe(1);
    expect(old.stderr).toContain(
      `database schema for coordinator is version 5, older than this switchboard reads (${COORDINATOR_SCHEMA.current})`,
    );
    expect(old.stderr).toContain('switchboard coordinator --db PATH');
    expect(fingerprint(older)).toBe(untouched);

    for (const [args, message] of [
      [['items'], "missing subcommand: 'list' or 'show ID'"],
      [['items', 'list'], '--db PATH is required'],
      [['items', 'show', '--db', path], 'show needs a work item id'],
      [['items', 'list', '--db', path, '--state', 'done'], '--state must be one of pending, running'],
      [['items', 'show', ids.done, '--db', path, '--limit', '2'], '--state, --limit and --tree are for list'],
      [['items', 'drop', '--db', path], "unknown subcommand 'drop'"],
    ] as [string[], string][]) {
      const r = await runCli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toContain(message);
      expect(r.stderr).toContain('Usage: switchboard items list');
    }
  });

  it('leaves the file as it was (after the Coordinator closed)', async () => {
    await coordinator!.close();
    coordinator = undefined;
    const before = fingerprint(path);
    expect((await runCli(['items', 'list', '--db', path])).code).toBe(0);
    expect((await runCli(['items', 'show', ids.done, '--db', path, '--json'])).code).toBe(0);
    expect(fingerprint(path)).toBe(before);
  });
});
