import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Coordinator } from '../../src/actors/coordinator/coordinator.js';
import { SHIPPED_WORKFLOWS_DIR, loadWorkflowFile } from '../../src/actors/coordinator/workflow-loader.js';
import type { WorkHandler } from '../../src/actors/worker/worker.js';
import { FANOUT_HANDLERS } from '../../src/demo/fanout-roles.js';
import { addRunUsage, type RunUsage, ZERO_RUN_USAGE } from '../../src/protocol/workflow.js';
import type { ItemRecord } from '../../src/workflow/records.js';
import { runNode } from '../node-run.js';
import { type Fixture, autoApprove, deployments, openFixture, tempDir } from './helpers.js';

/**
 * The second shipped workflow, review-fanout: a map over the architect's
 * tasks, security and QA in parallel, a condition on QA's verdict that sends
 * the work to a fix and back, an approval; every child a work item of its
 * own whose cost rolls up into its parent, the audit verified over the tree.
 */

const reviewFanout = loadWorkflowFile(join(SHIPPED_WORKFLOWS_DIR, 'review-fanout.json'));

/** The handlers, counting each call by role and request (an effect applied once is called once). */
function counted(calls: Map<string, number>): Record<string, WorkHandler> {
  const out: Record<string, WorkHandler> = {};
  for (const [role, handler] of Object.entries(FANOUT_HANDLERS)) {
    out[role] = (input) => {
      const key = `${role}:${input.headers.taskId}`;
      calls.set(key, (calls.get(key) ?? 0) + 1);
      return handler(input);
    };
  }
  return out;
}

function sum(items: readonly ItemRecord[], own: Map<string, RunUsage>): RunUsage {
  return items.reduce((s, i) => addRunUsage(s, own.get(i.id) ?? ZERO_RUN_USAGE), { ...ZERO_RUN_USAGE });
}

/** Checks a tree: every parent's rollup equals its own hops' usage plus its children's rollups. */
async function checkRollups(coordinator: Coordinator, root: string): Promise<ItemRecord[]> {
  const all = await coordinator.listItems();
  const tree = all.filter((i) => i.id === root || i.id.startsWith(`${root}.`));
  const own = new Map<string, RunUsage>();
  for (const item of tree) {
    const hops = await coordinator.listHops(item.id);
    own.set(
      item.id,
      hops.reduce((s, h) => addRunUsage(s, h.usage), { ...ZERO_RUN_USAGE }),
    );
  }
  for (const item of tree) {
    const children = tree.filter((c) => c.attributes?.['switchboard.parent'] === item.id);
    const expected = children.reduce((s, c) => addRunUsage(s, c.usage), own.get(item.id)!);
    expect(item.usage.inputTokens).toBe(expected.inputTokens);
    expect(item.usage.outputTokens).toBe(expected.outputTokens);
    expect(item.usage.costUsd).toBeCloseTo(expected.costUsd, 6);
  }
  // The root's rollup is the sum of every node's own usage.
  const total = sum(tree, own);
  expect(tree.find((i) => i.id === root)!.usage.inputTokens).toBe(total.inputTokens);
  return tree;
}

