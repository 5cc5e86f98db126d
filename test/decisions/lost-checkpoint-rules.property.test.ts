import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import type { Decision, StartBody } from '../../src/decisions/coordinator-decisions.js';
import { type ResultEnvelope, UNKNOWN_CONTINUATION } from '../../src/protocol/work-envelope.js';
import type { WorkflowDefinition } from '../../src/protocol/workflow.js';
import type { HopRecord } from '../../src/workflow/records.js';
import { ChildTree, answerHeaders, hopHeaders, roleChain } from './child-tree.js';

/**
 * The rules of a resumed hop whose worker lost its checkpoint (a failure of
 * type `UnknownContinuation`), each stated on its own: a hop that asked and
 * was answered starts over under its own key, out again from now with what
 * its failure cost, its start row the one it first went out with (the
 * item's budget as spent now), one `reconcile` audit entry naming the last
 * continuation it resumed from and the hop republished, then its cost entry,
 * and one `dispatched` event; the run is not stepped and the item stays
 * where it was. Any other failure, a hop that asked nothing (or only earlier
 * hops did), a failure without its error, and a completed result carrying
 * that error type, are taken as they always are: no start over.
 */

const chain = (length: number): WorkflowDefinition => roleChain('lost', length, 3);

const usage = (tokens: number) => ({ inputTokens: tokens, outputTokens: 1, costUsd: 0, model: 'm' });

/** The stage hop of `id` that is out. */
function outHop(t: ChildTree, id: string): HopRecord {
  return [...t.views.get(id)!.hops.values()].find((h) => h.kind === 'stage' && h.state === 'dispatched')!;
}

const headersOf = hopHeaders;

/** The hop out asks `x` a question under `token`. */
function ask(t: ChildTree, id: string, token: string): Decision {
  const hop = outHop(t, id);
  const result: ResultEnvelope = {
    kind: 'result',
    headers: headersOf(hop),
    role: hop.role,
    outcome: 'suspended',
    parts: [],
    artifacts: [],
    usage: usage(2),
    ask: { role: 'x', continuationToken: token, message: { parts: [{ kind: 'text', text: `q ${token}` }] } },
  };
  return t.decide(id, { kind: 'result', result });
}

/** The query out under `token` is answered (or fails): the hop that asked resumes. */
function reply(t: ChildTree, id: string, token: string, failed: boolean): Decision {
  const result: ResultEnvelope = {
    kind: 'result',
    headers: answerHeaders(t.views.get(id)!, token),
    role: 'x',
    outcome: failed ? 'failed' : 'completed',
    parts: [{ kind: 'text', text: 'a' }],
    artifacts: [],
    usage: usage(3),
    ...(failed ? { error: { type: 'Nope', message: 'no' } } : {}),
  };
  return t.decide(id, { kind: 'result', result });
}

interface Case {
  length: number;
  /** Hops that succeed before the one that fails (each after `earlier` rounds of questions). */
  done: number;
  earlier: number;
  /** Rounds of question and answer of the hop that fails, and whether each answer failed. */
  rounds: boolean[];
  budget: number | null;
  tokens: number;
  /** The failure's type: the lost checkpoint's, or another. */
  errorType: string;
  /** Where the failure's usage travels: the result's, or its error's. */
  usageOnError: boolean;
  deadLetter: string | null;
}

const caseArb: fc.Arbitrary<Case> = fc.integer({ min: 1, max: 3 }).chain((length) =>
  fc.record({
    length: fc.constant(length),
    done: fc.integer({ min: 0, max: length - 1 }),
    earlier: fc.integer({ min: 0, max: 2 }),
    rounds: fc.array(fc.boolean(), { minLength: 0, maxLength: 3 }),
    budget: fc.option(fc.integer({ min: 10_000, max: 90_000 }), { nil: null }),
    tokens: fc.integer({ min: 0, max: 400 }),
    errorType: fc.constantFrom(UNKNOWN_CONTINUATION, UNKNOWN_CONTINUATION, 'Boom', 'unknownContinuation'),
    usageOnError: fc.boolean(),
    deadLetter: fc.option(fc.stringMatching(/^dl-[0-9]{1,3}$/), { nil: null }),
  }),
);

