import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { firstSpawnIndex } from '../../src/decisions/coordinator/child-suspension.js';
import { continuationOf, resumingReply } from '../../src/decisions/coordinator/resuming-reply.js';
import { Work } from '../../src/decisions/coordinator/work.js';
import type { Decision, ItemView, SettleBody, SpawnBody } from '../../src/decisions/coordinator-decisions.js';
import { type ResultEnvelope, UNKNOWN_CONTINUATION } from '../../src/protocol/work-envelope.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import type { HopRecord } from '../../src/workflow/records.js';
import { ChildTree, answerHeaders, completedSettle, hopHeaders } from './child-tree.js';

/**
 * A stage hop that stands down more than once (it asks a question, or starts
 * children, and is resumed, again and again) is re-published with the reply
 * that resumed it last, its children's outcomes as well as an answer: never
 * with its start, which its worker would answer by replaying its first
 * suspension. Each of its spawns makes new children, and the suspension it
 * was resumed from, delivered again, changes nothing.
 */

const TIMEOUT = 5_000;
const flow = parseWorkflowDefinition({
  id: 'lead-flow',
  version: 1,
  start: 'lead',
  stages: {
    lead: { role: 'lead', timeout: TIMEOUT, next: [{ on: 'succeeded', goto: 'after' }] },
    after: { role: 'w' },
  },
});

type Stand = { kind: 'spawn'; children: number } | { kind: 'ask' };
const standArb: fc.Arbitrary<Stand> = fc.oneof(
  fc.integer({ min: 1, max: 4 }).map((children) => ({ kind: 'spawn' as const, children })),
  fc.constant({ kind: 'ask' as const }),
);

interface Run {
  t: ChildTree;
  hop: HopRecord;
  /** Each stand-down's suspension result, in order. */
  suspensions: ResultEnvelope[];
  /** The reply the last resume published. */
  last: unknown;
  lastKind: Stand['kind'];
}

function suspension(hop: HopRecord, token: string, stand: Stand): ResultEnvelope {
  return {
    kind: 'result',
    headers: hopHeaders(hop),
    role: 'lead',
    outcome: 'suspended',
    parts: [],
    artifacts: [],
    ...(stand.kind === 'ask'
      ? {
          ask: { role: 'w', continuationToken: token, message: { role: 'user', parts: [{ kind: 'text', text: '?' }] } },
        }
      : {
          spawn: {
            continuationToken: token,
            children: Array.from({ length: stand.children }, (_, i) => ({
              workflow: 'sub@1',
              input: [{ kind: 'text' as const, text: `${token}/${i}` }],
            })),
          },
        }),
  };
}

function settle(row: SpawnBody): SettleBody {
  return completedSettle(row, { from: row.branch }, 1);
}

function signalOf(d: Decision): unknown {
  const signals = d.changes?.outbox.filter((o) => o.kind === 'signal') ?? [];
  expect(signals).toHaveLength(1);
  return signals[0]!.body;
}

/** The parent's `lead` hop standing down and resumed once per stand, in order. */
function standDown(stands: readonly Stand[]): Run {
  const t = new ChildTree();
  t.create('p', flow);
  const hop = t.views.get('p')!.hops.get(t.out('p')!.taskId)!;
  const suspensions: ResultEnvelope[] = [];
  let last: unknown = null;
  for (const [i, stand] of stands.entries()) {
    const token = `tok-${i}`;
    const s = suspension(hop, token, stand);
    suspensions.push(s);
    const spawnsBefore = t.spawns('p').length;
    expect(t.decide('p', { kind: 'result', result: s }).handling).toBe('applied');
    t.now += 10;
    if (stand.kind === 'ask') {
      const answer: ResultEnvelope = {
        kind: 'result',
        headers: answerHeaders(t.views.get('p')!, token),
        role: 'w',
        outcome: 'completed',
        parts: [{ kind: 'text', text: `answer ${i}` }],
        artifacts: [],
      };
      last = signalOf(t.decide('p', { kind: 'result', result: answer }));
    } else {
      let d: Decision | undefined;
      for (const row of t.spawns('p').slice(spawnsBefore)) d = t.decide('p', { kind: 'child', settle: settle(row) });
      last = signalOf(d!);
    }
    t.now += 10;
  }
  return { t, hop, suspensions, last, lastKind: stands.at(-1)!.kind };
}

