import { afterEach, describe, expect, it } from 'vitest';
import type { WorkHandler } from '../../src/actors/worker/worker.js';
import { complete } from '../../src/actors/worker/worker.js';
import { createModelAgent } from '../../src/agents/model-agent.js';
import { type Fixture, deployments, openFixture } from '../coordinator/helpers.js';
import { leadFlow, researchFlow } from '../coordinator/lead-flows.js';
import { scripted, text, toolCall } from './scripted-model.js';

// A model agent that delegates twice in one hop, in a real Coordinator with
// real workers: it stands down for its first child, resumes from its
// conversation, delegates again and stands down for the second, then
// answers. Each child is a work item of its own, run once.

const PRICE = { inputPerMTok: 1, outputPerMTok: 10 };

let f: Fixture | undefined;
afterEach(async () => {
  await f?.close();
  f = undefined;
});

describe('a model agent that delegates twice in one hop', () => {
  it('stands down for each child, resumes from its conversation, and answers: two children, each run once', async () => {
    const model = scripted([
      toolCall('delegate', { workflow: 'research@1', input: 'review the API' }, 'd1'),
      toolCall('delegate', { workflow: 'research@1', input: 'review the docs' }, 'd2'),
      text('Both reviewed.'),
    ]);
    const reviewed: string[] = [];
    const reviewer: WorkHandler = ({ message }) => {
      const part = message.parts.find((p) => p.kind === 'text');
      const said = part?.kind === 'text' ? part.text : '';
      reviewed.push(said);
      return complete({ parts: [{ kind: 'data', data: { reviewed: said } }] });
    };
    const agent = createModelAgent({ model, pricing: PRICE, delegate: true, stream: false });
    f = await openFixture({
      definitions: [leadFlow, researchFlow],
      deployments: deployments({ lead: agent, researcher: reviewer }),
    });
    const id = await f.coordinator.createWorkItem({ workflow: 'lead-flow', input: 'Ship it' });
    const done = await f.coordinator.settled(id);
    expect(done.state).toBe('completed');
    expect((await f.coordinator.getItem(id))!.output).toMatchObject({
      parts: [{ kind: 'text', text: 'Both reviewed.' }],
    });
    expect(reviewed).toEqual(['review the API', 'review the docs']);
    expect(model.doGenerateCalls).toHaveLength(3);
    // The second call saw the first child's outcome as the delegate tool's output.
    expect(JSON.stringify(model.doGenerateCalls[1]!.prompt.at(-1))).toContain('review the API');
    const children = (await f.coordinator.listItems()).filter((i) => i.attributes?.['switchboard.parent'] === id);
    expect(children.map((c) => `${c.attributes?.['switchboard.branch']}:${c.state}`).sort()).toEqual([
      '1:s0:completed',
      '1:s1:completed',
    ]);
  }, 60_000);
});
