import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../postgres-availability.js';
import { REDIS_URL, deleteRedisPrefix } from '../redis-availability.js';
import { type Proc, isLog, runCli, startCli, terminate } from '../scaleout/processes.js';

/**
 * The same commands against a Coordinator on PostgreSQL with a Redis bus
 * (its control messages travel on Redis; the checks read PostgreSQL).
 */

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function itemOf(url: string, id: string): Promise<Record<string, unknown>> {
  const r = await runCli(['items', 'show', id, '--db', url, '--json']);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { item: Record<string, unknown> }).item;
}

async function until(url: string, id: string, state: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if ((await itemOf(url, id)).state === state) return;
    await new Promise((r) => setTimeout(r, 1000));
  }
  expect((await itemOf(url, id)).state).toBe(state);
}

describe('submit, approve, items cancel and retry on PostgreSQL and Redis', () => {
  it('checks before sending, waits, denies, retries and cancels', async () => {
    const database = await createTestDatabase('sb_itemctl');
    const prefix = `itemctl-${randomUUID().slice(0, 8)}`;
    cleanups.push(async () => {
      await deleteRedisPrefix(prefix);
      await database.drop();
    });
    const url = database.url;
    const bus = ['--bus', REDIS_URL, '--bus-prefix', prefix];
    const coordinator: Proc = startCli('coordinator', ['coordinator', '--db', url, ...bus, '--local-workers']);
    cleanups.push(async () => {
      await terminate(coordinator);
    });
    await coordinator.waitForLine(isLog('coordinator ready'), 60_000, { seen: true });

    const unknown = await runCli(['submit', ...bus, '--db', url, '--workflow', 'no-such', '--input', 'x']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no workflow 'no-such'.*serves .*dev-sdlc.*nothing was sent/);
    const noItem = await runCli(['approve', ...bus, '--db', url, '--item', 'nope', '--approver', 'release-manager']);
    expect(noItem.code).toBe(1);
    expect(noItem.stderr).toMatch(/no work item nope/);

    // --wait: the item waits at its gate past the timeout (nobody approves): exit 1, saying so.
    const waited = await runCli([
      'submit',
      ...bus,
      '--db',
      url,
      '--workflow',
      'dev-sdlc',
      '--input',
      'Rotate keys',
      '--id',
      'pg1',
      '--wait',
      '--timeout',
      '3000',
    ]);
    expect(waited.code).toBe(1);
    const itemId = /^pg1 (\S+)/.exec(waited.stdout)?.[1];
    expect(itemId, waited.stderr).toBeDefined();
    expect(waited.stderr).toMatch(/has not ended within 3000 ms/);
    await until(url, itemId!, 'awaiting-approval');

    const notApprover = await runCli(['approve', ...bus, '--db', url, '--item', itemId!, '--approver', 'mallory']);
    expect(notApprover.code).toBe(1);
    expect(notApprover.stderr).toMatch(/mallory is not an approver/);
    const deny = await runCli([
      'approve',
      ...bus,
      '--db',
      url,
      '--item',
      itemId!,
      '--approver',
      'release-manager',
      '--deny',
    ]);
    expect(deny.code, deny.stderr).toBe(0);
    await until(url, itemId!, 'failed');
    const notAwaiting = await runCli([
      'approve',
      ...bus,
      '--db',
      url,
      '--item',
      itemId!,
      '--approver',
      'release-manager',
    ]);
    expect(notAwaiting.code).toBe(1);
    expect(notAwaiting.stderr).toMatch(/already ended failed/);

    const retry = await runCli(['items', 'retry', itemId!, ...bus, '--db', url, '--from', 'devops']);
    expect(retry.code, retry.stderr).toBe(0);
    const retried = /retried as (\S+)/.exec(retry.stdout)?.[1];
    expect(retried).toBeDefined();
    await until(url, retried!, 'awaiting-approval');

    const cancel = await runCli([
      'items',
      'cancel',
      retried!,
      ...bus,
      '--db',
      url,
      '--by',
      'ops-bob',
      '--reason',
      'duplicate',
    ]);
    expect(cancel.code, cancel.stderr).toBe(0);
    await until(url, retried!, 'canceled');
    expect((await itemOf(url, retried!)).output).toMatchObject({ by: 'ops-bob', reason: 'duplicate' });
  }, 600_000);
});
