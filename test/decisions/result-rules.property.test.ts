import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { type Decision, type ItemView, decide } from '../../src/decisions/coordinator-decisions.js';
import { segmentEnd } from '../../src/decisions/coordinator/result.js';
import type { Part } from '../../src/protocol/parts.js';
import { type ResultEnvelope, UNKNOWN_CONTINUATION } from '../../src/protocol/work-envelope.js';
import type { WorkflowDefinition } from '../../src/protocol/workflow.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import type { HopRecord } from '../../src/workflow/records.js';
import { ChildTree } from './child-tree.js';

/**
 * The rules of a hop's result as `decide` takes it, each stated on its own:
 * - a result finds its hop by task id and item, else it is unknown and
 *   changes nothing; a hop no longer out takes none (a duplicate);
 * - a completed result completes its hop at the decision's time, writes a
 *   `result` audit entry (its hop, parts and artifacts counted) then its
 *   cost, one `hop-completed` event, and gives the run the first `data`
 *   part as the hop's output;
 * - a failed result fails its hop with its error (one without an error is an
 *   `InvalidResult`), writes a `failure` entry (message bounded, deliveries
 *   counted) then its cost, one `hop-failed` event, and gives the run the
 *   failure, bounded as the run's event allows;
 * - the dead letter a failure names is purged when the run routes the
 *   failure on purpose or the item was canceled, and kept otherwise;
 * - a result after the item ended is late: its cost is written, its hop
 *   ends, the run is not told;
 * - a hop's time ends when its result was published, bounded by when it
 *   began running and by now.
 */

/** Stage `a` (role w) then `b` (role x); a failure of type `Routed` goes to `b`, `Ends` ends the run failed. */
const flow: WorkflowDefinition = parseWorkflowDefinition({
  id: 'results',
  version: 1,
  start: 'a',
  stages: {
    a: {
      role: 'w',
      next: [
        { on: 'succeeded', goto: 'b' },
        { on: 'failed', errorType: 'Routed', goto: 'b' },
        { on: 'failed', errorType: 'Ends', end: 'failed', reason: 'ended on purpose' },
      ],
    },
    b: { role: 'x', next: [{ on: 'succeeded', end: 'completed' }] },
  },
});

/** The hop of the item that is out. */
function outHop(view: ItemView): HopRecord {
  const hop = [...view.hops.values()].find((h) => h.state === 'dispatched');
  if (hop === undefined) throw new Error('no hop is out');
  return hop;
}

function envelope(hop: HopRecord, fields: Partial<ResultEnvelope> & Pick<ResultEnvelope, 'outcome'>): ResultEnvelope {
  return {
    kind: 'result',
    headers: {
      taskId: hop.id,
      runId: hop.itemId,
      hop: hop.hop,
      attempt: hop.attempt,
      idempotencyKey: hop.idempotencyKey,
    },
    role: hop.role,
    parts: [],
    artifacts: [],
    ...fields,
  };
}

function started(): { tree: ChildTree; id: string } {
  const tree = new ChildTree();
  tree.create('item', flow);
  tree.now += 50;
  return { tree, id: 'item' };
}

const usageArb = fc.record({
  inputTokens: fc.integer({ min: 0, max: 500 }),
  outputTokens: fc.integer({ min: 0, max: 500 }),
  costUsd: fc.integer({ min: 0, max: 100 }).map((c) => c / 100),
  model: fc.constantFrom('m1', 'm2'),
});

const partArb: fc.Arbitrary<Part> = fc.oneof(
  fc.record({ kind: fc.constant('text' as const), text: fc.string({ maxLength: 8 }) }),
  fc.record({
    kind: fc.constant('data' as const),
    data: fc.dictionary(fc.stringMatching(/^[a-z]{1,3}$/), fc.integer(), { maxKeys: 3 }),
  }),
);

const artifactArb = fc.record({
  artifactId: fc.stringMatching(/^a[0-9]{1,3}$/),
  parts: fc.constant([{ kind: 'text' as const, text: 'x' }] as Part[]),
});

