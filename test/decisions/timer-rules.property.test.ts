import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import {
  type Decision,
  type DecisionEnv,
  type ItemView,
  type StartBody,
  hopTimeout,
  timerDue,
} from '../../src/decisions/coordinator-decisions.js';
import type { ResultEnvelope } from '../../src/protocol/work-envelope.js';
import type { WorkflowDefinition } from '../../src/protocol/workflow.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import type { HopRecord } from '../../src/workflow/records.js';
import { ChildTree, answerHeaders, hopHeaders } from './child-tree.js';

/**
 * The rules of time passing (`timer`), each stated on its own: a hop's
 * timeout is its stage's, else the deployment's default when it is above 0,
 * else none; an item past its deadline fails `DEADLINE_EXCEEDED` (audited
 * with the deadline and the item's age, told in a `timed-out` event) and
 * nothing else is decided; a stage hop out past its next timeout is told to
 * the run and, while its retry policy allows, published again as it went out
 * (its start row, or the reply that resumed it) with its timeouts counted,
 * audited `republished` and told; on its last attempt it fails `HopTimedOut`
 * with what it cost (its cost entry, its usage row) and the run routes the
 * failure; a query out past the asking stage's timeout is published again
 * the same way, or fails and is the answer the asking hop resumes with (a
 * question not kept cannot be published again and fails at once). A
 * suspended hop is not timed out; an ended item and an unknown one are
 * unchanged. `timerDue` says an item is due exactly when the timer changes
 * it.
 */

/** A tree whose decisions run under a default hop timeout. */
class Clock extends ChildTree {
  constructor(readonly hopTimeoutMs: number | undefined) {
    super();
  }
  override env(): DecisionEnv {
    return { ...super.env(), ...(this.hopTimeoutMs === undefined ? {} : { hopTimeoutMs: this.hopTimeoutMs }) };
  }
  /** The timer's decision, after checking that `timerDue` says it is due exactly when it changes the item. */
  tick(id: string): Decision {
    const view = this.views.get(id);
    const due = view !== undefined && timerDue(view, this.now, this.hopTimeoutMs);
    const d = this.decide(id, { kind: 'timer' });
    expect(d.handling).toBe('applied');
    expect(d.changes !== null).toBe(due);
    if (d.changes === null) expect(d.view).toBe(view);
    else expect(d.changes.created).toBe(false);
    return d;
  }
}

interface Flow {
  /** Stage `a`'s own timeout, if it sets one. */
  timeout: number | undefined;
  maximumAttempts: number;
  /** The item's deadline, in ms from its creation. */
  deadline: number | undefined;
  /** Whether a rule of `a` routes its `HopTimedOut` failure to `b`. */
  routed: boolean;
}

/** Stage `a` (role `w`), then `b` (role `y`). */
function flow(f: Flow): WorkflowDefinition {
  return parseWorkflowDefinition({
    id: 'clocked',
    version: 1,
    start: 'a',
    defaults: { retry: { maximumAttempts: f.maximumAttempts, initialInterval: 0 } },
    ...(f.deadline === undefined ? {} : { deadline: f.deadline }),
    stages: {
      a: {
        role: 'w',
        ...(f.timeout === undefined ? {} : { timeout: f.timeout }),
        next: [
          { on: 'succeeded', goto: 'b' },
          ...(f.routed ? [{ on: 'failed', errorType: 'HopTimedOut', goto: 'b' }] : []),
        ],
      },
      b: { role: 'y' },
    },
  });
}

const flowArb: fc.Arbitrary<Flow> = fc.record({
  timeout: fc.option(fc.integer({ min: 1, max: 5_000 }), { nil: undefined }),
  maximumAttempts: fc.integer({ min: 1, max: 4 }),
  deadline: fc.constant(undefined),
  routed: fc.boolean(),
});
/** The deployment's default hop timeout: none, 0 (none), or some. */
const defaultArb = fc.option(fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 5_000 })), { nil: undefined });

