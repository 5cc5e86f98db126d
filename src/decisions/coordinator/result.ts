import type { JsonValue } from '../../protocol/audit.js';
import type { ResultEnvelope } from '../../protocol/work-envelope.js';
import type { WorkflowRunEvent } from '../../protocol/workflow.js';
import { auditRoute } from './route-audit.js';
import { routeOf, routesFailure } from '../../machines/workflow-run-routing.js';
import { accrue } from '../../workflow/cost-ledger.js';
import type { HopRecord } from '../../workflow/records.js';
import { drive } from './drive.js';
import { restartLostCheckpoint } from './lost-checkpoint.js';
import { spawnsTaken, suspendForChildren } from './child-suspension.js';
import { INVALID_SUSPENSION, answer, askedRoleProblem, suspend } from './suspension.js';
import type { Decision, DecisionEnv, ItemView, PurgeDeadLetterBody } from './types.js';
import { costRow, late, sendUsage } from './usage.js';
import { Work, json, unchanged } from './work.js';

/**
 * A result is applied once, keyed by its hop (one row per hop attempt): only
 * a hop that is out (`dispatched`) takes a result, and a suspension only
 * once per continuation. A redelivered result finds its hop moved on and
 * changes nothing.
 */
export function result(
  view: ItemView | undefined,
  result: ResultEnvelope,
  env: DecisionEnv,
  publishedAt?: number,
): Decision {
  // A question to a role no run can wait on fails its hop, for good, instead of leaving it stood down.
  const unfit = result.outcome === 'suspended' && result.ask !== undefined ? askedRoleProblem(result.ask.role) : null;
  if (unfit === null) return applyResult(view, result, env, publishedAt);
  const { ask: _ask, ...rest } = result;
  const failed: ResultEnvelope = { ...rest, outcome: 'failed', error: { type: INVALID_SUSPENSION, message: unfit } };
  return applyResult(view, failed, env, publishedAt, 'non-retryable');
}

