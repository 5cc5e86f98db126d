import type { AuditEntryInput } from '../../protocol/audit.js';
import type { ResultEnvelope } from '../../protocol/work-envelope.js';
import { WorkflowRunEventSchema } from '../../protocol/workflow.js';
import type { z } from 'zod';
import { type Accrual, accrue } from '../../workflow/cost-ledger.js';
import { type HopRecord, dispatchedHop } from '../../workflow/records.js';
import { drive } from './drive.js';
import { deniedEvent, govern, queryBody } from './hop-start.js';
import type { Decision } from './types.js';
import { late, sendUsage, costRow } from './usage.js';
import { COORDINATOR_ACTOR, type Work, json } from './work.js';

/**
 * A stage hop that suspended to ask another role: its query hop, governed
 * like a hop and published from the outbox; the answer (or the query's
 * failure) that resumes it.
 */

/** The error type of a hop whose suspension no run can take (a question to a role no run can wait on). */
export const INVALID_SUSPENSION = 'InvalidSuspension';

/** The run's own check of the role a suspended hop asks (`HOP_SUSPENDED`'s `askedRole`). */
const ASKED_ROLE = (
  WorkflowRunEventSchema.options.find((o) => o.shape.type.value === 'HOP_SUSPENDED')!.shape as {
    askedRole: z.ZodOptional<z.ZodString>;
  }
).askedRole.unwrap();

/**
 * Why a question to `role` cannot stand a hop down (the run's event would
 * refuse it, leaving the hop waiting on nothing), or null when it can.
 */
export function askedRoleProblem(role: string): string | null {
  const checked = ASKED_ROLE.safeParse(role);
  if (checked.success) return null;
  return (
    `the question's role ${JSON.stringify(role.slice(0, 140))} is not a role a run can wait on ` +
    `(${checked.error.issues[0]?.message ?? 'refused'}): ask a role by the name its workers serve`
  );
}

/**
 * A stage hop's result that suspends it (`ask`): its row, its cost (`cost`,
 * the accrual of `result`), the query hop that carries the question, and the
 * run's suspension. `live`: whether the item was still running.
 */
export function suspend(
  work: Work,
  hop: HopRecord,
  ask: NonNullable<ResultEnvelope['ask']>,
  accrual: Accrual,
  cost: AuditEntryInput,
  live: boolean,
): Decision {
  const now = work.env.now;
  const env = work.env;
  const next: HopRecord = { ...accrual.hop, state: 'suspended' };
  work.updateHop(next);
  const query = dispatchedHop({
    id: env.nextId(),
    itemId: work.item.id,
    seq: work.item.hops + 1,
    hop: hop.hop,
    attempt: 1,
    kind: 'query',
    stage: hop.stage,
    role: ask.role,
    idempotencyKey: `${ask.continuationToken}:ask`,
    continuation: ask.continuationToken,
    askedBy: hop.id,
    question: ask.message,
    dispatchedAt: now,
    activeSince: now,
  });
  work.insertHop(query);
  work.item = { ...work.item, hops: work.item.hops + 1 };
  work.audit.push(
    {
      kind: 'suspend',
      itemId: work.item.id,
      hop: hop.hop,
      actor: hop.role,
      data: json({ hopId: hop.id, askedRole: ask.role, continuation: ask.continuationToken }),
    },
    cost,
  );
  work.event('suspended', hop.hop, `asked ${ask.role} and stood down`, {
    stage: hop.stage,
    role: hop.role,
    usage: accrual.added,
    model: accrual.model,
  });
  // A question the run does not wait for is never published: its query hop fails.
  const drop = (type: string, message: string) =>
    work.updateHop({ ...query, state: 'failed', activeSince: null, finishedAt: now, error: { type, message } });
  if (!live) {
    drop('ItemEnded', `the work item is ${work.item.state}`);
    return late(work, hop);
  }
  // The run takes the suspension (or ends on its usage: over budget); then the ask is governed like a hop.
  sendUsage(work, {
    type: 'HOP_SUSPENDED',
    hop: hop.hop,
    attempt: hop.attempt,
    continuation: ask.continuationToken,
    askedRole: ask.role,
    usage: accrual.added,
  });
  if (awaitsReply(work, ask.continuationToken)) {
    const decision = govern(work, {
      stage: hop.stage,
      role: ask.role,
      hop: hop.hop,
      attempt: hop.attempt,
      approvedBy: null,
      query: true,
    });
    if (decision.decision !== 'allow') {
      const reason =
        decision.decision === 'deny' ? decision.reason : `a query cannot wait for an approval (${decision.reason})`;
      work.send(deniedEvent(hop.hop, reason, decision.decision === 'deny' ? decision : {}));
      work.event('denied', hop.hop, `query to ${ask.role} denied: ${reason}`, { stage: hop.stage });
    }
  }
  if (!awaitsReply(work, ask.continuationToken)) {
    const failure = work.ctx?.failure ?? null;
    if (failure?.code === 'BUDGET_EXCEEDED') drop('BudgetExceeded', failure.reason);
    else if (failure?.code === 'GOVERNANCE_DENIED') drop('GovernanceDenied', failure.reason);
    else drop('RunRefused', `the run does not wait for this answer (it is ${work.run?.value ?? 'ended'})`);
  } else {
    // The question goes out from the outbox, in this transaction, like every other hop.
    work.outbox.push({ kind: 'start', body: queryBody(work, query, hop, ask.message) });
    work.audit.push({
      kind: 'dispatch',
      itemId: work.item.id,
      hop: hop.hop,
      actor: COORDINATOR_ACTOR,
      data: json({
        hopId: query.id,
        kind: 'query',
        role: ask.role,
        idempotencyKey: query.idempotencyKey,
        via: 'coordinator',
      }),
    });
  }
  drive(work);
  return work.finish('applied', false);
}