/** The timeout a hop of stage `a` gets. */
const timeoutOf = (f: Flow, def: number | undefined) => f.timeout ?? (def !== undefined && def > 0 ? def : undefined);

const headersOf = hopHeaders;

/** The stage hop of `id` out (dispatched or suspended). */
function stageHop(t: ChildTree, id: string): HopRecord {
  return [...t.views.get(id)!.hops.values()].find(
    (h) => h.kind === 'stage' && (h.state === 'dispatched' || h.state === 'suspended'),
  )!;
}

/** The hop out asks `x` a question under `token`. */
function ask(t: ChildTree, id: string, token: string): HopRecord {
  const hop = stageHop(t, id);
  const result: ResultEnvelope = {
    kind: 'result',
    headers: headersOf(hop),
    role: hop.role,
    outcome: 'suspended',
    parts: [],
    artifacts: [],
    ask: { role: 'x', continuationToken: token, message: { parts: [{ kind: 'text', text: `q ${token}` }] } },
  };
  t.decide(id, { kind: 'result', result });
  return [...t.views.get(id)!.hops.values()].find((h) => h.continuation === token)!;
}

/** The answer to the query under `token`. */
function reply(t: ChildTree, id: string, token: string): ResultEnvelope {
  const result: ResultEnvelope = {
    kind: 'result',
    headers: answerHeaders(t.views.get(id)!, token),
    role: 'x',
    outcome: 'completed',
    parts: [{ kind: 'text', text: 'a' }],
    artifacts: [],
  };
  t.decide(id, { kind: 'result', result });
  return result;
}

const elapsed = (ms: number) => ({ inputTokens: 0, outputTokens: 0, costUsd: 0, elapsedMs: ms });

describe('the timeout of a hop', () => {
  test.prop([
    fc.option(fc.integer({ min: 1, max: 9_999 }), { nil: undefined }),
    fc.option(fc.integer({ min: -5, max: 9_999 }), { nil: undefined }),
    fc.constantFrom('a', 'b', 'nowhere'),
  ])("is its stage's own, else the default above 0, else none", (own, def, stage) => {
    const definition = flow({ timeout: own, maximumAttempts: 1, deadline: undefined, routed: false });
    const expected = stage === 'a' && own !== undefined ? own : def !== undefined && def > 0 ? def : undefined;
    expect(hopTimeout(definition, stage, def)).toBe(expected);
  });
});