function applyResult(
  view: ItemView | undefined,
  result: ResultEnvelope,
  env: DecisionEnv,
  publishedAt: number | undefined,
  final?: 'non-retryable',
): Decision {
  if (view === undefined) return unchanged(view, 'unknown');
  const now = env.now;
  const askedBy = result.headers.askedBy;
  if (askedBy !== undefined) {
    const work = new Work(view, env);
    const query = work.hopByContinuation(askedBy.continuationToken);
    // A question is published only after its suspension commits, so an answer always finds its query.
    if (query === undefined || query.kind !== 'query') return unchanged(view, 'unknown');
    if (query.state !== 'dispatched') return unchanged(view, 'duplicate');
    return answer(work, result, query, now, segmentEnd(query, now, publishedAt));
  }
  const hop = view.hops.get(result.headers.taskId);
  if (hop === undefined || hop.kind !== 'stage' || hop.itemId !== result.headers.runId) {
    return unchanged(view, 'unknown');
  }
  if (hop.state !== 'dispatched') return unchanged(view, 'duplicate');
  const work = new Work(view, env);
  work.result = result;
  // A suspension is taken once per continuation: a question's is kept on its query, the spawns the hop took on
  // the children's reply that resumed it last.
  const token = result.ask?.continuationToken ?? result.spawn?.continuationToken;
  if (token !== undefined && (work.hopByContinuation(token) !== undefined || spawnsTaken(hop.reply).includes(token))) {
    return unchanged(view, 'duplicate');
  }
  // A failed hop's usage travels with its error (what it spent before failing).
  const usage = result.usage ?? result.error?.usage;
  const accrual = accrue(hop, work.item, usage, now, segmentEnd(hop, now, publishedAt));
  work.item = accrual.item;
  work.usage.push(accrual.row);
  let next: HopRecord = accrual.hop;
  const cost = costRow(next, accrual.added, accrual.model);
  const live = work.run !== null && work.item.finishedAt === null;

  if (result.outcome === 'suspended' && result.ask !== undefined) {
    return suspend(work, hop, result.ask, accrual, cost, live);
  }
  if (result.outcome === 'suspended' && result.spawn !== undefined) {
    return suspendForChildren(work, hop, result.spawn, accrual, cost, live);
  }
  if (live && restartLostCheckpoint(work, hop, result, accrual, cost)) {
    // The hop is out again: the dead letter its failure left is handled.
    purgeDeadLetter(work, result);
    return work.finish('applied', false);
  }
  if (result.outcome === 'completed') {
    next = { ...next, state: 'completed', finishedAt: now };
    work.updateHop(next);
    work.audit.push(
      {
        kind: 'result',
        itemId: work.item.id,
        hop: hop.hop,
        actor: hop.role,
        data: json({
          hopId: hop.id,
          outcome: 'completed',
          parts: result.parts.length,
          artifacts: result.artifacts.length,
        }),
      },
      cost,
    );
    work.event('hop-completed', hop.hop, 'completed', {
      stage: hop.stage,
      role: hop.role,
      usage: accrual.added,
      model: accrual.model,
    });
    if (!live) return late(work, hop);
    const data = result.parts.find((p) => p.kind === 'data');
    const output = data?.kind === 'data' ? (data.data as JsonValue) : undefined;
    const event: WorkflowRunEvent = {
      type: 'HOP_SUCCEEDED',
      hop: hop.hop,
      attempt: hop.attempt,
      usage: accrual.added,
      ...(output === undefined ? {} : { output }),
    };
    const routed = auditRoute(work, event);
    sendUsage(work, event);
    routed();
  } else {
    const error = result.error ?? { type: 'InvalidResult', message: `a ${result.outcome} result without its fields` };
    next = { ...next, state: 'failed', finishedAt: now, error };
    work.updateHop(next);
    work.audit.push(
      {
        kind: 'failure',
        itemId: work.item.id,
        hop: hop.hop,
        actor: hop.role,
        data: json({
          hopId: hop.id,
          errorType: error.type,
          message: error.message.slice(0, 500),
          // How many deliveries the hop took (not how often its result was delivered).
          deliveries: result.deliveries ?? 1,
        }),
      },
      cost,
    );
    work.event('hop-failed', hop.hop, `failed: ${error.type}: ${error.message.slice(0, 200)}`, {
      stage: hop.stage,
      role: hop.role,
      usage: accrual.added,
      model: accrual.model,
    });
    if (!live) {
      // A canceled item's hop failing needs nobody: its dead letter goes.
      if (work.item.state === 'canceled') purgeDeadLetter(work, result);
      return late(work, hop);
    }
    // The worker's bus already retried the hop: the run decides whether its retries were spent.
    const failed: WorkflowRunEvent = {
      type: 'HOP_FAILED',
      hop: hop.hop,
      attempt: hop.attempt,
      errorType: error.type.slice(0, 128),
      message: error.message.slice(0, 2000),
      deliveries: result.deliveries ?? 1,
      ...(final === undefined ? {} : { final }),
      usage: accrual.added,
    };
    const run = work.run;
    const route = run !== null && run.value === 'running' ? routeOf(run.context, failed) : null;
    sendUsage(work, failed);
    // A failure the workflow routes on purpose (a `next` rule, or the run's own retry) is handled, not dead.
    if (routesFailure(route)) purgeDeadLetter(work, result);
  }
  drive(work);
  return work.finish('applied', false);
}

/**
 * When a hop's running segment ended: when its result was put on the bus,
 * never before the segment began nor after now (clocks of two machines may
 * disagree); now when the bus did not say.
 */
export function segmentEnd(hop: HopRecord, now: number, publishedAt: number | undefined): number {
  if (publishedAt === undefined || hop.activeSince === null) return now;
  return Math.min(now, Math.max(hop.activeSince, publishedAt));
}

/** The dead letter a failure left (its result names it): purged after the commit (an outbox row). */
function purgeDeadLetter(work: Work, result: ResultEnvelope): void {
  if (result.deadLetter === undefined) return;
  const body: PurgeDeadLetterBody = { role: result.role, id: result.deadLetter };
  work.outbox.push({ kind: 'purge-dead-letter', body });
}