function auditOf(d: Decision, kind: string) {
  return (d.changes?.audit ?? []).filter((a) => a.kind === kind);
}

function dataOf(entry: { data: unknown }): Record<string, unknown> {
  return JSON.parse(JSON.stringify(entry.data)) as Record<string, unknown>;
}

function purges(d: Decision) {
  return (d.changes?.outbox ?? []).filter((row) => row.kind === 'purge-dead-letter').map((row) => row.body);
}

describe('a result finds its hop once', () => {
  test.prop([fc.constantFrom('completed', 'failed')])('a result for no item is unknown and changes nothing', (o) => {
    const { tree, id } = started();
    const hop = outHop(tree.views.get(id)!);
    const d = decide(undefined, { kind: 'result', result: envelope(hop, { outcome: o as 'completed' }) }, tree.env());
    expect(d.handling).toBe('unknown');
    expect(d.changes).toBeNull();
    expect(d.view).toBeUndefined();
  });

  test.prop([fc.constantFrom('task', 'run', 'both'), fc.stringMatching(/^[a-z]{1,6}$/)])(
    "a result naming a task no hop of the item has, or another item's hop, is unknown",
    (which, other) => {
      const { tree, id } = started();
      const view = tree.views.get(id)!;
      const hop = outHop(view);
      const result = envelope(hop, { outcome: 'completed' });
      const headers = {
        ...result.headers,
        ...(which !== 'run' ? { taskId: `t-${other}` } : {}),
        ...(which !== 'task' ? { runId: `r-${other}` } : {}),
      };
      const d = decide(view, { kind: 'result', result: { ...result, headers } }, tree.env());
      expect(d.handling).toBe('unknown');
      expect(d.changes).toBeNull();
      expect(d.view).toBe(view);
    },
  );

  test.prop([fc.constantFrom('completed', 'failed'), fc.constantFrom('completed', 'failed')])(
    'a hop that took its result takes no other: a duplicate, nothing changes',
    (first, second) => {
      const { tree, id } = started();
      const hop = outHop(tree.views.get(id)!);
      const make = (o: string) =>
        envelope(hop, {
          outcome: o as 'completed',
          ...(o === 'failed' ? { error: { type: 'Routed', message: 'no' }, deliveries: 1 } : {}),
        });
      const d1 = tree.decide(id, { kind: 'result', result: make(first) });
      expect(d1.handling).toBe('applied');
      const view = tree.views.get(id)!;
      const d2 = decide(view, { kind: 'result', result: make(second) }, tree.env());
      expect(d2.handling).toBe('duplicate');
      expect(d2.changes).toBeNull();
      expect(d2.view).toBe(view);
    },
  );
});

describe('a result is what its outcome says', () => {
  test.prop([fc.constantFrom('completed', 'failed'), fc.constantFrom('ask', 'spawn')])(
    'a completed or failed result that also carries a question or children does not suspend its hop',
    (outcome, extra) => {
      const { tree, id } = started();
      const hop = outHop(tree.views.get(id)!);
      const fields =
        extra === 'ask'
          ? { ask: { role: 'x', continuationToken: 'c1', message: { parts: [{ kind: 'text' as const, text: '?' }] } } }
          : {
              spawn: {
                continuationToken: 'c1',
                children: [{ workflow: 'sub@1', input: [{ kind: 'text' as const, text: 'x' }] }],
              },
            };
      const d = tree.decide(id, {
        kind: 'result',
        result: envelope(hop, {
          outcome: outcome as 'completed',
          ...(outcome === 'failed' ? { error: { type: 'Routed', message: 'no' }, deliveries: 1 } : {}),
          ...fields,
        }),
      });
      expect(d.handling).toBe('applied');
      expect(d.view!.hops.get(hop.id)!.state).toBe(outcome);
      expect(auditOf(d, 'suspend')).toEqual([]);
      expect([...d.view!.hops.values()].filter((h) => h.kind === 'query')).toEqual([]);
      expect(d.view!.item.stage).toBe('b');
    },
  );
});

