import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { type Proc, isLog, runCli, startCli } from '../scaleout/processes.js';

/**
 * `submit`, `approve` and `items cancel|retry` against a real Coordinator
 * process on a SQLite file (its embedded bus): what they refuse before
 * sending, what they print, and what the Coordinator then does.
 */

const dirs: string[] = [];
const procs: Proc[] = [];
afterEach(async () => {
  for (const p of procs.splice(0)) {
    p.child.kill('SIGKILL');
    await p.exited;
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function coordinator(extra: string[] = []): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-item-controls-'));
  dirs.push(dir);
  const db = join(dir, 'c.db');
  const p = startCli('coordinator', ['coordinator', '--db', db, '--local-workers', '--log-level', 'info', ...extra]);
  procs.push(p);
  await p.waitForLine(isLog('coordinator ready'), 60_000, { seen: true });
  return db;
}

async function itemState(db: string, id: string): Promise<Record<string, unknown>> {
  const r = await runCli(['items', 'show', id, '--db', db, '--json']);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { item: Record<string, unknown> }).item;
}

describe('submit, approve, items cancel and retry on SQLite', () => {
  it('refuses a --db that names no database, and creates none', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-item-controls-'));
    dirs.push(dir);
    const typo = join(dir, 'typo.db');
    for (const argv of [
      ['submit', '--db', typo, '--workflow', 'dev-sdlc', '--input', 'x'],
      ['approve', '--db', typo, '--item', 'i', '--approver', 'a'],
      ['items', 'cancel', 'i', '--db', typo],
      ['items', 'retry', 'i', '--db', typo],
    ]) {
      const r = await runCli(argv);
      expect(r.code, argv.join(' ')).toBe(1);
      expect(r.stderr).toMatch(/no database at .*typo\.db/);
      expect(existsSync(typo)).toBe(false);
    }
  }, 60_000);

  it('submit --wait prints the item id and its output; refusals say what to do', async () => {
    const db = await coordinator(['--auto-approve', 'release-manager']);
    const unknown = await runCli(['submit', '--db', db, '--workflow', 'no-such', '--input', 'x']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no workflow 'no-such'.*serves .*dev-sdlc.*nothing was sent/);

    const r = await runCli(
      [
        'submit',
        '--db',
        db,
        '--workflow',
        'dev-sdlc',
        '--input',
        'Add a health check',
        '--id',
        'w1',
        '--wait',
        '--timeout',
        '120000',
      ],
      { timeoutMs: 150_000 },
    );
    expect(r.code, r.stderr).toBe(0);
    const [first, second] = r.stdout.split('\n');
    expect(first).toMatch(/^w1 \S+$/);
    expect(second).toMatch(/^work item \S+ completed$/);
    expect(r.stdout).toMatch(/Output \(completed/);
    const itemId = first!.split(' ')[1]!;
    expect((await itemState(db, itemId)).state).toBe('completed');

    // The same id again: the same item, a duplicate.
    const again = await runCli(['submit', '--db', db, '--workflow', 'dev-sdlc', '--input', 'x', '--id', 'w1']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout.trim()).toBe(`w1 ${itemId} duplicate`);

    const approveUnknown = await runCli(['approve', '--db', db, '--item', 'nope', '--approver', 'release-manager']);
    expect(approveUnknown.code).toBe(1);
    expect(approveUnknown.stderr).toMatch(/no work item nope.*nothing was sent/);

    const cancelEnded = await runCli(['items', 'cancel', itemId, '--db', db]);
    expect(cancelEnded.code, cancelEnded.stderr).toBe(0);
    expect(cancelEnded.stdout).toMatch(/already ended completed: nothing to cancel/);

    const retryCompleted = await runCli(['items', 'retry', itemId, '--db', db]);
    expect(retryCompleted.code).toBe(1);
    expect(retryCompleted.stderr).toMatch(/not failed.*nothing was sent/);
  }, 240_000);

  it('approve refuses a wrong approver; a denied item is retried from a stage; items cancel cancels it, audited', async () => {
    const db = await coordinator();
    const s = await runCli(['submit', '--db', db, '--workflow', 'dev-sdlc', '--input', 'Rotate keys', '--id', 'g1']);
    expect(s.code, s.stderr).toBe(0);
    const itemId = s.stdout.trim().split(' ')[1]!;
    expect(itemId).toBeDefined();
    await until(db, itemId, 'awaiting-approval');
    const wrong = await runCli(['approve', '--db', db, '--item', itemId, '--approver', 'mallory']);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/mallory is not an approver.*its approvers are .*nothing was sent/);
    const deny = await runCli(['approve', '--db', db, '--item', itemId, '--approver', 'release-manager', '--deny']);
    expect(deny.code, deny.stderr).toBe(0);
    await until(db, itemId, 'failed');

    const badStage = await runCli(['items', 'retry', itemId, '--db', db, '--from', 'nowhere']);
    expect(badStage.code).toBe(1);
    expect(badStage.stderr).toMatch(/has no stage "nowhere": name one of .*devops.*nothing was sent/);
    const retry = await runCli(['items', 'retry', itemId, '--db', db, '--from', 'devops', '--by', 'ops-alice']);
    expect(retry.code, retry.stderr).toBe(0);
    const retried = /retried as (\S+) from stage devops/.exec(retry.stdout)?.[1];
    expect(retried).toBeDefined();
    const again = await runCli(['items', 'retry', itemId, '--db', db]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(`was retried already as ${retried}`);
    expect((await itemState(db, itemId)).state).toBe('failed');
    const fresh = await itemState(db, retried!);
    expect(fresh.attributes).toMatchObject({ 'switchboard.retry-of': itemId });
    // From devops: its gate at once, no earlier stage run.
    await until(db, retried!, 'awaiting-approval');
    expect((await itemState(db, retried!)).stage).toBe('devops');

    const c = await runCli(['items', 'cancel', retried!, '--db', db, '--by', 'ops-alice', '--reason', 'wrong ticket']);
    expect(c.code, c.stderr).toBe(0);
    expect(c.stdout).toMatch(`cancel of ${retried} sent`);
    await until(db, retried!, 'canceled');
    expect((await itemState(db, retried!)).output).toMatchObject({
      state: 'canceled',
      by: 'ops-alice',
      reason: 'wrong ticket',
    });
    const reading = new Database(db, { readonly: true });
    try {
      const row = reading
        .prepare("SELECT data FROM audit_log WHERE kind = 'item-canceled' AND item_id = ?")
        .get(retried) as { data: string };
      expect(JSON.parse(row.data).cancellation).toEqual({ by: 'ops-alice', reason: 'wrong ticket' });
    } finally {
      reading.close();
    }
  }, 600_000);
});

async function until(db: string, id: string, state: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if ((await itemState(db, id)).state === state) return;
    await new Promise((r) => setTimeout(r, 1000));
  }
  expect((await itemState(db, id)).state).toBe(state);
}