describe('a stage hop out past its timeout', () => {
  test.prop([flowArb, defaultArb, fc.integer({ min: 0, max: 3 })], { numRuns: 60 })(
    'is published again as it went out while its attempts allow, its timeouts counted, audited and told',
    (f, def, early) => {
      const timeout = timeoutOf(f, def);
      const t = new Clock(def);
      t.create('item', flow(f));
      const hop = stageHop(t, 'item');
      const [first] = t.bodies<StartBody>('item', 'start');
      if (timeout === undefined) {
        // No timeout: never timed out.
        t.now += 10_000_000;
        expect(t.tick('item').changes).toBeNull();
        return;
      }
      for (let n = 1; n < f.maximumAttempts; n++) {
        // Not before its n-th timeout.
        t.now = hop.activeSince! + timeout * n - 1 - early;
        expect(t.tick('item').changes).toBeNull();
        t.now += 1 + early;
        const d = t.tick('item');
        expect(d.runEvents).toEqual([
          { type: 'HOP_TIMED_OUT', hop: 1, attempt: 1, timeouts: n, timeoutMs: timeout, usage: elapsed(timeout * n) },
        ]);
        expect(d.view!.hops.get(hop.id)).toEqual({ ...hop, timeouts: n });
        expect(d.changes!.hops).toEqual([{ hop: { ...hop, timeouts: n }, created: false }]);
        expect(d.changes!.outbox).toEqual([{ kind: 'start', body: first }]);
        expect(d.changes!.audit).toEqual([
          {
            kind: 'timeout',
            itemId: 'item',
            hop: 1,
            actor: 'coordinator',
            data: {
              what: 'hop',
              hopId: hop.id,
              stage: 'a',
              role: 'w',
              timeoutMs: timeout,
              timeouts: n,
              action: 'republished',
              idempotencyKey: hop.idempotencyKey,
            },
          },
        ]);
        expect(d.events).toEqual([
          expect.objectContaining({
            kind: 'timed-out',
            hop: 1,
            stage: 'a',
            role: 'w',
            detail: `out longer than ${timeout} ms: re-published (${n})`,
          }),
        ]);
        expect(d.changes!.usage).toEqual([]);
        expect(d.view!.item.state).toBe('running');
      }
    },
  );

  test.prop([flowArb, defaultArb, fc.integer({ min: 0, max: 50 })], { numRuns: 60 })(
    'fails HopTimedOut on its last attempt, with what it cost, and the run routes the failure',
    (f, def, late) => {
      const timeout = timeoutOf(f, def);
      if (timeout === undefined) return;
      const t = new Clock(def);
      t.create('item', flow(f));
      const hop = stageHop(t, 'item');
      for (let n = 1; n < f.maximumAttempts; n++) {
        t.now = hop.activeSince! + timeout * n;
        t.tick('item');
      }
      const n = f.maximumAttempts;
      t.now = hop.activeSince! + timeout * n + late;
      const d = t.tick('item');
      const age = timeout * n + late;
      const message = `out longer than ${timeout} ms ${n} times: its retry policy allows ${n}`;
      expect(d.runEvents[0]).toEqual({
        type: 'HOP_TIMED_OUT',
        hop: 1,
        attempt: 1,
        timeouts: n,
        timeoutMs: timeout,
        usage: elapsed(age),
      });
      const failed: HopRecord = {
        ...hop,
        timeouts: n,
        state: 'failed',
        finishedAt: t.now,
        activeSince: null,
        model: hop.model ?? expect.any(String),
        usage: elapsed(age),
        error: { type: 'HopTimedOut', message },
      };
      expect(d.view!.hops.get(hop.id)).toEqual(failed);
      expect(d.changes!.usage).toEqual([expect.objectContaining({ hopId: hop.id, elapsedMs: age, inputTokens: 0 })]);
      expect(d.view!.item.usage.elapsedMs).toBe(age);
      const audit = d.changes!.audit;
      expect(audit.slice(0, 2)).toEqual([
        {
          kind: 'timeout',
          itemId: 'item',
          hop: 1,
          actor: 'coordinator',
          data: {
            what: 'hop',
            hopId: hop.id,
            stage: 'a',
            role: 'w',
            timeoutMs: timeout,
            timeouts: n,
            action: 'failed',
          },
        },
        expect.objectContaining({
          kind: 'cost',
          hop: 1,
          data: expect.objectContaining({ hopId: hop.id, elapsedMs: age }),
        }),
      ]);
      expect(d.events[0]).toEqual(
        expect.objectContaining({
          kind: 'hop-failed',
          hop: 1,
          stage: 'a',
          role: 'w',
          detail: `failed: HopTimedOut: ${message}`,
        }),
      );
      expect(d.events.filter((e) => e.kind === 'budget-exceeded')).toEqual([]);
      if (f.routed) {
        // The rule takes it: the next stage's hop goes out in the same decision.
        expect(d.view!.item.state).toBe('running');
        expect(stageHop(t, 'item')).toMatchObject({ stage: 'b', hop: 2, state: 'dispatched' });
        expect(d.changes!.outbox.map((o) => (o.body as StartBody).role)).toEqual(['y']);
      } else {
        expect(d.view!.item).toMatchObject({ state: 'failed', failure: { code: 'RETRIES_EXHAUSTED' } });
        expect(audit.filter((a) => a.kind === 'item-failed')).toHaveLength(1);
        expect(d.changes!.ended).toBe(true);
        // Ended: time passing changes nothing any more.
        t.now += 10 * timeout;
        expect(t.tick('item').changes).toBeNull();
      }
    },
  );

  test.prop([fc.integer({ min: 1, max: 5_000 }), fc.integer({ min: 2, max: 4 }), fc.integer({ min: 1, max: 3 })], {
    numRuns: 30,
  })(
    'a hop resumed by an answer is published again as the reply that resumed it',
    (timeout, maximumAttempts, rounds) => {
      const t = new Clock(undefined);
      t.create('item', flow({ timeout, maximumAttempts, deadline: undefined, routed: false }));
      let last: ResultEnvelope | undefined;
      for (let r = 0; r < rounds; r++) {
        t.now += 1;
        ask(t, 'item', `tok-${r}`);
        t.now += 1;
        last = reply(t, 'item', `tok-${r}`);
      }
      const hop = stageHop(t, 'item');
      expect(hop.state).toBe('dispatched');
      t.now = hop.activeSince! + timeout;
      const d = t.tick('item');
      expect(d.changes!.outbox).toEqual([{ kind: 'signal', body: last }]);
      expect(d.view!.hops.get(hop.id)).toEqual({ ...hop, timeouts: 1 });
    },
  );

  test.prop([fc.integer({ min: 1, max: 5_000 }), fc.integer({ min: 1, max: 3 })], { numRuns: 20 })(
    'a hop that asked nothing is published again as it went out, whatever an earlier hop asked',
    (timeout, rounds) => {
      const t = new Clock(timeout);
      t.create('item', flow({ timeout: undefined, maximumAttempts: 2, deadline: undefined, routed: false }));
      for (let r = 0; r < rounds; r++) {
        t.now += 1;
        ask(t, 'item', `tok-${r}`);
        t.now += 1;
        reply(t, 'item', `tok-${r}`);
      }
      t.now += 1;
      t.answer('item', { parts: [] });
      const hop = stageHop(t, 'item');
      expect(hop.stage).toBe('b');
      const own = t.bodies<StartBody>('item', 'start').find((b) => b.idempotencyKey === hop.idempotencyKey);
      t.now = hop.activeSince! + timeout;
      const d = t.tick('item');
      expect(d.changes!.outbox).toEqual([{ kind: 'start', body: own }]);
    },
  );
});

