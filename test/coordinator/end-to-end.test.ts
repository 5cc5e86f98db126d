import { afterEach, describe, expect, it } from 'vitest';
import { COORDINATOR_AGENT_NAME } from '../../src/actors/coordinator/human-edge.js';
import type { ItemStatus } from '../../src/actors/coordinator/types.js';
import { type Fixture, auditRows, auditHead, autoApprove, openFixture } from './helpers.js';

/**
 * The design's verification: the same definition runs two work items end to
 * end, every hop governed, audited and cost-accounted, and the audit chain
 * covers every hop.
 */
describe('two work items on the dev SDLC definition', () => {
  let f: Fixture | undefined;
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  it('runs both to completion: every hop governed, audited, cost-accounted; the chain verifies', async () => {
    f = await openFixture();
    const { coordinator } = f;
    const stop = autoApprove(coordinator);
    const statuses: ItemStatus[] = [];
    coordinator.statuses$.subscribe((s) => statuses.push(s));
    const a = await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Add rate limiting to the public API' });
    const b = await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Export invoices as CSV' });
    const [fa, fb] = await Promise.all([coordinator.settled(a), coordinator.settled(b)]);
    stop();
    await coordinator.mirrored();
    expect(fa.state).toBe('completed');
    expect(fb.state).toBe('completed');

    for (const id of [a, b]) {
      const item = (await coordinator.getItem(id))!;
      const hops = await coordinator.listHops(id);
      // architect, coding (suspends, asks architect: a query hop), testing (fails), coding, testing, devops
      expect(hops.map((h) => `${h.kind}:${h.stage}/${h.role}:${h.state}`)).toEqual([
        'stage:architect/architect:completed',
        'stage:coding/coding:completed',
        'query:coding/architect:completed',
        'stage:testing/testing:failed',
        'stage:coding/coding:completed',
        'stage:testing/testing:completed',
        'stage:devops/devops:completed',
      ]);
      expect(item.hops).toBe(7);
      expect(hops[3]!.error?.type).toBe('TestsFailed');

      // Cost: each hop's accruals sum to the hop; the hops sum to the item; by agent and by model too.
      const rows = await coordinator.tables.readUsageRows({ itemId: id });
      for (const h of hops) {
        const mine = rows.filter((r) => r.hopId === h.id);
        expect(mine.length).toBeGreaterThanOrEqual(1);
        expect(mine.reduce((s, r) => s + r.inputTokens, 0)).toBe(h.usage.inputTokens);
        expect(mine.reduce((s, r) => s + r.costUsd, 0)).toBeCloseTo(h.usage.costUsd, 9);
      }
      // The coding hop accrued twice: before it asked, and after it resumed.
      expect(rows.filter((r) => r.hopId === hops[1]!.id)).toHaveLength(2);
      const sum = hops.reduce(
        (s, h) => ({
          inputTokens: s.inputTokens + h.usage.inputTokens,
          outputTokens: s.outputTokens + h.usage.outputTokens,
          costUsd: s.costUsd + h.usage.costUsd,
        }),
        { inputTokens: 0, outputTokens: 0, costUsd: 0 },
      );
      expect(item.usage.inputTokens).toBe(sum.inputTokens);
      expect(item.usage.outputTokens).toBe(sum.outputTokens);
      expect(item.usage.costUsd).toBeCloseTo(sum.costUsd, 9);
      expect(item.usage.costUsd).toBeGreaterThan(0);
      const byModel = await coordinator.tables.readUsageBy('model', { itemId: id });
      expect(byModel.map((g) => g.key).sort()).toEqual(['demo-large', 'demo-medium', 'demo-small', 'unreported']);
      const byAgent = await coordinator.tables.readUsageBy('agent', { itemId: id });
      expect(byAgent.reduce((s, g) => s + g.costUsd, 0)).toBeCloseTo(item.usage.costUsd, 9);
      expect(byAgent.find((g) => g.key === 'architect')?.hops).toBe(2);

      // Audit: every stage hop has a governance decision, a dispatch, its result (or failure) and its cost.
      const audit = await auditRows(coordinator, { itemId: id });
      for (const h of hops) {
        const about = audit.filter((r) => r.data.hopId === h.id);
        const kinds = about.map((r) => r.kind);
        expect(kinds).toContain('dispatch');
        expect(kinds).toContain('cost');
        expect(kinds).toContain(h.state === 'failed' ? 'failure' : 'result');
      }
      const governed = audit.filter((r) => r.kind === 'governance');
      // Six stage hops, the query and the resume: one decision each (devops once, after its gate).
      expect(governed.map((g) => `${g.hop}:${g.data.role}${g.data.query ? '?' : ''}`)).toEqual([
        '1:architect',
        '2:coding',
        '2:architect?',
        '2:coding',
        '3:testing',
        '4:coding',
        '5:testing',
        '6:devops',
      ]);
      expect(governed.find((g) => g.data.stage === 'devops')?.data.approvedBy).toBe('release-manager');
      for (const g of governed) expect(g.data.decision).toBe('allow');
      const kinds = audit.map((r) => r.kind);
      expect(kinds[0]).toBe('item-created');
      expect(kinds).toContain('suspend');
      expect(kinds).toContain('resume');
      expect(kinds).toContain('approval-requested');
      expect(audit.find((r) => r.kind === 'approval')?.data).toMatchObject({
        decision: 'approved',
        by: 'release-manager',
      });
      expect(kinds.at(-1)).toBe('item-completed');
    }
    const verified = await coordinator.verifyAudit({ expectedHead: await auditHead(coordinator) });
    expect(verified.ok).toBe(true);
    if (verified.ok) expect(verified.entries).toBe((await auditRows(coordinator)).length);

    // The watch stream saw each hop, in order, and ended with the item.
    const aEvents = statuses.filter((s) => s.id === a).map((s) => s.event.kind);
    expect(aEvents[0]).toBe('created');
    expect(aEvents.at(-1)).toBe('completed');
    expect(aEvents.filter((k) => k === 'dispatched')).toHaveLength(6);
  });

  it('mirrors each work item as an A2A task with one child task per hop', async () => {
    f = await openFixture();
    const { coordinator } = f;
    const stop = autoApprove(coordinator);
    const id = await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Add a health endpoint' });
    await coordinator.settled(id);
    stop();
    await coordinator.mirrored();
    const item = (await coordinator.getItem(id))!;
    expect(item.mirrored).toBe(true);
    // Register again as the item's Coordinator party: it regains its tasks.
    const me = await coordinator.broker!.register({ name: COORDINATOR_AGENT_NAME, contextId: id, kind: 'parent' });
    const { task } = await coordinator.broker!.getTask({ token: me.token, id: item.taskId! });
    expect(task.status.state).toBe('completed');
    expect(task.requesterName).toBe('edge');
    const { tasks } = await coordinator.broker!.listTasks({ token: me.token, role: 'requester' });
    const hops = await coordinator.listHops(id);
    expect(tasks).toHaveLength(hops.length);
    for (const h of hops) {
      const child = tasks.find((t) => t.id === h.taskId)!;
      expect(child.agentName).toBe(h.role);
      expect(child.status.state).toBe(h.state === 'failed' ? 'failed' : 'completed');
      const meta = child.history[0]?.metadata?.switchboard as Record<string, unknown>;
      expect(meta).toMatchObject({ itemId: id, parentTaskId: item.taskId, hopId: h.id, hop: h.hop });
    }
  });
});
