import type { FinalRunState } from '../../machines/workflow-run-transitions.js';
import { itemOutput } from '../../workflow/item-output.js';
import type { ItemEventKind } from '../../workflow/records.js';
import { dataPart, settleParent } from './child-spawn.js';
import { COORDINATOR_ACTOR, type Work, json } from './work.js';

/** The item ends: the one place an item's end is written (its row, its audit entry, its event). */
export function end(work: Work, state: FinalRunState): void {
  if (work.item.finishedAt !== null) return;
  const ctx = work.run!.context;
  // A run completed by a join (no hop result ends it, and the run is at the join's stage) keeps the
  // joined output as its data part.
  const output = ctx.output ?? null;
  const last =
    work.result === undefined && state === 'completed' && output !== null
      ? { role: ctx.stage!, outcome: 'completed' as const, parts: [dataPart(output)], artifacts: [] }
      : work.result;
  work.item = { ...work.item, finishedAt: work.env.now, approval: null, output: itemOutput(state, ctx, last) };
  // A run fails with its failure and is canceled with its cancellation: the effect that ends it sets them.
  const failure = ctx.failure;
  const kind = state === 'completed' ? 'item-completed' : state === 'failed' ? 'item-failed' : 'item-canceled';
  work.audit.push({
    kind,
    itemId: work.item.id,
    hop: ctx.hop,
    actor: COORDINATOR_ACTOR,
    data: json({ state, failure, cancellation: ctx.cancellation, usage: work.item.usage, hops: work.item.hops }),
  });
  const detail =
    state === 'completed'
      ? 'work item completed'
      : state === 'failed'
        ? `work item failed: ${failure!.code}: ${failure!.reason}`
        : `work item canceled${ctx.cancellation!.by ? ` by ${ctx.cancellation!.by}` : ''}`;
  work.event(state as ItemEventKind, ctx.hop, detail);
  settleParent(work, state);
}