describe('a query out past the asking stage’s timeout', () => {
  const queryCase = fc.record({
    timeout: fc.option(fc.integer({ min: 1, max: 5_000 }), { nil: undefined }),
    def: defaultArb,
    maximumAttempts: fc.integer({ min: 1, max: 4 }),
  });

  test.prop([queryCase], { numRuns: 50 })(
    'is published again while the attempts allow, then fails and is the answer the asking hop resumes with',
    ({ timeout: own, def, maximumAttempts }) => {
      const f = { timeout: own, maximumAttempts, deadline: undefined, routed: false };
      const timeout = timeoutOf(f, def);
      const t = new Clock(def);
      t.create('item', flow(f));
      t.now += 3;
      const query = ask(t, 'item', 'tok');
      const asking = t.views.get('item')!.hops.get(query.askedBy!)!;
      const questionRow = t.bodies<StartBody>('item', 'start').find((b) => b.idempotencyKey === query.idempotencyKey);
      if (timeout === undefined) {
        t.now += 10_000_000;
        expect(t.tick('item').changes).toBeNull();
        return;
      }
      // The suspended stage hop is never timed out itself; its query is.
      for (let n = 1; n < maximumAttempts; n++) {
        t.now = query.activeSince! + timeout * n - 1;
        expect(t.tick('item').changes).toBeNull();
        t.now += 1;
        const d = t.tick('item');
        expect(d.runEvents).toEqual([
          {
            type: 'HOP_TIMED_OUT',
            hop: asking.hop,
            attempt: asking.attempt,
            timeouts: n,
            timeoutMs: timeout,
            continuation: 'tok',
            usage: elapsed(timeout * n),
          },
        ]);
        expect(d.view!.hops.get(query.id)).toEqual({ ...query, timeouts: n });
        expect(d.view!.hops.get(asking.id)).toEqual(asking);
        expect(d.changes!.outbox).toEqual([{ kind: 'start', body: questionRow }]);
        expect(d.changes!.audit).toEqual([
          {
            kind: 'timeout',
            itemId: 'item',
            hop: asking.hop,
            actor: 'coordinator',
            data: {
              what: 'query',
              hopId: query.id,
              askedBy: asking.id,
              stage: 'a',
              role: 'x',
              timeoutMs: timeout,
              timeouts: n,
              action: 'republished',
              idempotencyKey: query.idempotencyKey,
            },
          },
        ]);
        expect(d.events).toEqual([
          expect.objectContaining({
            kind: 'timed-out',
            hop: asking.hop,
            stage: 'a',
            role: 'x',
            detail: `query to x out longer than ${timeout} ms: re-published (${n})`,
          }),
        ]);
        expect(d.view!.item.state).toBe('suspended');
      }
      const n = maximumAttempts;
      t.now = query.activeSince! + timeout * n;
      const d = t.tick('item');
      const message = `out longer than ${timeout} ms ${n} times: the retry policy of stage a allows ${n}`;
      expectQueryFailed(t, d, query, asking, n, timeout, message);
    },
  );

  test.prop([fc.integer({ min: 1, max: 5_000 }), fc.integer({ min: 1, max: 4 })], { numRuns: 30 })(
    'a question not kept cannot be published again: it fails at its first timeout',
    (timeout, maximumAttempts) => {
      const t = new Clock(undefined);
      t.create('item', flow({ timeout, maximumAttempts, deadline: undefined, routed: false }));
      t.now += 3;
      const asked = ask(t, 'item', 'tok');
      // As an earlier Coordinator kept it: without its question.
      const view = t.views.get('item')!;
      const query: HopRecord = { ...asked, question: null };
      t.views.set('item', { ...view, hops: new Map([...view.hops, [query.id, query]]) });
      const asking = view.hops.get(query.askedBy!)!;
      t.now = query.activeSince! + timeout;
      const d = t.tick('item');
      expect(d.runEvents[0]).toEqual({
        type: 'HOP_TIMED_OUT',
        hop: asking.hop,
        attempt: asking.attempt,
        timeouts: 1,
        timeoutMs: timeout,
        continuation: 'tok',
        questionKept: false,
        usage: elapsed(timeout),
      });
      const message = `out longer than ${timeout} ms, and its question was not kept to publish it again`;
      expectQueryFailed(t, d, query, asking, 1, timeout, message);
    },
  );
});

