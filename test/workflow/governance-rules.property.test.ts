import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import {
  CASCADE_POLICY_NAME,
  type HopContext,
  type Policy,
  type PolicyEntry,
  type PolicyRecord,
  type PolicyVerdict,
  budgetPolicy,
  budgetStatus,
  maxHopsPolicy,
  roleAllowListPolicy,
  runGovernance,
} from '../../src/workflow/governance.js';

/**
 * The rules of the governance cascade as properties: whatever the policies
 * answer, the first deny (or a policy that throws or answers no verdict)
 * wins, approval requirements are met by one approver or asked of the
 * approvers common to all of them, and each built-in policy keeps its limit
 * exactly. What the Coordinator records in the audit (each verdict, its
 * reason) is what the user reads, so the reasons are held too.
 */

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

const PEOPLE = ['alice', 'bob', 'carol'] as const;

/** What one generated policy does when asked. */
type Behaviour =
  | { kind: 'allow' }
  | { kind: 'deny'; reason: string }
  | { kind: 'require'; reason: string; approvers: string[] | undefined }
  | { kind: 'throw'; message: string }
  | { kind: 'invalid'; value: unknown };

/** How the policy is handed over: a named entry, a named function, or an anonymous one. */
type Form = { as: 'entry'; name: string } | { as: 'named-function'; name: string } | { as: 'anonymous' };

const reasonArb = fc.string({ minLength: 1, maxLength: 12 });
const behaviourArb: fc.Arbitrary<Behaviour> = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ kind: 'allow' as const }) },
  { weight: 1, arbitrary: reasonArb.map((reason) => ({ kind: 'deny' as const, reason })) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('require' as const),
      reason: reasonArb,
      approvers: fc.option(fc.array(fc.constantFrom(...PEOPLE), { minLength: 1, maxLength: 4 }), { nil: undefined }),
    }),
  },
  { weight: 1, arbitrary: reasonArb.map((message) => ({ kind: 'throw' as const, message })) },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom<unknown>(null, undefined, 'allow', 7, { decision: 'maybe' }, { decision: 'deny' }, {})
      .map((value) => ({ kind: 'invalid' as const, value })),
  },
);
const formArb: fc.Arbitrary<Form> = fc.oneof(
  fc.stringMatching(/^[a-z]{1,6}$/).map((name) => ({ as: 'entry' as const, name })),
  fc.stringMatching(/^[a-z]{1,6}$/).map((name) => ({ as: 'named-function' as const, name })),
  fc.constant({ as: 'anonymous' as const }),
);
const cascadeArb = fc.array(fc.record({ behaviour: behaviourArb, form: formArb }), { maxLength: 6 });
const approvedByArb = fc.option(fc.constantFrom(...PEOPLE, 'dave'), { nil: null });

function answer(behaviour: Behaviour): unknown {
  switch (behaviour.kind) {
    case 'allow':
      return { decision: 'allow' };
    case 'deny':
      return { decision: 'deny', reason: behaviour.reason };
    case 'require':
      return behaviour.approvers === undefined
        ? { decision: 'require-approval', reason: behaviour.reason }
        : { decision: 'require-approval', reason: behaviour.reason, approvers: [...behaviour.approvers] };
    case 'throw':
      throw new Error(behaviour.message);
    case 'invalid':
      return behaviour.value;
  }
}

/** The generated cascade as the Coordinator takes it, with a log of which policies were asked. */
function build(spec: readonly { behaviour: Behaviour; form: Form }[]): {
  entries: PolicyEntry[];
  names: string[];
  asked: number[];
} {
  const asked: number[] = [];
  const entries = spec.map(({ behaviour, form }, i): PolicyEntry => {
    // Made inside a callback and never bound to a name: an anonymous function.
    const check = [
      () => {
        asked.push(i);
        return answer(behaviour) as PolicyVerdict;
      },
    ][0] as Policy;
    if (form.as === 'entry') return { name: form.name, check };
    if (form.as === 'named-function') Object.defineProperty(check, 'name', { value: form.name });
    return check;
  });
  const names = spec.map(({ form }, i) => (form.as === 'anonymous' ? `policy-${i + 1}` : form.name));
  return { entries, names, asked };
}

const stops = (b: Behaviour) => b.kind === 'deny' || b.kind === 'throw' || b.kind === 'invalid';