describe('a completed result', () => {
  test.prop([
    usageArb,
    fc.array(partArb, { maxLength: 4 }),
    fc.array(artifactArb, { maxLength: 3 }),
    fc.integer({ min: 1, max: 1_000 }),
  ])(
    'completes its hop, writes its result then its cost, says so once, and gives the run its first data part',
    (usage, parts, artifacts, wait) => {
      const { tree, id } = started();
      const hop = outHop(tree.views.get(id)!);
      tree.now += wait;
      const d = tree.decide(id, {
        kind: 'result',
        result: envelope(hop, { outcome: 'completed', parts, artifacts, usage }),
      });
      expect(d.handling).toBe('applied');
      const row = d.changes!.hops.find((h) => h.hop.id === hop.id)!;
      expect(row.created).toBe(false);
      expect(row.hop.state).toBe('completed');
      expect(row.hop.finishedAt).toBe(tree.now);
      expect(row.hop.usage.inputTokens).toBe(usage.inputTokens);
      expect(row.hop.usage.outputTokens).toBe(usage.outputTokens);
      expect(row.hop.model).toBe(usage.model);
      expect(d.changes!.usage).toHaveLength(1);
      // The result's entry, then its cost, for this hop.
      const kinds = d.changes!.audit.map((a) => a.kind);
      const at = kinds.indexOf('result');
      expect(kinds.slice(at, at + 2)).toEqual(['result', 'cost']);
      const entry = d.changes!.audit[at]!;
      expect(entry).toMatchObject({ itemId: id, hop: hop.hop, actor: 'w' });
      expect(dataOf(entry)).toEqual({
        hopId: hop.id,
        outcome: 'completed',
        parts: parts.length,
        artifacts: artifacts.length,
      });
      const cost = d.changes!.audit[at + 1]!;
      expect(cost.hop).toBe(hop.hop);
      expect(dataOf(cost)).toMatchObject({
        hopId: hop.id,
        agent: 'w',
        model: usage.model,
        inputTokens: usage.inputTokens,
        outputTokens: usage.outputTokens,
        costUsd: usage.costUsd,
        elapsedMs: 50 + wait, // out since its creation, 50 ms before the wait
      });
      const events = d.events.filter((e) => e.kind === 'hop-completed');
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({ hop: hop.hop, detail: 'completed', stage: 'a', role: 'w', model: usage.model });
      // The run took the hop's success, with the first data part as its output, and moved on.
      const first = parts.find((p) => p.kind === 'data');
      const succeeded = d.runEvents.filter((e) => e.type === 'HOP_SUCCEEDED');
      expect(succeeded).toHaveLength(1);
      expect(succeeded[0]).toMatchObject({ hop: hop.hop, attempt: hop.attempt });
      if (first?.kind === 'data') expect(succeeded[0]).toHaveProperty('output', first.data);
      else expect(succeeded[0]).not.toHaveProperty('output');
      expect(d.view!.item.stage).toBe('b');
      expect(outHop(d.view!).role).toBe('x');
    },
  );
});

