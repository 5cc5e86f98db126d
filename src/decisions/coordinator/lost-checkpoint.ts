import type { AuditEntryInput } from '../../protocol/audit.js';
import { type ResultEnvelope, UNKNOWN_CONTINUATION } from '../../protocol/work-envelope.js';
import type { Accrual } from '../../workflow/cost-ledger.js';
import type { HopRecord } from '../../workflow/records.js';
import { startBody } from './hop-start.js';
import { resumingReply } from './resuming-reply.js';
import { COORDINATOR_ACTOR, type Work, json } from './work.js';

/**
 * A hop resumed by its query's answer whose worker found no checkpoint to
 * resume from (`UnknownContinuation`): the Context Engine lost it (a Redis
 * restarted empty took the checkpoints with the bus's messages, or it was
 * pruned). The state the hop saved is gone, so it cannot resume; it starts
 * over instead, under its own idempotency key, as it first went out: its
 * effects, keyed by the hop, find their keys again, and it asks again what
 * it asked. The run does not change (the hop is out, as it was). Audited
 * `reconcile`, with the accrued cost. A hop resumed by its children is not
 * started over (it would start them again): it fails as before.
 *
 * Starting over under the same key relies on what a Redis restarted empty
 * does: the bus and the Context Engine lose the hop's keys with the
 * checkpoint (its start and its first result's key, its completion record).
 * Where only the checkpoint went, the bus takes the start, or its result, for
 * a duplicate: the hop stays out until its stage's timeout finds it.
 *
 * True when the result was that failure and the hop starts over.
 */
export function restartLostCheckpoint(
  work: Work,
  hop: HopRecord,
  result: ResultEnvelope,
  accrual: Accrual,
  cost: AuditEntryInput,
): boolean {
  if (result.outcome !== 'failed' || result.error?.type !== UNKNOWN_CONTINUATION) return false;
  const answered = resumingReply(work, hop)?.query ?? null;
  if (answered === null) return false;
  const restarted: HopRecord = { ...accrual.hop, state: 'dispatched', activeSince: work.env.now };
  work.updateHop(restarted);
  work.outbox.push({ kind: 'start', body: startBody(work, restarted, 0) });
  work.audit.push(
    {
      kind: 'reconcile',
      itemId: work.item.id,
      hop: hop.hop,
      actor: COORDINATOR_ACTOR,
      data: json({
        reason: `the checkpoint hop ${hop.hop} (${hop.role}) resumes from is gone: it starts over`,
        continuation: answered.continuation,
        republished: [{ hopId: hop.id, kind: hop.kind, role: hop.role, idempotencyKey: hop.idempotencyKey }],
      }),
    },
    cost,
  );
  work.event('dispatched', hop.hop, 'its checkpoint was lost: started over under its own key', {
    stage: hop.stage,
    role: hop.role,
    usage: accrual.added,
    model: accrual.model,
  });
  return true;
}