/** The query failed `HopTimedOut` at its `n`-th timeout: audited, told, recorded as its answer, and the asking hop resumed with it. */
function expectQueryFailed(
  t: ChildTree,
  d: Decision,
  query: HopRecord,
  asking: HopRecord,
  n: number,
  timeout: number,
  message: string,
): void {
  const failure: ResultEnvelope = {
    kind: 'result',
    headers: {
      taskId: asking.id,
      runId: 'item',
      hop: asking.hop,
      attempt: 1,
      idempotencyKey: query.idempotencyKey,
      askedBy: { role: 'w', continuationToken: 'tok', taskId: asking.id, hop: asking.hop },
    },
    role: 'x',
    outcome: 'failed',
    parts: [],
    artifacts: [],
    error: { type: 'HopTimedOut', message },
  };
  // The run took the timeout as the answer: it resumes the hop, no other event.
  expect(d.runEvents.map((e) => e.type)).toEqual(['HOP_TIMED_OUT']);
  expect(d.view!.hops.get(query.id)).toEqual({
    ...query,
    timeouts: n,
    state: 'failed',
    finishedAt: t.now,
    activeSince: null,
    model: expect.any(String),
    usage: elapsed(timeout * n),
    error: { type: 'HopTimedOut', message },
    reply: failure,
  });
  const audit = d.changes!.audit;
  expect(audit[0]).toEqual({
    kind: 'timeout',
    itemId: 'item',
    hop: asking.hop,
    actor: 'coordinator',
    data: {
      what: 'query',
      hopId: query.id,
      askedBy: asking.id,
      stage: 'a',
      role: 'x',
      timeoutMs: timeout,
      timeouts: n,
      action: 'failed',
    },
  });
  expect(audit.map((a) => a.kind)).toEqual(['timeout', 'result', 'cost', 'governance', 'resume']);
  expect(d.events.map((e) => [e.kind, e.detail])).toEqual([
    ['timed-out', `query to x failed: HopTimedOut: ${message}`],
    ['answered', 'the query failed: HopTimedOut'],
    ['resumed', "resumed with x's answer"],
  ]);
  expect(d.events[0]).toMatchObject({ hop: asking.hop, stage: 'a', role: 'x' });
  // The asking hop is out again, its failure the reply it resumes with.
  expect(d.view!.hops.get(asking.id)).toMatchObject({ state: 'dispatched', activeSince: t.now });
  expect(d.changes!.outbox).toEqual([{ kind: 'signal', body: failure }]);
  expect(d.view!.item.state).toBe('running');
}