describe('review-fanout', () => {
  let f: Fixture | undefined;
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  it('maps, reviews in parallel, routes on the verdict, approves: each effect once, rollups equal sums, the audit verifies', async () => {
    const calls = new Map<string, number>();
    f = await openFixture({ definitions: [reviewFanout], deployments: deployments(counted(calls)) });
    const { coordinator } = f;
    const stop = autoApprove(coordinator);
    const id = await coordinator.createWorkItem({
      workflow: 'review-fanout',
      input: 'Add rate limiting to the public API',
      budget: { maxTokens: 200_000, maxCostUsd: 5 },
    });
    const done = await coordinator.settled(id);
    stop();
    expect(done.state).toBe('completed');
    const hops = await coordinator.listHops(id);
    expect(hops.map((h) => `${h.stage}/${h.role}:${h.state}`)).toEqual([
      'plan/architect:completed',
      'fix/coding:completed',
      'release/devops:completed',
    ]);
    const tree = await checkRollups(coordinator, id);
    // Three coding children (the plan's tasks, in order), two reviews of two branches each.
    const children = tree.filter((i) => i.id !== id);
    expect(children.map((c) => c.attributes?.['switchboard.branch']).sort()).toEqual(
      ['2:0', '2:1', '2:2', '3:qa', '3:security', '5:qa', '5:security'].sort(),
    );
    for (const c of children) {
      expect(c.state).toBe('completed');
      expect(c.attributes?.['switchboard.parent']).toBe(id);
      // Each child's budget is a carve of its parent's: no more than what the parent had left.
      expect(c.budget?.maxTokens).toBeLessThanOrEqual(200_000);
    }
    // Every hop's handler ran once (no effect applied twice).
    expect([...calls.values()].every((n) => n === 1)).toBe(true);
    expect(calls.size).toBe(3 + children.length);
    // The map's outputs, in the plan's order, went to the first review; QA's verdict was routed on.
    const rows = await coordinator.audit.list({ itemId: id });
    const route = rows.find((r) => r.kind === 'route');
    expect(route?.data).toMatchObject({
      stage: 'review',
      pointer: '/qa/verdict',
      read: 'changes-requested',
      to: 'fix',
    });
    expect(rows.filter((r) => r.kind === 'spawn')).toHaveLength(3);
    expect(rows.filter((r) => r.kind === 'child-settled')).toHaveLength(children.length);
    const verification = await coordinator.audit.verifyChain({ expectedHead: await coordinator.audit.head() });
    expect(verification.ok).toBe(true);
    // Each child's A2A task names its parent's task: the parent's task has the children's as child tasks.
    await coordinator.mirrored();
    const parent = (await coordinator.getItem(id))!;
    if (coordinator.broker !== undefined && parent.taskId !== null) {
      for (const c of children) {
        const me = await coordinator.broker.register({ name: 'edge', contextId: c.id, kind: 'parent' });
        const { task } = await coordinator.broker.getTask({ token: me.token, id: c.taskId! });
        const meta = task.history[0]?.metadata?.switchboard as Record<string, unknown>;
        expect(meta).toMatchObject({ itemId: c.id, parentItemId: id, parentTaskId: parent.taskId });
        await coordinator.broker.deregister({ token: me.token });
      }
    }
  }, 60_000);

  it('canceling a parent cancels its running children', async () => {
    // Coding never finishes: the map's children stay running until the parent is canceled.
    const stuck: WorkHandler = () => new Promise(() => {});
    f = await openFixture({
      definitions: [reviewFanout],
      deployments: deployments({ ...FANOUT_HANDLERS, coding: stuck }),
    });
    const { coordinator } = f;
    const id = await coordinator.createWorkItem({ workflow: 'review-fanout', input: 'cancel me' });
    await waitFor(async () => (await coordinator.listItems()).filter((i) => i.id.startsWith(`${id}.`)).length === 3);
    await coordinator.cancel(id, { by: 'operator', reason: 'changed my mind' });
    await waitFor(async () =>
      (await coordinator.listItems()).filter((i) => i.id.startsWith(`${id}.`)).every((i) => i.state === 'canceled'),
    );
    const children = (await coordinator.listItems()).filter((i) => i.id.startsWith(`${id}.`));
    expect(children).toHaveLength(3);
    expect((await coordinator.getItem(id))!.state).toBe('canceled');
  }, 60_000);
});

async function waitFor(check: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('switchboard demo --workflow review-fanout', () => {
  it('runs the second shipped workflow end to end and verifies the audit', async () => {
    const dir = tempDir();
    try {
      const bin = new URL('../../bin/switchboard.js', import.meta.url).pathname;
      const { code, stdout } = await runNode([
        bin,
        'demo',
        '--workflow',
        'review-fanout',
        '--json',
        '--approve',
        '--db',
        join(dir, 'demo.db'),
      ]);
      expect(code).toBe(0);
      const summary = JSON.parse(stdout.trim()) as { items: { state: string; hops: number }[]; audit: { ok: boolean } };
      expect(summary.items.map((i) => i.state)).toEqual(['completed', 'completed']);
      expect(summary.audit.ok).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
