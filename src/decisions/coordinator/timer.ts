import { timeoutMessage } from '../../machines/workflow-run-transitions.js';
import type { ResultEnvelope } from '../../protocol/work-envelope.js';
import type { WorkflowDefinition, WorkflowRunEvent } from '../../protocol/workflow.js';
import { accrue } from '../../workflow/cost-ledger.js';
import type { HopRecord } from '../../workflow/records.js';
import { drive } from './drive.js';
import { queryBody, startBody } from './hop-start.js';
import { resumingReply } from './resuming-reply.js';
import { recordAnswer, replyHeaders } from './suspension.js';
import type { Decision, DecisionEnv, ItemView } from './types.js';
import { costRow, noteOverrun } from './usage.js';
import { COORDINATOR_ACTOR, Work, json, unchanged } from './work.js';

/**
 * How long a hop (or a query) of `stage` may be out, in ms: the stage's own
 * `timeout`, else the deployment's default (`hopTimeoutMs`; absent or `0`:
 * none, and the hop is never timed out).
 */
export function hopTimeout(def: WorkflowDefinition, stage: string, hopTimeoutMs?: number): number | undefined {
  const own = def.stages[stage]?.timeout;
  if (own !== undefined) return own;
  return hopTimeoutMs !== undefined && hopTimeoutMs > 0 ? hopTimeoutMs : undefined;
}

/** Whether a hop out is past its next timeout at `now` (a timeout per re-publish: its `timeouts + 1`-th). */
function pastTimeout(hop: HopRecord, timeout: number | undefined, now: number): boolean {
  return timeout !== undefined && hop.activeSince !== null && now >= hop.activeSince + timeout * (hop.timeouts + 1);
}

/**
 * Whether `timer` at `now` has anything to decide for this item: it is past
 * its deadline, or a hop (or query) it has out is past its timeout. A cheap
 * look at the rows (no run is stepped), so that every tick may ask it of
 * every live item; `timer` decides on the items it picks.
 */
export function timerDue(view: ItemView, now: number, hopTimeoutMs?: number): boolean {
  // An ended item's view has no run.
  if (view.run === null) return false;
  const ctx = view.run.context;
  const deadline = ctx.deadline ?? null;
  if (deadline !== null && now >= deadline.at) return true;
  for (const hop of view.hops.values()) {
    if (hop.state !== 'dispatched') continue;
    if (pastTimeout(hop, hopTimeout(ctx.definition, hop.stage, hopTimeoutMs), now)) return true;
  }
  return false;
}

/**
 * Time passed. The run decides: a `TICK` at `now` fails an item past its
 * deadline (`DEADLINE_EXCEEDED`). A stage hop out longer than its stage's
 * `timeout`, or the deployment's default (`env.hopTimeoutMs`) when its
 * stage sets none (from when it became active: its dispatch, or its resume), is
 * told to the run (`HOP_TIMED_OUT`), once per timeout; while its retry
 * policy's `maximumAttempts` allows, the run has it re-published under the
 * same idempotency key (a lost message is found again; one still queued is a
 * duplicate the bus ignores); then it fails (`HopTimedOut`, exhausted) and
 * the run routes the failure. Each is audited (`timeout`).
 */
export function timer(view: ItemView | undefined, env: DecisionEnv): Decision {
  if (view === undefined || view.run === null) return unchanged(view, 'applied');
  const def = view.run.context.definition;
  const now = env.now;
  const work = new Work(view, env);
  if ((view.run.context.deadline ?? null) !== null) {
    work.send({ type: 'TICK', now });
    // A TICK moves a run only past its deadline, failing it DEADLINE_EXCEEDED.
    if (work.run!.value === 'failed') {
      const failure = work.ctx!.failure!;
      const deadline = view.run.context.deadline!;
      const ageMs = now - view.item.createdAt;
      work.audit.push({
        kind: 'timeout',
        itemId: work.item.id,
        hop: work.item.hop,
        actor: COORDINATOR_ACTOR,
        data: json({ what: 'deadline', deadlineMs: deadline.ms, ageMs }),
      });
      work.event('timed-out', work.item.hop, failure.reason);
      drive(work);
      return work.finish('applied', false);
    }
  }
  let changed = false;
  for (const hop of [...work.hops.values()]) {
    // A hop out (`pastTimeout` reads when it became active).
    if (hop.state !== 'dispatched') continue;
    if (hop.kind === 'query') {
      if (queryTimedOut(work, hop)) changed = true;
      continue;
    }
    const timeout = hopTimeout(def, hop.stage, env.hopTimeoutMs);
    if (timeout === undefined || !pastTimeout(hop, timeout, now)) continue;
    const timeouts = hop.timeouts + 1;
    // What the hop cost, should the run fail it.
    const accrual = accrue(hop, work.item, undefined, now);
    const before = work.run!.value;
    const event: WorkflowRunEvent = {
      type: 'HOP_TIMED_OUT',
      hop: hop.hop,
      attempt: hop.attempt,
      timeouts,
      timeoutMs: timeout,
      usage: accrual.added,
    };
    if (!work.send(event)) continue;
    changed = true;
    const base = { hopId: hop.id, stage: hop.stage, role: hop.role, timeoutMs: timeout, timeouts };
    if ((work.run!.context.republish ?? null) !== null) {
      // Re-published as it went out: its start (same key), or the reply that resumed it.
      const reply = resumingReply(work, hop);
      work.updateHop({ ...hop, timeouts });
      work.outbox.push(
        reply === undefined ? { kind: 'start', body: startBody(work, hop, 0) } : { kind: 'signal', body: reply.body },
      );
      work.audit.push({
        kind: 'timeout',
        itemId: work.item.id,
        hop: hop.hop,
        actor: COORDINATOR_ACTOR,
        data: json({ what: 'hop', ...base, action: 'republished', idempotencyKey: hop.idempotencyKey }),
      });
      work.event('timed-out', hop.hop, `out longer than ${timeout} ms: re-published (${timeouts})`, {
        stage: hop.stage,
        role: hop.role,
      });
      continue;
    }
    work.item = accrual.item;
    work.usage.push(accrual.row);
    const message = timeoutMessage(def, hop.stage, timeouts, 'hop', true, timeout);
    const error = { type: 'HopTimedOut', message };
    const failed: HopRecord = { ...accrual.hop, timeouts, state: 'failed', finishedAt: now, error };
    work.updateHop(failed);
    work.audit.push(
      {
        kind: 'timeout',
        itemId: work.item.id,
        hop: hop.hop,
        actor: COORDINATOR_ACTOR,
        data: json({ what: 'hop', ...base, action: 'failed' }),
      },
      costRow(failed, accrual.added, accrual.model),
    );
    work.event('hop-failed', hop.hop, `failed: HopTimedOut: ${message}`, { stage: hop.stage, role: hop.role });
    noteOverrun(work, before);
  }
  if (!changed) return unchanged(view, 'applied');
  drive(work);
  return work.finish('applied', false);
}

