import { queryBody, startBody } from './hop-start.js';
import { resumingReply } from './resuming-reply.js';
import type { Decision, DecisionEnv, ItemView } from './types.js';
import { COORDINATOR_ACTOR, Work, json, unchanged } from './work.js';

/**
 * The bus lost its state (a Redis server restarted empty, a FLUSHALL): every
 * hop this item has out is published again under its own idempotency key,
 * as it went out: a stage hop's start (or, for a hop resumed by an answer,
 * the reply that resumed it: its question's answer, or its children's
 * outcomes), a query's question. A message the bus still
 * holds is a duplicate it ignores; a lost one is found again, and a worker
 * whose lease went with the bus meets the hop anew (its effects are keyed by
 * the hop). Nothing of the run changes; one `reconcile` audit entry names
 * what was published again. An item with nothing out is unchanged.
 */
export function reconcile(view: ItemView | undefined, env: DecisionEnv, reason: string): Decision {
  if (view === undefined || view.run === null || view.item.finishedAt !== null) return unchanged(view, 'applied');
  const work = new Work(view, env);
  const republished: { hopId: string; kind: string; role: string; idempotencyKey: string }[] = [];
  for (const hop of work.hops.values()) {
    if (hop.state !== 'dispatched') continue;
    if (hop.kind === 'query') {
      const asking = hop.askedBy === null ? undefined : work.hops.get(hop.askedBy);
      // A question not kept (asked before questions were recorded) cannot be asked again: its timeout fails it.
      if (asking === undefined || hop.question === null || hop.continuation === null) continue;
      work.outbox.push({ kind: 'start', body: queryBody(work, hop, asking, hop.question) });
    } else {
      const reply = resumingReply(work, hop);
      work.outbox.push(
        reply === undefined ? { kind: 'start', body: startBody(work, hop, 0) } : { kind: 'signal', body: reply.body },
      );
    }
    republished.push({ hopId: hop.id, kind: hop.kind, role: hop.role, idempotencyKey: hop.idempotencyKey });
  }
  if (republished.length === 0) return unchanged(view, 'applied');
  work.audit.push({
    kind: 'reconcile',
    itemId: work.item.id,
    hop: work.item.hop,
    actor: COORDINATOR_ACTOR,
    data: json({ reason, republished }),
  });
  return work.finish('applied', false);
}