/** The item created, its first hops done (each asking first), and the hop out asked and answered `rounds`. */
function atFailure(c: Case) {
  const t = new ChildTree();
  const id = 'item';
  t.create(id, chain(c.length), { budget: c.budget === null ? null : { maxTokens: c.budget } });
  let n = 0;
  for (let i = 0; i < c.done; i++) {
    for (let r = 0; r < c.earlier; r++) {
      t.now += 3;
      const token = `tok-${++n}`;
      ask(t, id, token);
      t.now += 3;
      reply(t, id, token, false);
    }
    t.now += 5;
    t.answer(id, { parts: [{ kind: 'text', text: `done ${i}` }], tokens: 1 });
  }
  const tokens: string[] = [];
  for (const failed of c.rounds) {
    t.now += 4;
    const token = `tok-${++n}`;
    tokens.push(token);
    ask(t, id, token);
    t.now += 4;
    reply(t, id, token, failed);
  }
  t.now += 11;
  const before = t.views.get(id)!;
  const hop = outHop(t, id);
  // The row the hop first went out with.
  const first = t.bodies<StartBody>(id, 'start').find((b) => b.idempotencyKey === hop.idempotencyKey && !b.askedBy)!;
  return { t, id, before, hop, first, tokens };
}

/** The worker's failure of the hop out (or a completed result carrying the same error). */
function lost(c: Case, hop: HopRecord, outcome: 'failed' | 'completed' = 'failed'): ResultEnvelope {
  const u = usage(c.tokens);
  return {
    kind: 'result',
    headers: headersOf(hop),
    role: hop.role,
    outcome,
    parts: [],
    artifacts: [],
    ...(c.usageOnError ? {} : { usage: u }),
    error: { type: c.errorType, message: 'no checkpoint', ...(c.usageOnError ? { usage: u } : {}) },
    ...(outcome === 'failed' ? { deliveries: 1 } : {}),
    ...(c.deadLetter === null ? {} : { deadLetter: c.deadLetter }),
  };
}

/** Whether the hop starts over: the lost checkpoint's failure of a hop that resumed from an answer. */
const startsOver = (c: Case) => c.errorType === UNKNOWN_CONTINUATION && c.rounds.length > 0;