describe('runGovernance: the cascade rules', () => {
  test.prop([cascadeArb, approvedByArb])(
    'the first deny (or failing policy) wins; later policies are not asked',
    (spec, approvedBy) => {
      const { entries, names, asked } = build(spec);
      const decision = runGovernance(entries, hop({ approvedBy }));
      const first = spec.findIndex(({ behaviour }) => stops(behaviour));
      if (first === -1) {
        expect(asked).toEqual(spec.map((_, i) => i));
        expect(decision.verdicts.slice(0, spec.length).map((v) => v.policy)).toEqual(names);
        return;
      }
      expect(asked).toEqual(spec.slice(0, first + 1).map((_, i) => i));
      expect(decision.decision).toBe('deny');
      if (decision.decision !== 'deny') return;
      expect(decision.policy).toBe(names[first]);
      expect(decision.verdicts.map((v) => v.policy)).toEqual(names.slice(0, first + 1));
      const last = decision.verdicts.at(-1);
      expect(last).toEqual({ policy: names[first], decision: 'deny', reason: decision.reason });
      const behaviour = spec[first]!.behaviour;
      if (behaviour.kind === 'deny') expect(decision.reason).toBe(behaviour.reason);
      if (behaviour.kind === 'throw')
        expect(decision.reason).toBe(`policy ${names[first]} failed: ${behaviour.message}`);
      if (behaviour.kind === 'invalid') expect(decision.reason.startsWith(`policy ${names[first]}: `)).toBe(true);
    },
  );

  test.prop([cascadeArb, approvedByArb])(
    'without a deny: every verdict is recorded in order, and a requirement is met only by a named approver it accepts',
    (spec, approvedBy) => {
      const passing = spec.filter(({ behaviour }) => !stops(behaviour));
      const { entries, names } = build(passing);
      const decision = runGovernance(entries, hop({ approvedBy }));
      const records = decision.verdicts.slice(0, passing.length);
      const requirements: { name: string; reason: string; approvers: string[] | null; met: boolean }[] = [];
      passing.forEach(({ behaviour }, i) => {
        const record = records[i] as PolicyRecord;
        if (behaviour.kind !== 'require') {
          expect(record).toEqual({ policy: names[i], decision: 'allow' });
          return;
        }
        const approvers = behaviour.approvers === undefined ? null : [...new Set(behaviour.approvers)];
        const met = approvedBy !== null && (approvers === null || approvers.includes(approvedBy));
        expect(record).toEqual({
          policy: names[i],
          decision: 'require-approval',
          reason: behaviour.reason,
          ...(approvers === null ? {} : { approvers }),
          ...(met ? { satisfiedBy: approvedBy } : {}),
        });
        requirements.push({ name: names[i]!, reason: behaviour.reason, approvers, met });
      });
      if (requirements.every((r) => r.met)) {
        expect(decision).toEqual({ decision: 'allow', verdicts: records });
        return;
      }
      const listing = requirements.filter((r) => r.approvers !== null);
      const common =
        listing.length === 0
          ? null
          : PEOPLE.filter((p) => listing.every((r) => r.approvers!.includes(p as string))).map(String);
      if (common !== null && common.length === 0) {
        const reason = `no approver can meet every approval requirement (${requirements.map((r) => r.name).join(', ')})`;
        expect(decision).toEqual({
          decision: 'deny',
          policy: CASCADE_POLICY_NAME,
          reason,
          verdicts: [...records, { policy: CASCADE_POLICY_NAME, decision: 'deny', reason }],
        });
        return;
      }
      const asking = requirements.filter((r) => !r.met);
      expect(decision.decision).toBe('require-approval');
      if (decision.decision !== 'require-approval') return;
      expect(decision.verdicts).toEqual(records);
      expect(decision.policies).toEqual(asking.map((r) => r.name));
      expect(decision.reason).toBe(asking.map((r) => `${r.name}: ${r.reason}`).join('; '));
      expect(decision.approvers === null ? null : [...decision.approvers].sort()).toEqual(common);
    },
  );

  it('an approval met earlier still counts towards the common approvers (no approvals taking turns)', () => {
    // alice's approval meets the first requirement; the second asks bob only:
    // no single approver meets both, so the cascade denies rather than ask bob.
    const policies: PolicyEntry[] = [
      { name: 'a', check: () => ({ decision: 'require-approval', reason: 'x', approvers: ['alice'] }) },
      { name: 'b', check: () => ({ decision: 'require-approval', reason: 'y', approvers: ['bob'] }) },
    ];
    expect(runGovernance(policies, hop({ approvedBy: 'alice' }))).toMatchObject({
      decision: 'deny',
      policy: CASCADE_POLICY_NAME,
      reason: 'no approver can meet every approval requirement (a, b)',
    });
    // A requirement with no approvers named does not narrow who may approve.
    const open: PolicyEntry[] = [
      { name: 'any', check: () => ({ decision: 'require-approval', reason: 'x' }) },
      { name: 'pair', check: () => ({ decision: 'require-approval', reason: 'y', approvers: ['bob', 'carol'] }) },
    ];
    expect(runGovernance(open, hop())).toMatchObject({
      decision: 'require-approval',
      approvers: ['bob', 'carol'],
      policies: ['any', 'pair'],
      reason: 'any: x; pair: y',
    });
  });

  it('says what is wrong with an answer that is not a verdict', () => {
    const reasonOf = (value: unknown): string => {
      const decision = runGovernance([{ name: 'p', check: () => value as PolicyVerdict }], hop());
      expect(decision.decision).toBe('deny');
      return (decision as { reason: string }).reason;
    };
    expect(reasonOf(undefined)).toBe('policy p: it returned no verdict');
    expect(reasonOf(null)).toBe('policy p: it returned no verdict');
    expect(reasonOf('allow')).toBe('policy p: it returned no verdict');
    expect(reasonOf({ decision: 'maybe' })).toBe('policy p: unknown decision "maybe"');
    expect(reasonOf({})).toBe('policy p: unknown decision undefined');
    expect(reasonOf({ decision: 'deny' })).toBe('policy p: a deny verdict needs a reason');
    expect(reasonOf({ decision: 'deny', reason: '' })).toBe('policy p: a deny verdict needs a reason');
    expect(reasonOf({ decision: 'deny', reason: 5 })).toBe('policy p: a deny verdict needs a reason');
    expect(reasonOf({ decision: 'require-approval', reason: '' })).toBe(
      'policy p: a require-approval verdict needs a reason',
    );
    for (const approvers of ['alice', [], [''], [5], ['alice', '']]) {
      expect(reasonOf({ decision: 'require-approval', reason: 'r', approvers })).toBe(
        'policy p: approvers must be a non-empty list of names',
      );
    }
    // Only an approval names approvers: a deny carrying a stray list is still a deny for its own reason.
    expect(reasonOf({ decision: 'deny', reason: 'frozen', approvers: [] })).toBe('frozen');
  });

  it('a verdict with fields beyond its decision still counts as that verdict', () => {
    const extra = { decision: 'allow', note: 'x' } as unknown as PolicyVerdict;
    expect(runGovernance([{ name: 'p', check: () => extra }], hop())).toEqual({
      decision: 'allow',
      verdicts: [{ policy: 'p', decision: 'allow' }],
    });
  });

  it('a policy that throws something other than an Error still denies, with what it threw', () => {
    const throwing = (thrown: unknown): PolicyEntry => ({
      name: 't',
      check: () => {
        throw thrown;
      },
    });
    expect(runGovernance([throwing('boom')], hop())).toMatchObject({
      decision: 'deny',
      reason: 'policy t failed: boom',
    });
    expect(runGovernance([throwing(null)], hop())).toMatchObject({ decision: 'deny', reason: 'policy t failed: null' });
  });

  it('hands every policy a frozen copy of the hop: it cannot change what the next policy or the caller sees', () => {
    const seen: Readonly<HopContext>[] = [];
    const look: Policy = (ctx) => {
      seen.push(ctx);
      return { decision: 'allow' };
    };
    const ctx = hop({ attributes: { requester: 'ann', urgent: true } });
    expect(runGovernance([look, look], ctx).decision).toBe('allow');
    for (const view of seen) {
      expect(view).toEqual(ctx);
      expect(Object.isFrozen(view)).toBe(true);
      expect(Object.isFrozen(view.workflow)).toBe(true);
      expect(Object.isFrozen(view.usage)).toBe(true);
      expect(Object.isFrozen(view.attributes)).toBe(true);
    }
    // The caller's own objects are not frozen by being looked at.
    expect(Object.isFrozen(ctx.workflow) || Object.isFrozen(ctx.usage) || Object.isFrozen(ctx.attributes)).toBe(false);
    const bare: Readonly<HopContext>[] = [];
    runGovernance(
      [
        (view) => {
          bare.push(view);
          return { decision: 'allow' };
        },
      ],
      hop(),
    );
    expect('attributes' in (bare[0] as object)).toBe(false);
  });
});

