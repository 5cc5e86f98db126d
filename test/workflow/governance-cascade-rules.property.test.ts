import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import type { HopContext, PolicyEntry } from '../../src/workflow/governance.js';
import { DEFAULT_MAX_HOPS, governanceCascade } from '../../src/workflow/governance-cascade.js';

/**
 * The Coordinator's cascade as a value: the item's budget, the role
 * allow-list and the hop limit before the user's policies, the same
 * decision for the same hop, one budget policy per distinct budget.
 */

function hop(overrides: Partial<HopContext> = {}): HopContext {
  return {
    itemId: 'item-1',
    workflow: { id: 'dev-sdlc', version: 1 },
    stage: 'coding',
    role: 'coding',
    hop: 1,
    attempt: 1,
    usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, elapsedMs: 0 },
    approvedBy: null,
    ...overrides,
  };
}

const budgetArb = fc
  .record({
    maxTokens: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
    maxCostUsd: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
    maxHops: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
  })
  .filter((b) => b.maxTokens !== undefined || b.maxCostUsd !== undefined || b.maxHops !== undefined)
  .map((b) => Object.fromEntries(Object.entries(b).filter(([, v]) => v !== undefined)) as typeof b);

describe('governanceCascade', () => {
  test.prop([budgetArb, budgetArb])(
    'one budget policy per distinct budget, the same one for an equal budget',
    (a, b) => {
      const cascade = governanceCascade({ knownRoles: ['coding'] });
      const same =
        (a.maxTokens ?? null) === (b.maxTokens ?? null) &&
        (a.maxCostUsd ?? null) === (b.maxCostUsd ?? null) &&
        (a.maxHops ?? null) === (b.maxHops ?? null);
      expect(cascade.budgetEntry(a) === cascade.budgetEntry({ ...b })).toBe(same);
    },
  );

  it('is a frozen value, and keeps the policies it was given even if the caller changes its list later', () => {
    const policies: PolicyEntry[] = [{ name: 'mine', check: () => ({ decision: 'allow' }) }];
    const cascade = governanceCascade({ knownRoles: ['coding'], policies });
    policies.push({ name: 'late', check: () => ({ decision: 'deny', reason: 'late' }) });
    expect(Object.isFrozen(cascade)).toBe(true);
    expect(cascade.decide(null, hop())).toEqual({
      decision: 'allow',
      verdicts: [
        { policy: 'role-allow-list', decision: 'allow' },
        { policy: 'max-hops', decision: 'allow' },
        { policy: 'mine', decision: 'allow' },
      ],
    });
  });

  it("an item's budget comes first: a spent budget denies before any other policy is asked", () => {
    let asked = 0;
    const cascade = governanceCascade({
      knownRoles: ['coding'],
      policies: [
        () => {
          asked++;
          return { decision: 'allow' };
        },
      ],
    });
    const spent = hop({ usage: { inputTokens: 3, outputTokens: 0, costUsd: 0, elapsedMs: 0 } });
    expect(cascade.decide({ maxTokens: 3 }, spent)).toMatchObject({ decision: 'deny', policy: 'budget' });
    expect(asked).toBe(0);
    expect(cascade.decide({ maxTokens: 4 }, spent)).toMatchObject({ decision: 'allow' });
    expect(asked).toBe(1);
    expect(DEFAULT_MAX_HOPS).toBe(50);
  });
});
