import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import {
  CASCADE_POLICY_NAME,
  type HopContext,
  type Policy,
  budgetPolicy,
  budgetStatus,
  hopBudgetSpent,
  maxHopsPolicy,
  roleAllowListPolicy,
  runGovernance,
} from '../../src/workflow/governance.js';
import { DEFAULT_MAX_HOPS, governanceCascade } from '../../src/workflow/governance-cascade.js';

function hop(overrides: Partial<HopContext> = {}): HopContext {
  return {
    itemId: 'item-1',
    workflow: { id: 'dev-sdlc', version: 1 },
    stage: 'coding',
    role: 'coding',
    hop: 2,
    attempt: 1,
    usage: { inputTokens: 400, outputTokens: 100, costUsd: 0.25, elapsedMs: 1_000 },
    approvedBy: null,
    ...overrides,
  };
}

const allow: Policy = () => ({ decision: 'allow' });

describe('the cascade', () => {
  it('allows when every policy allows, recording each verdict in order', () => {
    const decision = runGovernance([budgetPolicy({ maxTokens: 1_000 }), allow, maxHopsPolicy(10)], hop());
    expect(decision).toEqual({
      decision: 'allow',
      verdicts: [
        { policy: 'budget', decision: 'allow' },
        { policy: 'allow', decision: 'allow' },
        { policy: 'max-hops', decision: 'allow' },
      ],
    });
    expect(runGovernance([], hop())).toEqual({ decision: 'allow', verdicts: [] });
  });

  it('stops at the first deny: later policies are not asked', () => {
    const asked: string[] = [];
    const spy =
      (name: string, verdict: ReturnType<Policy>): Policy =>
      () => {
        asked.push(name);
        return verdict;
      };
    const decision = runGovernance(
      [
        { name: 'first', check: spy('first', { decision: 'allow' }) },
        { name: 'approval', check: spy('approval', { decision: 'require-approval', reason: 'big change' }) },
        { name: 'second', check: spy('second', { decision: 'deny', reason: 'frozen' }) },
        { name: 'third', check: spy('third', { decision: 'deny', reason: 'never asked' }) },
      ],
      hop(),
    );
    expect(asked).toEqual(['first', 'approval', 'second']);
    expect(decision).toEqual({
      decision: 'deny',
      policy: 'second',
      reason: 'frozen',
      verdicts: [
        { policy: 'first', decision: 'allow' },
        { policy: 'approval', decision: 'require-approval', reason: 'big change' },
        { policy: 'second', decision: 'deny', reason: 'frozen' },
      ],
    });
  });

  it('collects approval requirements and asks the approvers common to all of them', () => {
    const decision = runGovernance(
      [
        {
          name: 'prod',
          check: () => ({ decision: 'require-approval', reason: 'touches prod', approvers: ['alice', 'bob'] }),
        },
        allow,
        {
          name: 'spend',
          check: () => ({ decision: 'require-approval', reason: 'over 10 USD', approvers: ['bob', 'carol'] }),
        },
        { name: 'anyone', check: () => ({ decision: 'require-approval', reason: 'first hop' }) },
      ],
      hop(),
    );
    expect(decision).toMatchObject({
      decision: 'require-approval',
      reason: 'prod: touches prod; spend: over 10 USD; anyone: first hop',
      approvers: ['bob'],
      policies: ['prod', 'spend', 'anyone'],
    });
    const open = runGovernance(
      [{ name: 'anyone', check: () => ({ decision: 'require-approval', reason: 'r' }) }],
      hop(),
    );
    expect(open).toMatchObject({ decision: 'require-approval', approvers: null });
  });

  it('counts an approval already given for the hop, and asks again only what it does not meet', () => {
    const policies = [
      {
        name: 'prod',
        check: (): ReturnType<Policy> => ({
          decision: 'require-approval',
          reason: 'prod',
          approvers: ['alice', 'bob'],
        }),
      },
      { name: 'any', check: (): ReturnType<Policy> => ({ decision: 'require-approval', reason: 'any' }) },
    ];
    expect(runGovernance(policies, hop({ approvedBy: 'bob' }))).toEqual({
      decision: 'allow',
      verdicts: [
        {
          policy: 'prod',
          decision: 'require-approval',
          reason: 'prod',
          approvers: ['alice', 'bob'],
          satisfiedBy: 'bob',
        },
        { policy: 'any', decision: 'require-approval', reason: 'any', satisfiedBy: 'bob' },
      ],
    });
    // A gate approved by someone the policy does not accept: ask its approvers.
    expect(runGovernance(policies, hop({ approvedBy: 'release-manager' }))).toMatchObject({
      decision: 'require-approval',
      reason: 'prod: prod',
      approvers: ['alice', 'bob'],
      policies: ['prod'],
    });
  });

  it('denies when no single approver can meet every requirement', () => {
    const decision = runGovernance(
      [
        { name: 'a', check: () => ({ decision: 'require-approval', reason: 'x', approvers: ['alice'] }) },
        { name: 'b', check: () => ({ decision: 'require-approval', reason: 'y', approvers: ['bob'] }) },
      ],
      hop(),
    );
    expect(decision).toMatchObject({
      decision: 'deny',
      policy: CASCADE_POLICY_NAME,
      reason: 'no approver can meet every approval requirement (a, b)',
    });
  });

  it('fails closed: a policy that throws or returns no verdict denies, with its name', () => {
    const throws: Policy = function exploding() {
      throw new Error('lookup failed');
    };
    expect(runGovernance([throws, allow], hop())).toMatchObject({
      decision: 'deny',
      policy: 'exploding',
      reason: 'policy exploding failed: lookup failed',
    });
    const bad = [
      () => undefined,
      () => ({ decision: 'maybe' }),
      () => ({ decision: 'deny' }),
      () => ({ decision: 'require-approval', reason: 'r', approvers: [] }),
      () => ({ decision: 'require-approval', reason: 'r', approvers: [''] }),
    ] as unknown as Policy[];
    for (const policy of bad) {
      const decision = runGovernance([policy], hop());
      expect(decision.decision).toBe('deny');
      expect(decision).toMatchObject({ policy: 'policy-1' });
    }
  });

  it('gives policies a frozen view: one cannot change what the next one sees', () => {
    const tamper: Policy = (ctx) => {
      (ctx.usage as { costUsd: number }).costUsd = 0;
      return { decision: 'allow' };
    };
    const decision = runGovernance([tamper, budgetPolicy({ maxCostUsd: 0.1 })], hop());
    expect(decision).toMatchObject({ decision: 'deny', policy: 'tamper' });
    expect((decision as { reason: string }).reason).toMatch(/Cannot assign to read only property/);
  });
});