const standsArb = fc.array(standArb, { minLength: 1, maxLength: 5 });

describe('a hop that stood down and was resumed', () => {
  test.prop([standsArb])('is published again by a reconcile with the reply that resumed it last', (stands) => {
    const { t, hop, last } = standDown(stands);
    const d = t.decide('p', { kind: 'reconcile', reason: 'the bus lost its messages' });
    expect(d.changes!.outbox).toEqual([{ kind: 'signal', body: last }]);
    expect(d.view!.hops.get(hop.id)!.state).toBe('dispatched');
  });

  test.prop([standsArb])('is published again past its timeout with the reply that resumed it last', (stands) => {
    const { t, last } = standDown(stands);
    t.now += TIMEOUT + 1;
    const d = t.decide('p', { kind: 'timer' });
    expect(d.changes!.outbox).toEqual([{ kind: 'signal', body: last }]);
  });

  test.prop([standsArb])(
    'makes new children at each spawn: keys numbered on across the hop, ids all distinct',
    (stands) => {
      const { t } = standDown(stands);
      const rows = t.spawns('p');
      const total = stands.reduce((n, s) => n + (s.kind === 'spawn' ? s.children : 0), 0);
      expect(rows.map((r) => r.branch)).toEqual(Array.from({ length: total }, (_, i) => `s${i}`));
      expect(new Set(rows.map((r) => r.childId)).size).toBe(total);
    },
  );

  test.prop([standsArb])(
    'takes the suspension it was resumed from, delivered again, as a duplicate that changes nothing',
    (stands) => {
      const { t, suspensions } = standDown(stands);
      const before = t.views.get('p')!;
      const d = t.decide('p', { kind: 'result', result: suspensions.at(-1)! });
      expect(d.handling).toBe('duplicate');
      expect(d.changes).toBeNull();
      expect(t.views.get('p')).toBe(before);
    },
  );

  test.prop([standsArb])('takes any question it asked, delivered again, as a duplicate', (stands) => {
    const { t, suspensions } = standDown(stands);
    for (const s of suspensions.filter((r) => r.ask !== undefined)) {
      expect(t.decide('p', { kind: 'result', result: s }).handling).toBe('duplicate');
    }
  });

  test.prop([standsArb])(
    'whose checkpoint is lost starts over only when an answer resumed it last (children would be started again)',
    (stands) => {
      const { t, hop, lastKind } = standDown(stands);
      const lost: ResultEnvelope = {
        kind: 'result',
        headers: hopHeaders(hop),
        role: 'lead',
        outcome: 'failed',
        parts: [],
        artifacts: [],
        error: { type: UNKNOWN_CONTINUATION, message: 'no checkpoint' },
        deliveries: 1,
      };
      const d = t.decide('p', { kind: 'result', result: lost });
      const restarted = d.changes!.outbox.filter(
        (o) => o.kind === 'start' && (o.body as { taskId: string }).taskId === hop.id,
      );
      expect(restarted).toHaveLength(lastKind === 'ask' ? 1 : 0);
      expect(d.changes!.audit.some((e) => e.kind === 'reconcile')).toBe(lastKind === 'ask');
    },
  );
});

/** The hop's replies as recorded: its answered queries' (in order) and its own (its children's). */
function recorded(view: ItemView, hop: HopRecord) {
  const answered = [...view.hops.values()].filter(
    (q) => q.kind === 'query' && q.askedBy === hop.id && q.reply !== null,
  );
  return { answered, own: view.hops.get(hop.id)!.reply ?? null };
}