describe('a failed result', () => {
  test.prop([
    fc.oneof(
      fc.stringMatching(/^[A-Z][a-z]{0,20}$/),
      fc.integer({ min: 100, max: 300 }).map((n) => `E${'e'.repeat(n)}`),
    ),
    fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.integer({ min: 150, max: 2_400 }).map((n) => 'm'.repeat(n)),
    ),
    fc.integer({ min: 1, max: 9 }),
    fc.boolean(),
  ])(
    'fails its hop with its error, writes the failure (bounded) then its cost, says so once, and gives the run the failure',
    (type, message, deliveries, counted) => {
      const { tree, id } = started();
      const hop = outHop(tree.views.get(id)!);
      const error = { type, message };
      const d = tree.decide(id, {
        kind: 'result',
        result: envelope(hop, { outcome: 'failed', error, ...(counted ? { deliveries } : {}) }),
      });
      expect(d.handling).toBe('applied');
      const row = d.changes!.hops.find((h) => h.hop.id === hop.id)!;
      expect(row.hop.state).toBe('failed');
      expect(row.hop.finishedAt).toBe(tree.now);
      expect(row.hop.error).toEqual(error);
      const kinds = d.changes!.audit.map((a) => a.kind);
      const at = kinds.indexOf('failure');
      expect(kinds.slice(at, at + 2)).toEqual(['failure', 'cost']);
      const entry = d.changes!.audit[at]!;
      expect(entry).toMatchObject({ itemId: id, hop: hop.hop, actor: 'w' });
      expect(dataOf(entry)).toEqual({
        hopId: hop.id,
        errorType: type,
        message: message.slice(0, 500),
        deliveries: counted ? deliveries : 1,
      });
      const events = d.events.filter((e) => e.kind === 'hop-failed');
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({
        hop: hop.hop,
        detail: `failed: ${type}: ${message.slice(0, 200)}`,
        stage: 'a',
        role: 'w',
      });
      const failed = d.runEvents.filter((e) => e.type === 'HOP_FAILED');
      expect(failed).toEqual([
        expect.objectContaining({
          hop: hop.hop,
          attempt: hop.attempt,
          errorType: type.slice(0, 128),
          message: message.slice(0, 2_000),
          deliveries: counted ? deliveries : 1,
        }),
      ]);
    },
  );

  test.prop([fc.constantFrom('failed', 'suspended')])(
    'a result that is not completed and carries no error fails its hop as an InvalidResult',
    (outcome) => {
      const { tree, id } = started();
      const hop = outHop(tree.views.get(id)!);
      const d = tree.decide(id, { kind: 'result', result: envelope(hop, { outcome: outcome as 'failed' }) });
      const row = d.changes!.hops.find((h) => h.hop.id === hop.id)!;
      expect(row.hop.state).toBe('failed');
      expect(row.hop.error).toEqual({ type: 'InvalidResult', message: `a ${outcome} result without its fields` });
      expect(d.runEvents.filter((e) => e.type === 'HOP_FAILED')).toEqual([
        expect.objectContaining({ errorType: 'InvalidResult' }),
      ]);
    },
  );

  test.prop([
    fc.constantFrom('Routed', 'Ends', 'Surprise'),
    fc.option(fc.stringMatching(/^[0-9]{1,4}$/), { nil: undefined }),
  ])(
    'its dead letter is purged when the run routes the failure on purpose, and kept when the failure fails the item',
    (type, deadLetter) => {
      const { tree, id } = started();
      const hop = outHop(tree.views.get(id)!);
      const d = tree.decide(id, {
        kind: 'result',
        result: envelope(hop, {
          outcome: 'failed',
          error: { type, message: 'no' },
          deliveries: 1,
          ...(deadLetter === undefined ? {} : { deadLetter }),
        }),
      });
      const routed = type !== 'Surprise';
      expect(purges(d)).toEqual(deadLetter !== undefined && routed ? [{ role: 'w', id: deadLetter }] : []);
      if (type === 'Routed') expect(d.view!.item.stage).toBe('b');
      else expect(d.view!.item.state).toBe('failed');
    },
  );
});

describe('a result after the item ended', () => {
  test.prop([fc.constantFrom('completed', 'failed'), usageArb, fc.stringMatching(/^[0-9]{1,4}$/)])(
    'is late: its hop ends and its cost is written, the run is not told, and a failure purges its dead letter',
    (outcome, usage, deadLetter) => {
      const { tree, id } = started();
      const hop = outHop(tree.views.get(id)!);
      tree.decide(id, { kind: 'cancel', by: 'ops', reason: 'not needed' });
      tree.now += 5;
      const d = tree.decide(id, {
        kind: 'result',
        result: envelope(hop, {
          outcome: outcome as 'completed',
          usage,
          ...(outcome === 'failed' ? { error: { type: 'Routed', message: 'late' }, deliveries: 1, deadLetter } : {}),
        }),
      });
      expect(d.handling).toBe('late');
      expect(d.view!.item.state).toBe('canceled');
      const row = d.changes!.hops.find((h) => h.hop.id === hop.id)!;
      expect(row.hop.state).toBe(outcome);
      expect(row.hop.usage.inputTokens).toBe(usage.inputTokens);
      expect(auditOf(d, 'cost')).toHaveLength(1);
      expect(d.runEvents).toEqual([]);
      expect(d.events.filter((e) => e.kind === 'late-result')).toEqual([
        expect.objectContaining({ hop: hop.hop, stage: 'a', role: 'w' }),
      ]);
      expect(purges(d)).toEqual(outcome === 'failed' ? [{ role: 'w', id: deadLetter }] : []);
    },
  );
});

