import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { approvalVerdict, cancelVerdict, retryVerdict } from '../../src/decisions/item-controls.js';
import type { ItemRecord } from '../../src/workflow/records.js';
import { itemRecord } from '../workflow/item-record.js';

/**
 * The rules of what an operator's command may do to a work item, each verdict
 * stated whole (its kind, its code and the message that says what to do):
 *
 * - any command on an item that is not there is refused `COORD_UNKNOWN_ITEM`;
 * - a cancel applies to an item that has not ended, and does nothing to one
 *   that ended;
 * - a retry applies to a failed top-level item only, from a stage its
 *   workflow has: a live item is told to cancel first, an item that ended
 *   otherwise to submit anew (`COORD_ITEM_FINAL`); a child is told to retry
 *   its parent, a stage its workflow lacks is named with the ones it has
 *   (`COORD_INVALID_ARGUMENT`);
 * - an approval does nothing to an item that ended, waits for an item not at
 *   its gate, and is refused to one not among the gate's approvers
 *   (`COORD_APPROVAL_REFUSED`).
 */

const STATES = ['pending', 'running', 'awaiting-approval', 'suspended', 'completed', 'failed', 'canceled'] as const;
const FINAL: readonly string[] = ['completed', 'failed', 'canceled'];
const NAMES = ['rm', 'eve', 'qa', 'ops'];
const STAGES = ['plan', 'code', 'test', 'ship'];

const approvalArb = fc.option(
  fc.record({
    stage: fc.constantFrom(...STAGES),
    hop: fc.integer({ min: 1, max: 9 }),
    source: fc.constantFrom('gate' as const, 'governance' as const),
    approvers: fc.option(fc.uniqueArray(fc.constantFrom(...NAMES), { minLength: 1, maxLength: 3 }), { nil: null }),
    reason: fc.constantFrom('r', 'a gate'),
  }),
  { nil: null },
);

const itemArb: fc.Arbitrary<ItemRecord> = fc
  .record({
    id: fc.constantFrom('i1', 'item-7'),
    state: fc.constantFrom(...STATES),
    version: fc.integer({ min: 1, max: 3 }),
    parent: fc.option(fc.constantFrom('p1', 'root'), { nil: undefined }),
    other: fc.option(fc.constantFrom('x', 7), { nil: undefined }),
    approval: approvalArb,
  })
  .map(({ id, state, version, parent, other, approval }) =>
    itemRecord({
      id,
      workflow: { id: 'wf', version },
      state,
      stage: 'code',
      hop: 2,
      input: [{ kind: 'text', text: 'x' }],
      attributes:
        parent === undefined && other === undefined
          ? null
          : {
              ...(parent === undefined ? {} : { 'switchboard.parent': parent }),
              ...(other === undefined ? {} : { team: other }),
            },
      approval,
      finishedAt: FINAL.includes(state) ? 3 : null,
    }),
  );

const unknown = (id: string) => ({
  kind: 'refuse',
  code: 'COORD_UNKNOWN_ITEM',
  message: `no work item ${id}: check the id with switchboard items list`,
});

describe('what an operator command may do to an item', () => {
  test.prop([fc.constantFrom('i1', 'gone'), fc.option(fc.constantFrom(...STAGES), { nil: undefined })])(
    'any command on an item that is not there: refused, the message says where to find ids',
    (id, from) => {
      expect(cancelVerdict(id, undefined)).toEqual(unknown(id));
      expect(retryVerdict(id, undefined, from, STAGES)).toEqual(unknown(id));
      expect(approvalVerdict(id, undefined, 'rm')).toEqual(unknown(id));
    },
  );

  test.prop([itemArb])('cancel: applies to an item that has not ended; to one that ended, nothing', (item) => {
    expect(cancelVerdict(item.id, item)).toEqual(
      item.finishedAt === null
        ? { kind: 'apply' }
        : { kind: 'nothing', message: `work item ${item.id} already ended ${item.state}: nothing to cancel` },
    );
  });

  test.prop([
    // A failed item half the time: the one a retry may apply to.
    fc
      .tuple(itemArb, fc.boolean())
      .map(([item, failed]) => (failed ? { ...item, state: 'failed' as const, finishedAt: 3 } : item)),
    fc.option(fc.constantFrom(...STAGES, 'deploy'), { nil: undefined }),
    fc.option(fc.subarray(STAGES, { minLength: 1 }), { nil: undefined }),
  ])(
    'retry: a failed top-level item, from a stage its workflow has; anything else says what to do',
    (item, from, stages) => {
      const verdict = retryVerdict(item.id, item, from, stages);
      const parent = item.attributes?.['switchboard.parent'];
      if (item.state !== 'failed') {
        expect(verdict).toEqual({
          kind: 'refuse',
          code: 'COORD_ITEM_FINAL',
          message:
            item.finishedAt === null
              ? `work item ${item.id} is ${item.state}, not failed: only a failed item is retried (cancel it first with switchboard items cancel ${item.id}, then submit again)`
              : `work item ${item.id} ended ${item.state}, not failed: only a failed item is retried (submit a new item instead)`,
        });
      } else if (parent !== undefined) {
        expect(verdict).toEqual({
          kind: 'refuse',
          code: 'COORD_INVALID_ARGUMENT',
          message: `work item ${item.id} is a child of ${parent}: retry the item it belongs to (switchboard items retry ${parent})`,
        });
      } else if (from !== undefined && stages !== undefined && !stages.includes(from)) {
        expect(verdict).toEqual({
          kind: 'refuse',
          code: 'COORD_INVALID_ARGUMENT',
          message: `workflow wf@${item.workflow.version} has no stage ${JSON.stringify(from)}: name one of ${stages.join(', ')}`,
        });
      } else expect(verdict).toEqual({ kind: 'apply' });
    },
  );

  test.prop([itemArb, fc.constantFrom(...NAMES)])(
    'approval: nothing once the item ended; wait until it is at its gate; refused to one not among its approvers',
    (item, approver) => {
      const verdict = approvalVerdict(item.id, item, approver);
      if (item.finishedAt !== null) {
        expect(verdict).toEqual({
          kind: 'nothing',
          message: `work item ${item.id} already ended ${item.state}: nothing to decide`,
        });
      } else if (item.state !== 'awaiting-approval' || item.approval === null) {
        expect(verdict).toEqual({
          kind: 'wait',
          message: `work item ${item.id} is ${item.state}, not awaiting approval`,
        });
      } else if (item.approval.approvers !== null && !item.approval.approvers.includes(approver)) {
        expect(verdict).toEqual({
          kind: 'refuse',
          code: 'COORD_APPROVAL_REFUSED',
          message: `${approver} is not an approver of work item ${item.id} at stage ${item.approval.stage}: its approvers are ${item.approval.approvers.join(', ')}`,
        });
      } else expect(verdict).toEqual({ kind: 'apply' });
    },
  );
});
