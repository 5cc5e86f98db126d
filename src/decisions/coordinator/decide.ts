import { approval } from './approval.js';
import { cancel } from './cancel.js';
import { childSettled } from './child-settled.js';
import { create } from './create.js';
import { reconcile } from './reconcile.js';
import { result } from './result.js';
import { timer } from './timer.js';
import type { CoordinatorInput, Decision, DecisionEnv, ItemView } from './types.js';

/**
 * The Coordinator's decisions, as one pure function: `decide(state, input,
 * env)` takes a work item's state (its row, its hops, its run) and one input
 * (create, a hop result, an approval, a denial, a cancellation, a timer) and
 * returns the item's next state and the changes to make (rows, audit entries,
 * outbox publishes, events). It does no I/O: ids and the time come in `env`,
 * and the governance cascade is a value it is given (the checks it ran come
 * back in the decision). The run machine (`stepRun`) holds the workflow's
 * decisions; this code routes inputs to it, follows its directives and writes
 * down what happened. A store commits the changes; the Coordinator publishes
 * and answers only after that commit. Each kind of input has a module of its
 * own; a new kind is a new module and a case here.
 */

/**
 * Decides one input for one work item. `view` is the item's state
 * (`undefined` before it is created, or when a result names no item this
 * Coordinator knows). Pure: the same state, input and env give the same
 * decision.
 */
export function decide(view: ItemView | undefined, input: CoordinatorInput, env: DecisionEnv): Decision {
  switch (input.kind) {
    case 'create':
      return create(input, env);
    case 'result':
      return result(view, input.result, env, input.publishedAt);
    case 'timer':
      return timer(view, env);
    case 'reconcile':
      return reconcile(view, env, input.reason);
    case 'approve':
    case 'deny':
      return approval(view, input, env);
    case 'cancel':
      return cancel(view, input, env);
    case 'child':
      return childSettled(view, input, env);
  }
}
