import { afterEach, describe, expect, it } from 'vitest';
import { type WorkHandler, complete, spawn } from '../../src/actors/worker/worker.js';
import { type Fixture, deployments, openFixture } from './helpers.js';
import { leadFlow, researchFlow } from './lead-flows.js';

/**
 * A handler that hands sub-tasks to another workflow and stands down: its
 * hop suspends with the children as the checkpoint's wait, each child is a
 * work item of its own (budget carved from the item's), and the hop resumes,
 * in whichever worker, with their outcomes and outputs as its reply.
 */

const lead = leadFlow;
const research = researchFlow;

const usage = { model: 'm', inputTokens: 100, outputTokens: 10, costUsd: 0.001 };
let leadCalls = 0;

const handlers: Record<string, WorkHandler> = {
  lead: ({ resume }) => {
    leadCalls++;
    if (resume === undefined) {
      return spawn(
        [
          { workflow: 'research@1', input: 'find the rate limits' },
          { workflow: 'research@1', input: 'find the quotas', budget: { maxTokens: 500 } },
        ],
        { state: { asked: 2 }, usage },
      );
    }
    const data = resume.reply.parts.find((p) => p.kind === 'data');
    const children = (data?.kind === 'data' ? data.data.children : []) as { outcome: string; output: unknown }[];
    return complete({
      parts: [{ kind: 'data', data: { state: resume.state as object, answers: children.map((c) => c.output) } }],
      usage,
    });
  },
  researcher: ({ message }) => {
    const text = message.parts.find((p) => p.kind === 'text');
    return complete({ parts: [{ kind: 'data', data: { found: text?.kind === 'text' ? text.text : '' } }], usage });
  },
};

describe('a handler spawns child work items and stands down', () => {
  let f: Fixture | undefined;
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  it('resumes with the children outputs, in order; budgets carved; usage rolled up; audited', async () => {
    leadCalls = 0;
    f = await openFixture({ definitions: [lead, research], deployments: deployments(handlers) });
    const { coordinator } = f;
    const id = await coordinator.createWorkItem({
      workflow: 'lead-flow',
      input: 'plan limits',
      budget: { maxTokens: 5_000 },
    });
    const done = await coordinator.settled(id);
    expect(done.state).toBe('completed');
    expect(leadCalls).toBe(2);
    const item = (await coordinator.getItem(id))!;
    expect(item.output).toMatchObject({
      state: 'completed',
      parts: [
        {
          kind: 'data',
          data: { state: { asked: 2 }, answers: [{ found: 'find the rate limits' }, { found: 'find the quotas' }] },
        },
      ],
    });
    const children = (await coordinator.listItems()).filter((i) => i.attributes?.['switchboard.parent'] === id);
    expect(children.map((c) => c.attributes?.['switchboard.branch']).sort()).toEqual(['1:s0', '1:s1']);
    const byKey = new Map(children.map((c) => [String(c.attributes?.['switchboard.branch']), c]));
    // Explicit carve kept; the other what the explicit carve leaves of what the item had left when the hop suspended.
    expect(byKey.get('1:s1')!.budget).toEqual({ maxTokens: 500 });
    expect(byKey.get('1:s0')!.budget).toEqual({ maxTokens: 5_000 - 110 - 500 });
    // The item's usage: its own two accruals (before and after) and its children's.
    expect(item.usage.inputTokens).toBe(100 * 2 + 100 * 2);
    const hops = await coordinator.listHops(id);
    expect(hops.map((h) => `${h.kind}:${h.state}`)).toEqual(['stage:completed']);
    const kinds = (await coordinator.audit.list({ itemId: id })).map((r) => r.kind);
    expect(kinds).toEqual(expect.arrayContaining(['suspend', 'spawn', 'child-settled', 'resume', 'item-completed']));
    const verification = await coordinator.audit.verifyChain({ expectedHead: await coordinator.audit.head() });
    expect(verification.ok).toBe(true);
  }, 60_000);

  it('a hop that starts children again after they resumed it gets new children, each run once', async () => {
    let runs = 0;
    const twice: Record<string, WorkHandler> = {
      lead: ({ resume }) => {
        const round = (resume?.state as { round?: number } | undefined)?.round ?? 0;
        const heard = resume === undefined ? [] : [resume.reply.parts[0]!];
        if (round < 2) {
          return spawn([{ workflow: 'research@1', input: `round ${round}` }], { state: { round: round + 1 }, usage });
        }
        return complete({ parts: heard, usage });
      },
      researcher: ({ message }) => {
        runs++;
        const text = message.parts.find((p) => p.kind === 'text');
        return complete({ parts: [{ kind: 'data', data: { found: text?.kind === 'text' ? text.text : '' } }], usage });
      },
    };
    f = await openFixture({ definitions: [lead, research], deployments: deployments(twice) });
    const id = await f.coordinator.createWorkItem({ workflow: 'lead-flow', input: 'go' });
    const done = await f.coordinator.settled(id);
    expect(done.state).toBe('completed');
    expect(runs).toBe(2);
    const item = (await f.coordinator.getItem(id))!;
    expect(item.output).toMatchObject({
      parts: [
        { kind: 'data', data: { children: [{ key: 's1', outcome: 'completed', output: { found: 'round 1' } }] } },
      ],
    });
    const children = (await f.coordinator.listItems()).filter((i) => i.attributes?.['switchboard.parent'] === id);
    expect(children.map((c) => c.attributes?.['switchboard.branch']).sort()).toEqual(['1:s0', '1:s1']);
    expect(children.every((c) => c.state === 'completed')).toBe(true);
  }, 60_000);

  it('a child of an unknown workflow is a failed child, and the hop still resumes with it', async () => {
    const bad: Record<string, WorkHandler> = {
      ...handlers,
      lead: ({ resume }) =>
        resume === undefined
          ? spawn([{ workflow: 'nowhere@1', input: 'x' }], { usage })
          : complete({ parts: [resume.reply.parts[0]!], usage }),
    };
    f = await openFixture({ definitions: [lead, research], deployments: deployments(bad) });
    const id = await f.coordinator.createWorkItem({ workflow: 'lead-flow', input: 'go' });
    const done = await f.coordinator.settled(id);
    expect(done.state).toBe('completed');
    const item = (await f.coordinator.getItem(id))!;
    expect(item.output).toMatchObject({
      parts: [
        { kind: 'data', data: { children: [{ key: 's0', outcome: 'failed', error: { type: 'UnknownWorkflow' } }] } },
      ],
    });
  }, 60_000);
});