describe('the reply a hop is out on, read from its records', () => {
  const directiveArb = fc.constantFrom('none', 'other-hop', 'other-attempt', 'no-run');

  test.prop([standsArb, directiveArb])(
    "without a directive naming the hop, is the last recorded: its last answered query's, else its children's",
    (stands, which) => {
      const { t, hop } = standDown(stands);
      const view = t.views.get('p')!;
      const run = view.run!;
      const directive = run.context.directive;
      const moved =
        which === 'no-run'
          ? null
          : {
              ...run,
              context: {
                ...run.context,
                directive:
                  which === 'none'
                    ? ({ kind: 'none' } as const)
                    : directive.kind === 'dispatch'
                      ? {
                          ...directive,
                          ...(which === 'other-hop' ? { hop: directive.hop + 1 } : { attempt: directive.attempt + 1 }),
                        }
                      : directive,
              },
            };
      const work = new Work({ ...view, run: moved }, t.env());
      const current = work.hops.get(hop.id)!;
      const { answered, own } = recorded(view, hop);
      const last = answered.at(-1);
      const expected =
        last !== undefined ? { body: last.reply, query: last } : own === null ? undefined : { body: own, query: null };
      expect(resumingReply(work, current)).toEqual(expected);
    },
  );

  test.prop([standsArb])(
    'for a hop out on its start (the directive resumes nothing) is none, whatever it recorded',
    (stands) => {
      const { t, hop } = standDown(stands);
      const view = t.views.get('p')!;
      const run = view.run!;
      const directive = run.context.directive;
      if (directive.kind !== 'dispatch') throw new Error('the hop is out: its directive dispatches it');
      const fresh = { ...run, context: { ...run.context, directive: { ...directive, resume: null } } };
      const work = new Work({ ...view, run: fresh }, t.env());
      expect(resumingReply(work, work.hops.get(hop.id)!)).toBeUndefined();
    },
  );

  test.prop([fc.string({ minLength: 1, maxLength: 8 })])(
    'names the continuation a reply resumes only when it is text',
    (token) => {
      expect(continuationOf({ headers: { askedBy: { continuationToken: token } } })).toBe(token);
      for (const reply of [null, undefined, {}, { headers: {} }, { headers: { askedBy: {} } }, 7]) {
        expect(continuationOf(reply)).toBeUndefined();
      }
      expect(continuationOf({ headers: { askedBy: { continuationToken: token.length } } })).toBeUndefined();
    },
  );
});

/**
 * The view with records that are not this hop's replies, last in its map (so
 * that a rule reading every record, in order, would meet them last): an
 * answered query another hop asked, and a question of this hop still
 * unanswered.
 */
function withOthers(view: ItemView, hop: HopRecord): ItemView {
  const hops = new Map(view.hops);
  const query = (id: string, askedBy: string, continuation: string, reply: unknown): HopRecord => ({
    ...hop,
    id,
    kind: 'query',
    role: 'w',
    askedBy,
    continuation,
    state: reply === null ? 'dispatched' : 'completed',
    reply,
  });
  hops.set('other-query', query('other-query', 'another-hop', 'other-c', { from: 'another hop' }));
  hops.set('open-query', query('open-query', hop.id, 'open-c', null));
  return { ...view, hops };
}

