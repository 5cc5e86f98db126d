import type { ItemRecord } from '../workflow/records.js';

/**
 * What an operator's command may do to a work item, decided from the item as
 * stored: cancel it, retry it, approve or deny it. Pure: the same item gives
 * the same answer. The CLI asks before it sends (so a command that cannot
 * apply says why and sends nothing), and the Coordinator asks again when the
 * message arrives (the item may have moved on meanwhile).
 *
 * - `apply`: do it.
 * - `nothing`: already done or moot (a cancel of an item that ended, a
 *   decision for an item already decided): the message is taken, nothing
 *   changes, and the command says so.
 * - `wait` (approvals only): the item is not at its gate yet; the decision
 *   is kept and tried again.
 * - `refuse`: the command cannot apply; `message` says what to do instead.
 */
export type ControlVerdict =
  | { kind: 'apply' }
  | { kind: 'nothing'; message: string }
  | { kind: 'wait'; message: string }
  | { kind: 'refuse'; code: ControlRefusalCode; message: string };

export type ControlRefusalCode =
  | 'COORD_UNKNOWN_ITEM'
  | 'COORD_ITEM_FINAL'
  | 'COORD_INVALID_ARGUMENT'
  | 'COORD_APPROVAL_REFUSED';

const PARENT = 'switchboard.parent';

function unknown(itemId: string): ControlVerdict {
  return {
    kind: 'refuse',
    code: 'COORD_UNKNOWN_ITEM',
    message: `no work item ${itemId}: check the id with switchboard items list`,
  };
}

/** A cancel: applies to an item that has not ended; one that ended is left as it is. */
export function cancelVerdict(itemId: string, item: ItemRecord | undefined): ControlVerdict {
  if (item === undefined) return unknown(itemId);
  if (item.finishedAt !== null) {
    return { kind: 'nothing', message: `work item ${itemId} already ended ${item.state}: nothing to cancel` };
  }
  return { kind: 'apply' };
}

/**
 * A retry: only of a failed top-level item (a child is run again by retrying
 * its root), from a stage its workflow has (`stages`: the stage names of the
 * item's workflow version, when known).
 */
export function retryVerdict(
  itemId: string,
  item: ItemRecord | undefined,
  from: string | undefined,
  stages: readonly string[] | undefined,
): ControlVerdict {
  if (item === undefined) return unknown(itemId);
  if (item.state !== 'failed') {
    return {
      kind: 'refuse',
      code: 'COORD_ITEM_FINAL',
      message:
        item.finishedAt === null
          ? `work item ${itemId} is ${item.state}, not failed: only a failed item is retried (cancel it first with switchboard items cancel ${itemId}, then submit again)`
          : `work item ${itemId} ended ${item.state}, not failed: only a failed item is retried (submit a new item instead)`,
    };
  }
  const parent = item.attributes?.[PARENT];
  if (typeof parent === 'string') {
    return {
      kind: 'refuse',
      code: 'COORD_INVALID_ARGUMENT',
      message: `work item ${itemId} is a child of ${parent}: retry the item it belongs to (switchboard items retry ${parent})`,
    };
  }
  if (from !== undefined && stages !== undefined && !stages.includes(from)) {
    return {
      kind: 'refuse',
      code: 'COORD_INVALID_ARGUMENT',
      message: `workflow ${item.workflow.id}@${item.workflow.version} has no stage ${JSON.stringify(from)}: name one of ${stages.join(', ')}`,
    };
  }
  return { kind: 'apply' };
}

/** An approval decision by `approver`: at the item's gate, by one of its approvers. */
export function approvalVerdict(itemId: string, item: ItemRecord | undefined, approver: string): ControlVerdict {
  if (item === undefined) return unknown(itemId);
  if (item.finishedAt !== null) {
    return { kind: 'nothing', message: `work item ${itemId} already ended ${item.state}: nothing to decide` };
  }
  if (item.state !== 'awaiting-approval' || item.approval === null) {
    return { kind: 'wait', message: `work item ${itemId} is ${item.state}, not awaiting approval` };
  }
  const approvers = item.approval.approvers;
  if (approvers !== null && !approvers.includes(approver)) {
    return {
      kind: 'refuse',
      code: 'COORD_APPROVAL_REFUSED',
      message: `${approver} is not an approver of work item ${itemId} at stage ${item.approval.stage}: its approvers are ${approvers.join(', ')}`,
    };
  }
  return { kind: 'apply' };
}
