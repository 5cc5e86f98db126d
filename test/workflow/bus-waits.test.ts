import { describe, expect, it } from 'vitest';
import { busWaitsOf } from '../../src/workflow/bus-waits.js';
import { type HopRecord, type ItemRecord, dispatchedHop } from '../../src/workflow/records.js';
import { itemRecord } from './item-record.js';

/**
 * `busWaitsOf`: what a running or suspended item waits for on the bus, from
 * its rows (pure): each hop or query out, oldest first, its age, and where
 * its message is when a lookup is given; a resumed hop's message (the
 * reply) is not looked up, and no idempotency key ever comes out.
 */
const item = (state: ItemRecord['state']): ItemRecord => itemRecord({ state });

const hop = (over: Partial<HopRecord> & Pick<HopRecord, 'id'>): HopRecord => ({
  ...dispatchedHop({
    id: over.id,
    itemId: 'item-1',
    seq: 1,
    hop: 1,
    attempt: 1,
    kind: 'stage',
    stage: 'plan',
    role: 'architect',
    idempotencyKey: `key-${over.id}`,
    continuation: null,
    askedBy: null,
    dispatchedAt: 1_000,
    activeSince: 1_000,
  }),
  ...over,
});

describe('busWaitsOf', () => {
  it('a running item waits on its hop out: role, since, age, and where its message is', () => {
    const looked: unknown[] = [];
    const waits = busWaitsOf(item('running'), [hop({ id: 'h1' })], 61_000, (m) => {
      looked.push(m);
      return 'held';
    });
    expect(waits).toEqual([
      {
        itemId: 'item-1',
        workflow: 'flow',
        itemState: 'running',
        kind: 'stage',
        hop: 1,
        attempt: 1,
        stage: 'plan',
        role: 'architect',
        since: 1_000,
        ageMs: 60_000,
        timeouts: 0,
        bus: 'held',
      },
    ]);
    expect(looked).toEqual([{ role: 'architect', key: 'key-h1' }]);
    expect(JSON.stringify(waits)).not.toContain('key-');
  });

  it('a suspended item waits on its query; a hop resumed after its answer is not looked up', () => {
    const asker = hop({ id: 'h1', state: 'suspended', activeSince: null });
    const query = hop({
      id: 'q1',
      seq: 2,
      kind: 'query',
      role: 'expert',
      askedBy: 'h1',
      continuation: 'secret-token',
      idempotencyKey: 'secret-token:ask',
      dispatchedAt: 5_000,
      activeSince: 5_000,
    });
    const waits = busWaitsOf(item('suspended'), [asker, query], 6_000, () => 'queued');
    expect(waits.map((w) => [w.kind, w.role, w.ageMs, w.bus])).toEqual([['query', 'expert', 1_000, 'queued']]);
    expect(JSON.stringify(waits)).not.toContain('secret-token');

    const resumed = { ...asker, state: 'dispatched' as const, activeSince: 7_000 };
    const answered = { ...query, state: 'completed' as const, finishedAt: 7_000 };
    const after = busWaitsOf(item('running'), [resumed, answered], 8_000, () => 'missing');
    expect(after.map((w) => [w.kind, w.since, w.ageMs, w.bus])).toEqual([['stage', 7_000, 1_000, null]]);
  });

  it('a retry waiting out its backoff has no age yet; items at a gate or ended wait on nothing', () => {
    const retry = hop({ id: 'h2', attempt: 2, dispatchedAt: 1_000, activeSince: 31_000 });
    expect(busWaitsOf(item('running'), [retry], 11_000, () => 'delayed')).toMatchObject([
      { attempt: 2, since: 31_000, ageMs: 0, bus: 'delayed' },
    ]);
    for (const state of ['awaiting-approval', 'completed', 'failed', 'canceled', 'pending'] as const) {
      expect(busWaitsOf(item(state), [hop({ id: 'h1' })], 2_000)).toEqual([]);
    }
    // Without a lookup nothing says where the message is.
    expect(busWaitsOf(item('running'), [hop({ id: 'h1' })], 2_000)[0]?.bus).toBeNull();
  });
});