const usageArb = fc.record({
  inputTokens: fc.integer({ min: 0, max: 2_000 }),
  outputTokens: fc.integer({ min: 0, max: 2_000 }),
  costUsd: fc.integer({ min: 0, max: 400 }).map((cents) => cents / 100),
  elapsedMs: fc.nat(10_000),
});
const budgetArb = fc
  .record({
    maxTokens: fc.option(fc.integer({ min: 0, max: 4_000 }), { nil: undefined }),
    maxCostUsd: fc.option(
      fc.integer({ min: 0, max: 400 }).map((cents) => cents / 100),
      { nil: undefined },
    ),
  })
  .filter((b) => b.maxTokens !== undefined || b.maxCostUsd !== undefined)
  .map((b) => Object.fromEntries(Object.entries(b).filter(([, v]) => v !== undefined)));

describe('budget: what an item may spend', () => {
  test.prop([budgetArb, usageArb])(
    'exceeded strictly over a limit, spent at or over one, null with budget left; the reason names each limit reached',
    (budget, usage) => {
      const tokens = usage.inputTokens + usage.outputTokens;
      const reached: string[] = [];
      if (budget.maxTokens !== undefined && tokens >= budget.maxTokens)
        reached.push(`${tokens} of ${budget.maxTokens} tokens`);
      if (budget.maxCostUsd !== undefined && usage.costUsd >= budget.maxCostUsd) {
        reached.push(`${usage.costUsd} of ${budget.maxCostUsd} USD`);
      }
      const over =
        (budget.maxTokens !== undefined && tokens > budget.maxTokens) ||
        (budget.maxCostUsd !== undefined && usage.costUsd > budget.maxCostUsd);
      const status = budgetStatus(budget, usage);
      if (over) expect(status).toEqual({ state: 'exceeded', reason: `budget exceeded: ${reached.join(', ')}` });
      else if (reached.length > 0)
        expect(status).toEqual({ state: 'spent', reason: `budget spent: ${reached.join(', ')}` });
      else expect(status).toBeNull();
      // The policy denies exactly when the budget is spent or exceeded, for the same reason.
      const verdict = budgetPolicy(budget).check(hop({ usage }));
      expect(verdict).toEqual(status === null ? { decision: 'allow' } : { decision: 'deny', reason: status.reason });
    },
  );

  it('on the limit is spent; one over is exceeded, for tokens and for dollars', () => {
    const usage = (inputTokens: number, costUsd: number) => ({ inputTokens, outputTokens: 0, costUsd, elapsedMs: 0 });
    expect(budgetStatus({ maxTokens: 10 }, usage(9, 0))).toBeNull();
    expect(budgetStatus({ maxTokens: 10 }, usage(10, 0))?.state).toBe('spent');
    expect(budgetStatus({ maxTokens: 10 }, usage(11, 0))?.state).toBe('exceeded');
    expect(budgetStatus({ maxCostUsd: 1 }, usage(0, 0.99))).toBeNull();
    expect(budgetStatus({ maxCostUsd: 1 }, usage(0, 1))?.state).toBe('spent');
    expect(budgetStatus({ maxCostUsd: 1 }, usage(0, 1.01))?.state).toBe('exceeded');
    expect(budgetStatus({ maxTokens: 10, maxCostUsd: 1 }, usage(10, 2))).toEqual({
      state: 'exceeded',
      reason: 'budget exceeded: 10 of 10 tokens, 2 of 1 USD',
    });
    // A zero budget allows nothing.
    expect(budgetStatus({ maxTokens: 0 }, usage(0, 0))?.state).toBe('spent');
    expect(budgetStatus({ maxCostUsd: 0 }, usage(0, 0))?.state).toBe('spent');
  });

  it('keeps the limits it was made with, whatever happens to the object later', () => {
    const budget = { maxTokens: 10 };
    const policy = budgetPolicy(budget);
    budget.maxTokens = 1_000_000;
    expect(policy.name).toBe('budget');
    expect(policy.check(hop()).decision).toBe('deny');
  });

  it("counts the hops before this one, its own and its children's, against maxHops", () => {
    const policy = budgetPolicy({ maxHops: 5 });
    expect(policy.check(hop({ hop: 5 })).decision).toBe('allow');
    expect(policy.check(hop({ hop: 6 }))).toEqual({ decision: 'deny', reason: 'budget spent: 5 of 5 hops' });
    expect(policy.check(hop({ hop: 2, childHops: 3 })).decision).toBe('allow');
    expect(policy.check(hop({ hop: 2, childHops: 4 }))).toEqual({
      decision: 'deny',
      reason: 'budget spent: 5 of 5 hops',
    });
  });

  it('accepts zero and whole numbers, refuses anything else with GOVERNANCE_INVALID_POLICY naming the value', () => {
    expect(() => budgetPolicy({ maxTokens: 0 })).not.toThrow();
    expect(() => budgetPolicy({ maxCostUsd: 0 })).not.toThrow();
    expect(() => budgetPolicy({ maxCostUsd: 0.5 })).not.toThrow();
    const refused = (budget: Parameters<typeof budgetPolicy>[0], message: string) =>
      expect(() => budgetPolicy(budget)).toThrow(
        expect.objectContaining({ name: 'WorkflowError', code: 'GOVERNANCE_INVALID_POLICY', message }),
      );
    refused({}, 'a budget sets maxTokens, maxCostUsd, maxHops or any of them together');
    refused({ maxHops: 0 }, 'maxHops must be a whole number of hops >= 1, not 0');
    refused({ maxHops: 1.5 }, 'maxHops must be a whole number of hops >= 1, not 1.5');
    refused({ maxTokens: -1 }, 'maxTokens must be a whole number of tokens, not -1');
    refused({ maxTokens: 2.5 }, 'maxTokens must be a whole number of tokens, not 2.5');
    refused({ maxTokens: Number.NaN, maxCostUsd: 1 }, 'maxTokens must be a whole number of tokens, not NaN');
    refused({ maxCostUsd: -0.01 }, 'maxCostUsd must be a finite amount of dollars, not -0.01');
    refused({ maxCostUsd: Number.NaN }, 'maxCostUsd must be a finite amount of dollars, not NaN');
    refused(
      { maxTokens: 5, maxCostUsd: Number.POSITIVE_INFINITY },
      'maxCostUsd must be a finite amount of dollars, not Infinity',
    );
  });
});