/**
 * A query out longer than the asking stage's `timeout` (or the deployment's
 * default when the stage sets none), told to the run
 * (`HOP_TIMED_OUT` with the query's continuation): while the asking stage's
 * retry policy's `maximumAttempts` allows (and its question was kept), the
 * run has it re-published under the same idempotency key; then it fails
 * (`HopTimedOut`) and the hop that asked resumes with that failure as its
 * answer. Audited (`timeout`, `what: "query"`). True when the run took it.
 */
function queryTimedOut(work: Work, query: HopRecord): boolean {
  const def = work.run!.context.definition;
  const now = work.env.now;
  const timeout = hopTimeout(def, query.stage, work.env.hopTimeoutMs);
  if (timeout === undefined || !pastTimeout(query, timeout, now)) return false;
  // A query is written with the hop that asked it and the continuation it answers.
  const asking = work.hops.get(query.askedBy!)!;
  const continuation = query.continuation!;
  const timeouts = query.timeouts + 1;
  const questionKept = query.question !== null;
  // What the query cost, should the run fail it (as an answer would accrue it).
  const added = accrue(query, work.item, undefined, now).added;
  const before = work.run!.value;
  const event: WorkflowRunEvent = {
    type: 'HOP_TIMED_OUT',
    hop: asking.hop,
    attempt: asking.attempt,
    timeouts,
    timeoutMs: timeout,
    continuation,
    ...(questionKept ? {} : { questionKept }),
    usage: added,
  };
  if (!work.send(event)) return false;
  const base = {
    hopId: query.id,
    askedBy: asking.id,
    stage: query.stage,
    role: query.role,
    timeoutMs: timeout,
    timeouts,
  };
  if ((work.run!.context.republish ?? null) !== null && query.question !== null) {
    work.updateHop({ ...query, timeouts });
    work.outbox.push({ kind: 'start', body: queryBody(work, query, asking, query.question) });
    work.audit.push({
      kind: 'timeout',
      itemId: work.item.id,
      hop: query.hop,
      actor: COORDINATOR_ACTOR,
      data: json({ what: 'query', ...base, action: 'republished', idempotencyKey: query.idempotencyKey }),
    });
    work.event(
      'timed-out',
      query.hop,
      `query to ${query.role} out longer than ${timeout} ms: re-published (${timeouts})`,
      {
        stage: query.stage,
        role: query.role,
      },
    );
    return true;
  }
  const message = timeoutMessage(def, query.stage, timeouts, 'query', questionKept, timeout);
  work.audit.push({
    kind: 'timeout',
    itemId: work.item.id,
    hop: query.hop,
    actor: COORDINATOR_ACTOR,
    data: json({ what: 'query', ...base, action: 'failed' }),
  });
  work.event('timed-out', query.hop, `query to ${query.role} failed: HopTimedOut: ${message}`, {
    stage: query.stage,
    role: query.role,
  });
  // The hop that asked resumes (the run took the timeout as its answer) with the failure, as with a query that failed.
  const failure: ResultEnvelope = {
    kind: 'result',
    headers: replyHeaders(work, asking, continuation, query.idempotencyKey),
    role: query.role,
    outcome: 'failed',
    parts: [],
    artifacts: [],
    error: { type: 'HopTimedOut', message },
  };
  recordAnswer(work, failure, { ...query, timeouts }, now);
  noteOverrun(work, before);
  return true;
}