describe('a failure after the item failed', () => {
  test.prop([fc.stringMatching(/^[0-9]{1,4}$/), fc.constantFrom('Routed', 'Surprise')])(
    'is late and keeps its dead letter: nobody handled that failure',
    (deadLetter, type) => {
      const tree = new ChildTree();
      const id = 'item';
      tree.create(id, flow, { deadline: { at: tree.now + 100, ms: 100 } });
      const hop = outHop(tree.views.get(id)!);
      tree.now += 101;
      const timed = tree.decide(id, { kind: 'timer' });
      expect(timed.view!.item.state).toBe('failed');
      const d = tree.decide(id, {
        kind: 'result',
        result: envelope(hop, { outcome: 'failed', error: { type, message: 'late' }, deliveries: 1, deadLetter }),
      });
      expect(d.handling).toBe('late');
      expect(purges(d)).toEqual([]);
    },
  );
});

describe("a hop's time", () => {
  test.prop([
    fc.integer({ min: 0, max: 10_000 }),
    fc.option(fc.integer({ min: 0, max: 10_000 }), { nil: null }),
    fc.option(fc.integer({ min: 0, max: 20_000 }), { nil: undefined }),
  ])('ends when its result was published, never before it began running nor after now', (now, since, published) => {
    const { tree, id } = started();
    const hop = { ...outHop(tree.views.get(id)!), activeSince: since };
    const end = segmentEnd(hop, now, published);
    if (published === undefined || since === null) expect(end).toBe(now);
    else {
      expect(end).toBeLessThanOrEqual(now);
      if (since <= now) expect(end).toBeGreaterThanOrEqual(since);
      if (published >= since && published <= now) expect(end).toBe(published);
    }
  });

  test.prop([fc.integer({ min: 1, max: 500 }), fc.integer({ min: 1, max: 500 })])(
    'a result published before the Coordinator took it is charged up to its publishing only',
    (ran, waited) => {
      const { tree, id } = started();
      const hop = outHop(tree.views.get(id)!);
      const began = tree.now - 50;
      const publishedAt = began + ran;
      tree.now = publishedAt + waited;
      const d = tree.decide(id, {
        kind: 'result',
        result: envelope(hop, {
          outcome: 'completed',
          usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, model: 'm' },
        }),
        publishedAt,
      });
      const cost = auditOf(d, 'cost')[0]!;
      expect(dataOf(cost).elapsedMs).toBe(ran);
    },
  );
});