export function answer(
  work: Work,
  result: ResultEnvelope,
  query: HopRecord,
  now: number,
  segmentEnd: number = now,
): Decision {
  if (!takeAnswer(work, result, query, now, segmentEnd)) return late(work, query);
  drive(work);
  return work.finish('applied', false);
}

/** Records a query's answer (or failure) and resumes the hop that asked: false when nothing waits for it. */
export function takeAnswer(
  work: Work,
  result: ResultEnvelope,
  query: HopRecord,
  now: number,
  segmentEnd: number = now,
): boolean {
  const added = recordAnswer(work, result, query, now, segmentEnd);
  const ctx = work.ctx;
  if (
    work.item.finishedAt !== null ||
    ctx === undefined ||
    ctx.directive.kind !== 'await-reply' ||
    ctx.directive.continuation !== query.continuation
  ) {
    return false;
  }
  sendUsage(work, { type: 'HOP_RESUMED', hop: query.hop, continuation: query.continuation!, usage: added });
  return true;
}

/** Writes down a query's answer (or failure): its hop row, its cost, its audit rows and event. Returns its usage. */
export function recordAnswer(
  work: Work,
  result: ResultEnvelope,
  query: HopRecord,
  now: number,
  segmentEnd: number = now,
): HopRecord['usage'] {
  const accrual = accrue(query, work.item, result.usage ?? result.error?.usage, now, segmentEnd);
  work.item = accrual.item;
  work.usage.push(accrual.row);
  const failed = result.outcome === 'failed';
  const next: HopRecord = {
    ...accrual.hop,
    state: failed ? 'failed' : 'completed',
    finishedAt: now,
    error: failed ? (result.error ?? { type: 'Error', message: 'the query failed' }) : null,
    reply: result,
  };
  work.updateHop(next);
  work.audit.push(
    {
      kind: 'result',
      itemId: work.item.id,
      hop: query.hop,
      actor: query.role,
      data: json({ hopId: query.id, kind: 'query', outcome: result.outcome, parts: result.parts.length }),
    },
    costRow(next, accrual.added, accrual.model),
  );
  work.event('answered', query.hop, failed ? `the query failed: ${next.error?.type}` : 'answered the query', {
    stage: query.stage,
    role: query.role,
    usage: accrual.added,
    model: accrual.model,
  });
  return accrual.added;
}

/** Whether the run waits for the answer to the question asked under `continuation`. */
export function awaitsReply(work: Work, continuation: string): boolean {
  const run = work.run;
  if (run === null || run.value !== 'suspended') return false;
  const d = run.context.directive;
  return d.kind === 'await-reply' && d.continuation === continuation;
}

/**
 * The headers of a reply to a suspended hop (`asking`): its task, hop and
 * worker's continuation, under `idempotencyKey`, as a query's answer or a
 * child's outcomes reach it.
 */
export function replyHeaders(
  work: Work,
  asking: HopRecord,
  continuation: string,
  idempotencyKey: string,
): ResultEnvelope['headers'] {
  return {
    taskId: asking.id,
    runId: work.item.id,
    hop: asking.hop,
    attempt: 1,
    idempotencyKey,
    askedBy: { role: asking.role, continuationToken: continuation, taskId: asking.id, hop: asking.hop },
  };
}
