import { describe, expect, it } from 'vitest';
import { approvalVerdict, cancelVerdict, retryVerdict } from '../../src/decisions/item-controls.js';
import type { ItemRecord } from '../../src/workflow/records.js';
import { itemRecord } from '../workflow/item-record.js';

function item(over: Partial<ItemRecord>): ItemRecord {
  return itemRecord({
    id: 'i1',
    workflow: { id: 'wf', version: 1 },
    stage: 'a',
    hops: 1,
    input: [{ kind: 'text', text: 'x' }],
    createdAt: 1,
    updatedAt: 1,
    ...over,
  });
}

describe('what an operator command may do to an item', () => {
  it('cancel: a live item; an ended one is left alone; an unknown one is refused', () => {
    expect(cancelVerdict('i1', item({}))).toEqual({ kind: 'apply' });
    expect(cancelVerdict('i1', item({ state: 'completed', finishedAt: 2 })).kind).toBe('nothing');
    expect(cancelVerdict('x', undefined)).toMatchObject({ kind: 'refuse', code: 'COORD_UNKNOWN_ITEM' });
  });

  it('retry: a failed top-level item, from a stage its workflow has', () => {
    const failed = item({ state: 'failed', finishedAt: 2 });
    expect(retryVerdict('i1', failed, undefined, ['a', 'b'])).toEqual({ kind: 'apply' });
    expect(retryVerdict('i1', failed, 'b', ['a', 'b'])).toEqual({ kind: 'apply' });
    expect(retryVerdict('i1', failed, 'z', ['a', 'b'])).toMatchObject({ kind: 'refuse', message: /name one of a, b/ });
    expect(retryVerdict('i1', item({}), undefined, undefined)).toMatchObject({
      kind: 'refuse',
      message: /cancel it first/,
    });
    expect(retryVerdict('i1', item({ state: 'canceled', finishedAt: 2 }), undefined, undefined).kind).toBe('refuse');
    expect(
      retryVerdict(
        'i1',
        item({ state: 'failed', finishedAt: 2, attributes: { 'switchboard.parent': 'p' } }),
        undefined,
        undefined,
      ),
    ).toMatchObject({ kind: 'refuse', message: /items retry p/ });
  });

  it('approval: at the gate, by one of its approvers', () => {
    const gated = item({
      state: 'awaiting-approval',
      approval: { stage: 'a', hop: 1, source: 'gate', approvers: ['rm'], reason: 'r' },
    });
    expect(approvalVerdict('i1', gated, 'rm')).toEqual({ kind: 'apply' });
    expect(approvalVerdict('i1', gated, 'eve')).toMatchObject({ kind: 'refuse', code: 'COORD_APPROVAL_REFUSED' });
    expect(approvalVerdict('i1', item({}), 'rm').kind).toBe('wait');
    expect(approvalVerdict('i1', item({ state: 'failed', finishedAt: 2 }), 'rm').kind).toBe('nothing');
  });
});
