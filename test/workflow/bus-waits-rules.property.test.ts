import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { type BusMessageState, busWaitsOf } from '../../src/workflow/bus-waits.js';
import { type HopRecord, type ItemRecord, dispatchedHop } from '../../src/workflow/records.js';
import { itemRecord } from './item-record.js';

/**
 * The rules of what a work item waits for on the bus, over any item and any
 * rows of hops: only a running or suspended item that has not ended waits;
 * it waits on each hop and query that is out (`dispatched`), oldest first
 * (since its resume, else its dispatch), each with its age at the time read
 * (never below 0). With a lookup, a query's message and a stage hop's start
 * are looked up by role and key; a stage hop that was resumed (a query of it
 * exists, or, a first attempt, it became active after its dispatch) is
 * carried by its reply, which is not looked up. Without one, nothing is.
 */

const STATES = ['pending', 'running', 'awaiting-approval', 'suspended', 'completed', 'failed', 'canceled'] as const;
const LOOKED: readonly BusMessageState[] = ['queued', 'delayed', 'held', 'dead', 'missing'];

const hopArb = fc.record({
  kind: fc.constantFrom('stage' as const, 'stage' as const, 'query' as const),
  state: fc.constantFrom('dispatched' as const, 'dispatched' as const, 'completed' as const, 'suspended' as const),
  hop: fc.integer({ min: 1, max: 4 }),
  attempt: fc.integer({ min: 1, max: 3 }),
  dispatchedAt: fc.integer({ min: 1_000, max: 1_100 }),
  // Active at its dispatch itself as often as at any other time.
  active: fc.option(fc.oneof(fc.constant(0), fc.integer({ min: -20, max: 60 })), { nil: null }),
  askedBy: fc.option(fc.nat({ max: 5 }), { nil: null }),
  role: fc.constantFrom('architect', 'coding', 'qa'),
  timeouts: fc.nat({ max: 2 }),
});

const caseArb = fc.record({
  state: fc.constantFrom(...STATES),
  ended: fc.boolean(),
  hops: fc.array(hopArb, { maxLength: 6 }),
  now: fc.integer({ min: 900, max: 1_300 }),
  lookup: fc.boolean(),
});

function itemOf(state: ItemRecord['state'], ended: boolean): ItemRecord {
  return itemRecord({ state, finishedAt: ended ? 1_200 : null });
}

describe('what an item waits for on the bus', () => {
  test.prop([caseArb], { numRuns: 300 })(
    'each hop and query out of a live running or suspended item, oldest first, its message looked up unless a reply carries it',
    (c) => {
      const item = itemOf(c.state, c.ended);
      const hops: HopRecord[] = c.hops.map((h, i) => ({
        ...dispatchedHop({
          id: `h${i}`,
          itemId: 'item-1',
          seq: i + 1,
          hop: h.hop,
          attempt: h.attempt,
          kind: h.kind,
          stage: 'plan',
          role: h.role,
          idempotencyKey: `key-${i}`,
          continuation: h.kind === 'query' ? `cont-${i}` : null,
          askedBy: h.kind === 'query' && h.askedBy !== null ? `h${h.askedBy}` : null,
          dispatchedAt: h.dispatchedAt,
          activeSince: h.active === null ? null : h.dispatchedAt + h.active,
        }),
        state: h.state,
        timeouts: h.timeouts,
      }));
      const asked: { role: string; key: string }[] = [];
      // Each key looked up answers a state of its own, so a wait shows whose message it read.
      const answer = (key: string) => LOOKED[Number(key.slice(4)) % LOOKED.length]!;
      const lookup = c.lookup
        ? (m: { role: string; key: string }) => {
            asked.push(m);
            return answer(m.key);
          }
        : undefined;
      const waits = busWaitsOf(item, hops, c.now, lookup);
      if ((c.state !== 'running' && c.state !== 'suspended') || c.ended) {
        expect(waits).toEqual([]);
        expect(asked).toEqual([]);
        return;
      }
      const out = hops.filter((h) => h.state === 'dispatched');
      const since = (h: HopRecord) => h.activeSince ?? h.dispatchedAt;
      const resumed = (h: HopRecord) =>
        h.kind === 'stage' &&
        (hops.some((q) => q.askedBy === h.id) ||
          (h.attempt === 1 && h.activeSince !== null && h.activeSince > h.dispatchedAt));
      const expected = out
        .map((h) => ({
          itemId: 'item-1',
          workflow: 'flow',
          itemState: c.state,
          kind: h.kind,
          hop: h.hop,
          attempt: h.attempt,
          stage: 'plan',
          role: h.role,
          since: since(h),
          ageMs: Math.max(0, c.now - since(h)),
          timeouts: h.timeouts,
          bus: !c.lookup || resumed(h) ? null : answer(h.idempotencyKey),
        }))
        .sort((a, b) => a.since - b.since);
      expect(waits).toStrictEqual(expected);
      // What was looked up: each hop out not carried by a reply, by its role and key, in the rows' order.
      expect(asked).toEqual(
        c.lookup ? out.filter((h) => !resumed(h)).map((h) => ({ role: h.role, key: h.idempotencyKey })) : [],
      );
    },
  );
});
