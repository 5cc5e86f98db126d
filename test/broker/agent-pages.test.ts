import { fc, test as fcTest } from '@fast-check/vitest';
import { afterEach, describe, expect, it } from 'vitest';
import { type PagedAgent, pageOfAgents } from '../../src/actors/broker/agent-pages.js';
import type { AgentCard } from '../../src/protocol/agent.js';
import { DEFAULT_AGENTS_LIMIT } from '../../src/protocol/bounds.js';
import { type Harness, harness, register } from './helpers.js';

function agent(order: number, size = 10): PagedAgent {
  const card: AgentCard = {
    agentId: `a${order}`,
    name: `n${order}`,
    contextId: 'c',
    kind: 'subagent',
    description: 'x'.repeat(size),
    skills: [],
  };
  return { order, card };
}
const sizeOf = (card: AgentCard) => card.description.length;

describe('pages of agents', () => {
  it('gives the first page by default (100 cards) and says there is more', () => {
    const agents = Array.from({ length: 250 }, (_, i) => agent(i));
    const first = pageOfAgents(agents, { sizeOf });
    expect(first.agents).toHaveLength(DEFAULT_AGENTS_LIMIT);
    expect(first.nextCursor).toBe('99');
    const second = pageOfAgents(agents, { sizeOf, cursor: first.nextCursor });
    expect(second.agents[0]?.agentId).toBe('a100');
    const third = pageOfAgents(agents, { sizeOf, cursor: second.nextCursor });
    expect(third.agents).toHaveLength(50);
    expect(third.nextCursor).toBeUndefined();
  });

  it('ends a page before the card that would pass its bytes, but always gives one', () => {
    const agents = [agent(0, 60), agent(1, 60), agent(2, 500)];
    const first = pageOfAgents(agents, { sizeOf, maxBytes: 100 });
    expect(first.agents.map((c) => c.agentId)).toEqual(['a0']);
    const second = pageOfAgents(agents, { sizeOf, maxBytes: 100, cursor: first.nextCursor });
    expect(second.agents.map((c) => c.agentId)).toEqual(['a1']);
    const third = pageOfAgents(agents, { sizeOf, maxBytes: 100, cursor: second.nextCursor });
    expect(third.agents.map((c) => c.agentId)).toEqual(['a2']);
    expect(third.nextCursor).toBeUndefined();
  });

  fcTest.prop([
    fc.uniqueArray(fc.nat({ max: 10_000 }), { maxLength: 80 }),
    fc.integer({ min: 1, max: 30 }),
    fc.integer({ min: 1, max: 400 }),
  ])('following nextCursor gives every card once, in registration order', (orders, limit, maxBytes) => {
    const agents = orders.map((order) => agent(order, (order % 7) * 20));
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages <= agents.length + 1; pages++) {
      const page = pageOfAgents(agents, { sizeOf, limit, maxBytes, cursor });
      expect(page.agents.length).toBeLessThanOrEqual(limit);
      seen.push(...page.agents.map((c) => c.agentId));
      if (page.nextCursor === undefined) break;
      cursor = page.nextCursor;
    }
    expect(seen).toEqual([...orders].sort((a, b) => a - b).map((o) => `a${o}`));
  });
});

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('a2a.agents.list pages', () => {
  it('pages by cursor and limit; a call without them gets the first page as before', async () => {
    h = harness();
    const me = await register(h.broker, 'me', 'c');
    for (let i = 0; i < 5; i++) await register(h.broker, `peer${i}`, 'c');
    const all = await h.broker.listAgents({ token: me.token });
    expect(all.agents.map((a) => a.name)).toEqual(['peer0', 'peer1', 'peer2', 'peer3', 'peer4']);
    expect(all.nextCursor).toBeUndefined();
    const first = await h.broker.listAgents({ token: me.token, limit: 2 });
    expect(first.agents.map((a) => a.name)).toEqual(['peer0', 'peer1']);
    expect(first.nextCursor).toBeDefined();
    // An agent leaving between pages shifts nothing.
    await register(h.broker, 'late', 'c');
    const second = await h.broker.listAgents({ token: me.token, limit: 2, cursor: first.nextCursor });
    expect(second.agents.map((a) => a.name)).toEqual(['peer2', 'peer3']);
    const third = await h.broker.listAgents({ token: me.token, limit: 2, cursor: second.nextCursor });
    expect(third.agents.map((a) => a.name)).toEqual(['peer4', 'late']);
    expect(third.nextCursor).toBeUndefined();
    // Past the end: an empty page, not A2A_NO_PEERS.
    const past = await h.broker.listAgents({ token: me.token, cursor: '999999' });
    expect(past).toEqual({ agents: [] });
  });

  it('refuses a cursor it never gave and a limit past 1,000 as invalid params, naming the field', async () => {
    h = harness();
    const me = await register(h.broker, 'me', 'c');
    await register(h.broker, 'peer', 'c');
    await expect(h.broker.listAgents({ token: me.token, cursor: 'abc' })).rejects.toMatchObject({
      code: 'INVALID_PARAMS',
      details: { issues: [expect.objectContaining({ path: ['cursor'] })] },
    });
    await expect(h.broker.listAgents({ token: me.token, limit: 1001 })).rejects.toMatchObject({
      code: 'INVALID_PARAMS',
    });
  });
});
