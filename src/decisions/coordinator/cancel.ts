import type { WorkflowRunEvent } from '../../protocol/workflow.js';
import { drive } from './drive.js';
import type { CoordinatorInput, Decision, DecisionEnv, ItemView } from './types.js';
import { Work, liveWork, refusedEvent } from './work.js';

/** A cancel: the run ends `canceled` (refused once the item ended). */
export function cancel(
  view: ItemView | undefined,
  input: Extract<CoordinatorInput, { kind: 'cancel' }>,
  env: DecisionEnv,
): Decision {
  const work = liveWork(view, env);
  if (!(work instanceof Work)) return work;
  const event: WorkflowRunEvent = {
    type: 'CANCEL',
    ...(input.by === null ? {} : { by: input.by }),
    ...(input.reason === null ? {} : { reason: input.reason }),
  };
  if (!work.send(event)) return refusedEvent(view, work, event.type);
  drive(work);
  return work.finish('applied', false);
}