describe('built-in policies', () => {
  it('budget: allows while there is budget left, denies once tokens or dollars are spent', () => {
    const policy = budgetPolicy({ maxTokens: 1_000, maxCostUsd: 0.5 });
    expect(policy.check(hop())).toEqual({ decision: 'allow' });
    expect(policy.check(hop({ usage: { inputTokens: 900, outputTokens: 100, costUsd: 0.1, elapsedMs: 0 } }))).toEqual({
      decision: 'deny',
      reason: 'budget spent: 1000 of 1000 tokens',
    });
    expect(policy.check(hop({ usage: { inputTokens: 0, outputTokens: 0, costUsd: 0.75, elapsedMs: 0 } }))).toEqual({
      decision: 'deny',
      reason: 'budget exceeded: 0.75 of 0.5 USD',
    });
    expect(budgetStatus({ maxTokens: 10 }, { inputTokens: 5, outputTokens: 6, costUsd: 0, elapsedMs: 0 })).toEqual({
      state: 'exceeded',
      reason: 'budget exceeded: 11 of 10 tokens',
    });
    expect(budgetStatus({ maxCostUsd: 1 }, { inputTokens: 5, outputTokens: 6, costUsd: 1, elapsedMs: 0 })).toEqual({
      state: 'spent',
      reason: 'budget spent: 1 of 1 USD',
    });
  });

  it('role allow-list: denies a role not listed', () => {
    const policy = roleAllowListPolicy(['testing', 'coding']);
    expect(policy.check(hop())).toEqual({ decision: 'allow' });
    expect(policy.check(hop({ role: 'devops' }))).toEqual({
      decision: 'deny',
      reason: 'role devops is not allowed (allowed: coding, testing)',
    });
  });

  it('max hops: denies the hop past the limit', () => {
    const policy = maxHopsPolicy(3);
    expect(policy.check(hop({ hop: 3 }))).toEqual({ decision: 'allow' });
    expect(policy.check(hop({ hop: 4 }))).toEqual({ decision: 'deny', reason: 'hop 4 is over the limit of 3 hops' });
  });

  it('a spent maxHops is told apart from a spent cost or token budget (what fails BUDGET_EXCEEDED)', () => {
    expect(hopBudgetSpent(null, { hop: 9 })).toBeNull();
    expect(hopBudgetSpent({ maxTokens: 10 }, { hop: 9 })).toBeNull();
    expect(hopBudgetSpent({ maxHops: 3 }, { hop: 3, childHops: 0 })).toBeNull();
    expect(hopBudgetSpent({ maxHops: 3 }, { hop: 4 })).toEqual({ maxHops: 3, spent: 3 });
    expect(hopBudgetSpent({ maxHops: 3 }, { hop: 2, childHops: 2 })).toEqual({ maxHops: 3, spent: 3 });
    // It agrees with the budget policy: denied exactly when the hops are spent.
    for (let h = 1; h <= 6; h++) {
      for (let c = 0; c <= 3; c++) {
        const denied = budgetPolicy({ maxHops: 4 }).check(hop({ hop: h, childHops: c })).decision === 'deny';
        expect(hopBudgetSpent({ maxHops: 4 }, { hop: h, childHops: c }) !== null).toBe(denied);
      }
    }
  });

  it('refuse bad arguments with a typed error', () => {
    for (const make of [
      () => budgetPolicy({}),
      () => budgetPolicy({ maxTokens: -1 }),
      () => budgetPolicy({ maxTokens: 1.5 }),
      () => budgetPolicy({ maxCostUsd: Number.POSITIVE_INFINITY }),
      () => roleAllowListPolicy([]),
      () => maxHopsPolicy(0),
    ]) {
      expect(make).toThrow(expect.objectContaining({ name: 'WorkflowError', code: 'GOVERNANCE_INVALID_POLICY' }));
    }
  });

  test.prop([
    fc.integer({ min: 0, max: 10_000 }),
    fc.integer({ min: 0, max: 10_000 }),
    fc.integer({ min: 0, max: 20_000 }),
  ])('budget allows exactly while tokens used are under the limit', (input, output, max) => {
    const decision = budgetPolicy({ maxTokens: max }).check(
      hop({ usage: { inputTokens: input, outputTokens: output, costUsd: 0, elapsedMs: 0 } }),
    );
    expect(decision.decision === 'allow').toBe(input + output < max);
  });
});

describe('governanceCascade: the Coordinator cascade as a value', () => {
  it('runs the budget, the role allow-list, the hop limit, then the user policies, in that order', () => {
    const cascade = governanceCascade({
      knownRoles: ['coding', 'review'],
      policies: [{ name: 'mine', check: () => ({ decision: 'allow' }) }],
    });
    expect(cascade.decide({ maxTokens: 10_000 }, hop()).verdicts.map((v) => v.policy)).toEqual([
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
