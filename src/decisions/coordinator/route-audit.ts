import { routeOf } from '../../machines/workflow-run-routing.js';
import type { WorkflowRunEvent } from '../../protocol/workflow.js';
import { COORDINATOR_ACTOR, type Work, json } from './work.js';

/**
 * The audit of a route a `next` rule's condition decided: the rule's
 * pointer, the value it read, and where it led. The route is computed from
 * the context before the run takes the event (the run's own routing); call
 * what this returns after the run took it: it writes the row only if the run
 * went that way (a refused event, or a budget overrun, writes nothing).
 */
export function auditRoute(work: Work, event: WorkflowRunEvent): () => void {
  const run = work.run;
  if (run === null || run.value !== 'running') return () => {};
  const ctx = run.context;
  const route = routeOf(ctx, event);
  if (route === null || (route.kind !== 'enter' && route.kind !== 'complete') || route.condition === undefined) {
    return () => {};
  }
  const condition = route.condition;
  return () => {
    const after = work.run;
    const taken =
      after !== null &&
      (route.kind === 'complete'
        ? after.value === 'completed'
        : after.context.hop === ctx.hop + 1 && after.context.stage === route.stage);
    if (!taken) return;
    work.audit.push({
      kind: 'route',
      itemId: work.item.id,
      hop: ctx.hop,
      actor: COORDINATOR_ACTOR,
      data: json({
        stage: ctx.stage,
        pointer: condition.pointer,
        read: condition.read,
        to: route.kind === 'enter' ? route.stage : 'completed',
      }),
    });
  };
}