describe('a resumed hop whose checkpoint was lost', () => {
  test.prop([caseArb.filter(startsOver)], { numRuns: 80 })(
    'starts over under its own key: out again from now with what its failure cost, the start row it first went out with',
    (c) => {
      const { t, id, before, hop, first } = atFailure(c);
      const d = t.decide(id, { kind: 'result', result: lost(c, hop) });
      expect(d.handling).toBe('applied');
      expect(d.refusal).toBeUndefined();
      const added = { inputTokens: c.tokens, outputTokens: 1, costUsd: 0, elapsedMs: 11 };
      const restarted: HopRecord = {
        ...hop,
        state: 'dispatched',
        activeSince: t.now,
        model: 'm',
        usage: {
          inputTokens: hop.usage.inputTokens + added.inputTokens,
          outputTokens: hop.usage.outputTokens + added.outputTokens,
          costUsd: hop.usage.costUsd + added.costUsd,
          elapsedMs: hop.usage.elapsedMs + added.elapsedMs,
        },
      };
      const after = d.view!;
      expect(after.hops.get(hop.id)).toEqual(restarted);
      expect(d.changes!.hops).toEqual([{ hop: restarted, created: false }]);
      // No other hop moved, none was made.
      for (const [k, h] of before.hops) if (k !== hop.id) expect(after.hops.get(k)).toEqual(h);
      expect(after.hops.size).toBe(before.hops.size);
      // The item: what the failure cost added, nothing else moved.
      expect(after.item).toMatchObject({
        state: before.item.state,
        stage: before.item.stage,
        hop: before.item.hop,
        hops: before.item.hops,
        finishedAt: null,
        failure: null,
        usage: {
          inputTokens: before.item.usage.inputTokens + c.tokens,
          outputTokens: before.item.usage.outputTokens + 1,
        },
      });
      expect(d.changes!.usage).toEqual([
        expect.objectContaining({ hopId: hop.id, itemId: id, agent: 'w', model: 'm', inputTokens: c.tokens }),
      ]);
      // Its start row: the one it first went out with (the budget it carries as spent now).
      const spent = after.item.usage.inputTokens + after.item.usage.outputTokens;
      const { itemBudget: _, ...rest } = first;
      const again =
        c.budget === null
          ? rest
          : { ...rest, itemBudget: { maxTokens: c.budget, spentTokens: spent, spentCostUsd: 0 } };
      const starts = d.changes!.outbox.filter((o) => o.kind === 'start').map((o) => o.body);
      expect(starts).toEqual([again]);
      // Its failure's dead letter is handled: the hop is out again.
      expect(d.changes!.outbox.map((o) => o.kind)).toEqual(
        c.deadLetter === null ? ['start'] : ['start', 'purge-dead-letter'],
      );
    },
  );

  test.prop([caseArb.filter(startsOver)], { numRuns: 80 })(
    'is audited reconcile (the last continuation it resumed from, the hop republished) with its cost, and told as dispatched',
    (c) => {
      const { t, id, hop, tokens } = atFailure(c);
      const d = t.decide(id, { kind: 'result', result: lost(c, hop) });
      const audit = d.changes!.audit;
      expect(audit.map((a) => a.kind)).toEqual(['reconcile', 'cost']);
      expect(audit[0]).toEqual({
        kind: 'reconcile',
        itemId: id,
        hop: hop.hop,
        actor: 'coordinator',
        data: {
          reason: `the checkpoint hop ${hop.hop} (w) resumes from is gone: it starts over`,
          continuation: tokens.at(-1),
          republished: [{ hopId: hop.id, kind: 'stage', role: 'w', idempotencyKey: hop.idempotencyKey }],
        },
      });
      expect(audit[1]).toMatchObject({
        kind: 'cost',
        itemId: id,
        hop: hop.hop,
        data: expect.objectContaining({ hopId: hop.id, inputTokens: c.tokens }),
      });
      expect(d.events).toEqual([
        {
          kind: 'dispatched',
          itemId: id,
          hop: hop.hop,
          stage: hop.stage,
          role: 'w',
          detail: 'its checkpoint was lost: started over under its own key',
          usage: { inputTokens: c.tokens, outputTokens: 1, costUsd: 0, elapsedMs: 11 },
          model: 'm',
          at: t.now,
        },
      ]);
    },
  );

  test.prop([caseArb.filter(startsOver)], { numRuns: 60 })(
    'leaves the run as it was: no event sent to it, nothing refused, the item still running',
    (c) => {
      const { t, id, before, hop } = atFailure(c);
      const d = t.decide(id, { kind: 'result', result: lost(c, hop) });
      expect(d.runEvents).toEqual([]);
      expect(d.refused).toEqual([]);
      expect(d.governed).toEqual([]);
      expect(d.view!.run).toBe(before.run);
      expect(d.view!.item.state).toBe('running');
      expect(d.changes!.ended).toBe(false);
      // Out again: its next result is taken as the hop's.
      t.now += 2;
      const done = t.answer(id, { parts: [{ kind: 'text', text: 'at last' }] });
      expect(done.view!.hops.get(hop.id)!.state).toBe('completed');
    },
  );

  test.prop([caseArb.filter((c) => !startsOver(c))], { numRuns: 80 })(
    'any other failure, or a hop that resumed from no answer of its own, fails as any failure does',
    (c) => {
      const { t, id, hop } = atFailure(c);
      const d = t.decide(id, { kind: 'result', result: lost(c, hop) });
      expect(d.view!.hops.get(hop.id)).toMatchObject({ state: 'failed', error: { type: c.errorType } });
      expect(d.changes!.audit.filter((a) => a.kind === 'reconcile')).toEqual([]);
      expect(d.changes!.audit.map((a) => a.kind)).toContain('failure');
      expect(d.runEvents.map((e) => e.type)).toContain('HOP_FAILED');
      expect(d.events.filter((e) => e.kind === 'dispatched' && e.hop === hop.hop)).toEqual([]);
      expect(d.changes!.outbox.filter((o) => (o.body as StartBody).idempotencyKey === hop.idempotencyKey)).toEqual([]);
    },
  );

  test.prop([caseArb], { numRuns: 60 })(
    'a completed result carrying that error type completes the hop: the outcome decides',
    (c) => {
      const { t, id, hop } = atFailure({ ...c, errorType: UNKNOWN_CONTINUATION });
      const d = t.decide(id, {
        kind: 'result',
        result: lost({ ...c, errorType: UNKNOWN_CONTINUATION }, hop, 'completed'),
      });
      expect(d.view!.hops.get(hop.id)!.state).toBe('completed');
      expect(d.changes!.audit.filter((a) => a.kind === 'reconcile')).toEqual([]);
      expect(d.runEvents.map((e) => e.type)).toContain('HOP_SUCCEEDED');
    },
  );

  test.prop([caseArb], { numRuns: 40 })(
    'a failure without its error is not a lost checkpoint: the hop fails as an invalid result',
    (c) => {
      const { t, id, hop } = atFailure(c);
      const { error: _, ...bare } = lost({ ...c, usageOnError: false }, hop);
      const d = t.decide(id, { kind: 'result', result: bare });
      expect(d.view!.hops.get(hop.id)).toMatchObject({ state: 'failed', error: { type: 'InvalidResult' } });
      expect(d.changes!.audit.filter((a) => a.kind === 'reconcile')).toEqual([]);
      expect(d.runEvents.map((e) => e.type)).toContain('HOP_FAILED');
    },
  );
});
