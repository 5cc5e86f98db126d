import { describe, expect, it } from 'vitest';
import { DEFAULT_MAX_HOPS, governanceCascade } from '../../src/workflow/governance-cascade.js';
import type { HopContext } from '../../src/workflow/governance.js';

function hop(overrides: Partial<HopContext> = {}): HopContext {
  return {
    itemId: 'item-1',
    workflow: { id: 'dev-sdlc', version: 1 },
    stage: 'coding',
    role: 'coding',
    hop: 2,
    attempt: 1,
    usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, elapsedMs: 0 },
    approvedBy: null,
    ...overrides,
  };
}

describe('governanceCascade: the Coordinator cascade as a value', () => {
  it('runs the budget, the role allow-list, the hop limit, then the user policies, in that order', () => {
    const cascade = governanceCascade({
      knownRoles: ['coding', 'review'],
      policies: [{ name: 'mine', check: () => ({ decision: 'allow' }) }],
    });
    expect(cascade.decide({ maxTokens: 10 }, hop()).verdicts.map((v) => v.policy)).toEqual([
      'budget',
      'role-allow-list',
      'max-hops',
      'mine',
    ]);
    expect(cascade.decide(null, hop()).verdicts.map((v) => v.policy)).toEqual(['role-allow-list', 'max-hops', 'mine']);
  });

  it('allows the known roles unless told which, and 50 hops unless told how many', () => {
    const known = governanceCascade({ knownRoles: ['coding'] });
    expect(known.decide(null, hop({ role: 'review' })).decision).toBe('deny');
    expect(known.decide(null, hop({ hop: DEFAULT_MAX_HOPS })).decision).toBe('allow');
    expect(known.decide(null, hop({ hop: DEFAULT_MAX_HOPS + 1 })).decision).toBe('deny');
    const told = governanceCascade({ knownRoles: ['coding'], allowedRoles: ['review'], maxHops: 3 });
    expect(told.decide(null, hop({ role: 'review', hop: 3 })).decision).toBe('allow');
    expect(told.decide(null, hop({ role: 'coding' })).decision).toBe('deny');
    expect(told.decide(null, hop({ role: 'review', hop: 4 })).decision).toBe('deny');
  });

  it('shares one budget policy between items with the same budget, and refuses a bad budget when asked', () => {
    const cascade = governanceCascade({ knownRoles: ['coding'] });
    expect(cascade.budgetEntry({ maxTokens: 5 })).toBe(cascade.budgetEntry({ maxTokens: 5 }));
    expect(cascade.budgetEntry({ maxTokens: 5 })).not.toBe(cascade.budgetEntry({ maxTokens: 6 }));
    expect(() => cascade.budgetEntry({ maxTokens: -1 })).toThrow(/maxTokens/);
  });

  it('is the same for the same hop, asked twice (no state between hops)', () => {
    const cascade = governanceCascade({ knownRoles: ['coding'] });
    const spent = hop({ usage: { inputTokens: 6, outputTokens: 0, costUsd: 0, elapsedMs: 0 } });
    expect(cascade.decide({ maxTokens: 5 }, spent)).toEqual(cascade.decide({ maxTokens: 5 }, spent));
    expect(cascade.decide({ maxTokens: 5 }, spent).decision).toBe('deny');
  });
});