describe('a question and its answer', () => {
  /** The hop of stage `a` suspends to ask role x under `token`. */
  function asked(token: string) {
    const { tree, id } = started();
    const hop = outHop(tree.views.get(id)!);
    const ask = { role: 'x', continuationToken: token, message: { parts: [{ kind: 'text' as const, text: 'why?' }] } };
    const suspension = envelope(hop, { outcome: 'suspended', ask });
    const d = tree.decide(id, { kind: 'result', result: suspension });
    return { tree, id, hop, suspension, d };
  }

  function answerTo(query: HopRecord, hop: HopRecord, token: string): ResultEnvelope {
    const result = envelope(query, { outcome: 'completed', parts: [{ kind: 'text', text: 'because' }] });
    return {
      ...result,
      headers: { ...result.headers, askedBy: { role: 'w', continuationToken: token, taskId: hop.id, hop: hop.hop } },
    };
  }

  test.prop([fc.stringMatching(/^c[a-z0-9]{1,8}$/)])(
    'a suspension that asks puts its question out as a query of the asked role, once per continuation',
    (token) => {
      const { tree, id, hop, suspension, d } = asked(token);
      expect(d.handling).toBe('applied');
      const view = d.view!;
      expect(view.hops.get(hop.id)!.state).toBe('suspended');
      const query = outHop(view);
      expect(query).toMatchObject({ kind: 'query', role: 'x', continuation: token, askedBy: hop.id });
      // The answer resumes the hop: it is out again, and the same suspension delivered again changes nothing.
      const resumed = tree.decide(id, { kind: 'result', result: answerTo(query, hop, token) });
      expect(resumed.handling).toBe('applied');
      expect(resumed.view!.hops.get(hop.id)!.state).toBe('dispatched');
      const again = decide(resumed.view, { kind: 'result', result: suspension }, tree.env());
      expect(again.handling).toBe('duplicate');
      expect(again.changes).toBeNull();
    },
  );

  test.prop([fc.stringMatching(/^c[a-z0-9]{1,8}$/)])(
    "a result naming a query's task without saying whom it answers is unknown",
    (token) => {
      const { tree, hop, d } = asked(token);
      const query = outHop(d.view!);
      const answer = answerTo(query, hop, token);
      const { askedBy: _, ...headers } = answer.headers;
      const r = decide(d.view, { kind: 'result', result: { ...answer, headers } }, tree.env());
      expect(r.handling).toBe('unknown');
      expect(r.changes).toBeNull();
    },
  );

  test.prop([fc.stringMatching(/^c[a-z0-9]{1,8}$/), fc.stringMatching(/^k[a-z0-9]{1,8}$/)])(
    'an answer finds its query by continuation: under another token it is unknown, and a query answered takes no other',
    (token, other) => {
      const { tree, id, hop, d } = asked(token);
      const query = outHop(d.view!);
      const stray = decide(d.view, { kind: 'result', result: answerTo(query, hop, other) }, tree.env());
      expect(stray.handling).toBe('unknown');
      expect(stray.changes).toBeNull();
      const first = tree.decide(id, { kind: 'result', result: answerTo(query, hop, token) });
      expect(first.handling).toBe('applied');
      expect(first.view!.hops.get(query.id)!.state).toBe('completed');
      const second = decide(first.view, { kind: 'result', result: answerTo(query, hop, token) }, tree.env());
      expect(second.handling).toBe('duplicate');
      expect(second.changes).toBeNull();
    },
  );

  test.prop([fc.stringMatching(/^c[a-z0-9]{1,8}$/), fc.stringMatching(/^[0-9]{1,4}$/), fc.boolean()])(
    'a resumed hop whose checkpoint is gone starts over while the item runs (its dead letter purged), and is late once it ended',
    (token, deadLetter, cancelFirst) => {
      const { tree, id, hop, d } = asked(token);
      tree.decide(id, { kind: 'result', result: answerTo(outHop(d.view!), hop, token) });
      if (cancelFirst) tree.decide(id, { kind: 'cancel', by: null, reason: null });
      const lost = envelope(hop, {
        outcome: 'failed',
        error: { type: UNKNOWN_CONTINUATION, message: 'no checkpoint' },
        deliveries: 1,
        deadLetter,
      });
      const r = tree.decide(id, { kind: 'result', result: lost });
      expect(purges(r)).toEqual([{ role: 'w', id: deadLetter }]);
      if (cancelFirst) {
        expect(r.handling).toBe('late');
        expect(r.view!.hops.get(hop.id)!.state).toBe('failed');
        expect(r.changes!.outbox.filter((o) => o.kind === 'start')).toEqual([]);
      } else {
        expect(r.handling).toBe('applied');
        expect(r.changes!.created).toBe(false);
        expect(r.view!.hops.get(hop.id)!.state).toBe('dispatched');
        expect(r.view!.item.state).toBe('running');
        expect(r.changes!.outbox.filter((o) => o.kind === 'start')).toHaveLength(1);
        expect(auditOf(r, 'reconcile')).toHaveLength(1);
        expect(auditOf(r, 'failure')).toEqual([]);
      }
    },
  );
});