describe('an item past its deadline', () => {
  test.prop(
    [
      fc.integer({ min: 1, max: 5_000 }),
      fc.integer({ min: 0, max: 3_000 }),
      fc.option(fc.integer({ min: 1, max: 5_000 }), { nil: undefined }),
    ],
    { numRuns: 50 },
  )(
    'fails DEADLINE_EXCEEDED, audited with its deadline and age, and nothing else is decided',
    (deadline, past, timeout) => {
      const t = new Clock(undefined);
      t.create('item', flow({ timeout, maximumAttempts: 2, deadline, routed: false }));
      const created = t.views.get('item')!.item.createdAt;
      const hop = stageHop(t, 'item');
      // Due from the deadline itself on.
      expect(timerDue(t.views.get('item')!, created + deadline)).toBe(true);
      // Before it: a tick that changes nothing is dropped.
      t.now = created + deadline - 1;
      const before = t.tick('item');
      if (before.changes !== null) {
        // Its hop timed out first: published again, the run told the time too.
        expect(before.runEvents.map((e) => e.type)).toEqual(['TICK', 'HOP_TIMED_OUT']);
      }
      t.now = created + deadline + past;
      const d = t.tick('item');
      expect(d.runEvents).toEqual([{ type: 'TICK', now: t.now }]);
      const item = d.view!.item;
      expect(item).toMatchObject({ state: 'failed', failure: { code: 'DEADLINE_EXCEEDED' }, finishedAt: t.now });
      const reason = item.failure!.reason;
      expect(d.changes!.audit[0]).toEqual({
        kind: 'timeout',
        itemId: 'item',
        hop: 1,
        actor: 'coordinator',
        data: { what: 'deadline', deadlineMs: deadline, ageMs: deadline + past },
      });
      expect(d.changes!.audit.map((a) => a.kind)).toEqual(['timeout', 'item-failed']);
      expect(d.events[0]).toMatchObject({ kind: 'timed-out', hop: 1, detail: reason });
      expect(d.changes!.ended).toBe(true);
      // Its hop is not timed out by the same tick.
      expect(d.view!.hops.get(hop.id)!.timeouts).toBe(before.changes === null ? 0 : 1);
      expect(d.changes!.outbox).toEqual([]);
      t.now += 1;
      expect(t.tick('item').changes).toBeNull();
    },
  );

  test.prop([fc.integer({ min: 1, max: 5_000 })], { numRuns: 20 })(
    'an unknown item, or one with no run, is unchanged',
    (ms) => {
      const t = new Clock(ms);
      const none = t.decide('nothing', { kind: 'timer' });
      expect(none).toMatchObject({ handling: 'applied', view: undefined, changes: null });
      t.create('item', flow({ timeout: undefined, maximumAttempts: 1, deadline: 1, routed: false }));
      const view = t.views.get('item')!;
      const runless: ItemView = { ...view, run: null };
      t.views.set('item', runless);
      t.now += 10 * ms;
      expect(timerDue(runless, t.now, ms)).toBe(false);
      expect(t.decide('item', { kind: 'timer' })).toMatchObject({ view: runless, changes: null, runEvents: [] });
    },
  );
});