describe('the reply a hop is out on, when the directive names the hop', () => {
  /** The work with the run's directive resuming `resume` on the hop (its other fields as the run left them). */
  function resumingOn(stands: readonly Stand[], resume: (recorded: string[]) => string) {
    const { t, hop } = standDown(stands);
    const view = withOthers(t.views.get('p')!, hop);
    const run = view.run!;
    const directive = run.context.directive;
    if (directive.kind !== 'dispatch') throw new Error('the hop is out: its directive dispatches it');
    const { answered, own } = recorded(view, hop);
    const tokens = [...answered.map((q) => q.continuation!), ...(own === null ? [] : [continuationOf(own)!])];
    const named = resume(tokens);
    const moved = { ...run, context: { ...run.context, directive: { ...directive, resume: named } } };
    const work = new Work({ ...view, run: moved }, t.env());
    return { work, hop: work.hops.get(hop.id)!, answered, own, named };
  }

  test.prop([standsArb, fc.nat()])(
    "is the reply of the continuation it names, whichever was recorded: an answer, or the children's",
    (stands, pick) => {
      const { work, hop, answered, own, named } = resumingOn(stands, (tokens) => tokens[pick % tokens.length]!);
      const query = answered.find((q) => q.continuation === named);
      const expected = query !== undefined ? { body: query.reply, query } : { body: own, query: null };
      expect(continuationOf(expected.body)).toBe(named);
      expect(resumingReply(work, hop)).toEqual(expected);
    },
  );

  test.prop([standsArb])(
    "naming a continuation nothing recorded, is the last recorded: its last answered query's, else its children's",
    (stands) => {
      const { work, hop, answered, own } = resumingOn(stands, () => 'never-recorded');
      const last = answered.at(-1);
      const expected = last !== undefined ? { body: last.reply, query: last } : { body: own, query: null };
      expect(resumingReply(work, hop)).toEqual(expected);
    },
  );

  test.prop([fc.constantFrom(null, undefined), fc.constantFrom('none', 'names-it', 'unknown')])(
    'is none for a hop that recorded no reply, its reply null or missing alike',
    (reply, which) => {
      const t = new ChildTree();
      t.create('p', flow);
      const view = t.views.get('p')!;
      const start = view.hops.get(t.out('p')!.taskId)!;
      const hop = { ...start, reply };
      const run = view.run!;
      const directive = run.context.directive;
      if (directive.kind !== 'dispatch') throw new Error('the hop is out: its directive dispatches it');
      const next =
        which === 'none'
          ? ({ kind: 'none' } as const)
          : { ...directive, resume: which === 'names-it' ? 'tok-0' : 'never-recorded' };
      const { hops } = withOthers({ ...view, hops: new Map(view.hops).set(hop.id, hop) }, hop);
      const work = new Work({ ...view, hops, run: { ...run, context: { ...run.context, directive: next } } }, t.env());
      expect(resumingReply(work, work.hops.get(hop.id)!)).toBeUndefined();
    },
  );
});

describe("a hop's next spawn", () => {
  const hopWith = (reply: unknown): HopRecord => ({ ...standDown([{ kind: 'ask' }]).hop, reply });
  const replyOf = (children: unknown): unknown => ({ parts: [{ kind: 'data', data: { children } }] });

  test.prop([fc.array(fc.integer({ min: 0, max: 999_999 }), { minLength: 1, maxLength: 6 })])(
    'starts after the largest key of the children that resumed it last, in whatever order they are',
    (indexes) => {
      const hop = hopWith(replyOf(indexes.map((i) => ({ key: `s${i}` }))));
      expect(firstSpawnIndex(hop)).toBe(Math.max(...indexes) + 1);
    },
  );

  test.prop([fc.constantFrom('xs5', 's5x', 's', 's1234567', 'S5', 5, null, undefined)])(
    'counts no key that is not s<index>, and no child without one',
    (key) => {
      expect(firstSpawnIndex(hopWith(replyOf([{ key }])))).toBe(0);
      expect(firstSpawnIndex(hopWith(replyOf([{ key }, { key: 's2' }])))).toBe(3);
      expect(firstSpawnIndex(hopWith(replyOf([null, { key: 's12' }])))).toBe(13);
    },
  );

  test.prop([
    fc.constantFrom(null, undefined, {}, { parts: [] }, { parts: [{}] }, { parts: [{ data: {} }] }, replyOf('s1')),
  ])('starts at s0 for a hop no children resumed', (reply) => {
    expect(firstSpawnIndex(hopWith(reply))).toBe(0);
  });
});