describe('role allow-list and hop limit', () => {
  test.prop([
    fc.uniqueArray(fc.constantFrom('coding', 'review', 'devops', 'qa'), { minLength: 1 }),
    fc.constantFrom('coding', 'review', 'devops', 'qa', 'x'),
  ])('allows exactly the listed roles, and names them sorted when it denies', (roles, role) => {
    const policy = roleAllowListPolicy(new Set(roles).values());
    expect(policy.name).toBe('role-allow-list');
    const listed = [...roles].sort().join(', ');
    expect(policy.check(hop({ role }))).toEqual(
      (roles as string[]).includes(role)
        ? { decision: 'allow' }
        : { decision: 'deny', reason: `role ${role} is not allowed (allowed: ${listed})` },
    );
  });

  it('refuses an empty allow-list', () => {
    expect(() => roleAllowListPolicy(new Set())).toThrow(
      expect.objectContaining({
        code: 'GOVERNANCE_INVALID_POLICY',
        message: 'a role allow-list names at least one role',
      }),
    );
  });

  test.prop([fc.integer({ min: 1, max: 100 }), fc.integer({ min: 1, max: 120 })])(
    'allows hops up to the limit and denies every hop past it',
    (max, n) => {
      const policy = maxHopsPolicy(max);
      expect(policy.name).toBe('max-hops');
      expect(policy.check(hop({ hop: n }))).toEqual(
        n <= max ? { decision: 'allow' } : { decision: 'deny', reason: `hop ${n} is over the limit of ${max} hops` },
      );
    },
  );

  it('a limit of one hop is allowed; anything but a whole number from 1 is refused, naming the value', () => {
    expect(maxHopsPolicy(1).check(hop({ hop: 1 }))).toEqual({ decision: 'allow' });
    for (const max of [0, -3, 1.5, Number.NaN]) {
      expect(() => maxHopsPolicy(max)).toThrow(
        expect.objectContaining({
          code: 'GOVERNANCE_INVALID_POLICY',
          message: `max hops must be a whole number >= 1, not ${max}`,
        }),
      );
    }
  });
});
