import { type Actor, type InspectionEvent, type Observer, type Snapshot, assign, createActor, setup } from 'xstate';
import { WorkflowError } from '../protocol/workflow-error.js';
import { checkWorkflowDefinition, formatPath } from '../workflow/definition.js';
import type { ItemBudget } from '../workflow/records.js';
import {
  WORKFLOW_RUN_STATES,
  type WorkflowDefinition,
  type WorkflowRunEvent,
  WorkflowRunEventSchema,
  type WorkflowRunEventType,
  type WorkflowRunState,
} from '../protocol/workflow.js';
import {
  type LiveRunState,
  type RunCondition,
  type RunDeadline,
  type RunEffect,
  type RunRefusal,
  WORKFLOW_RUN_TRANSITIONS,
  type WorkflowRunContext,
  applyEffect,
  conditionHolds,
  initialRunContext,
  isFinalRunState,
  refusalReason,
} from './workflow-run-transitions.js';

/** Bumped whenever a persisted run snapshot would no longer restore. */
export const WORKFLOW_RUN_MACHINE_VERSION = 1;

export interface WorkflowRunInput {
  /** The work item (top-level task) the run belongs to. */
  runId: string;
  /** A definition checked by `parseWorkflowDefinition`. */
  definition: WorkflowDefinition;
  /** What the work item may spend (default: no bound). */
  budget?: ItemBudget | null;
  /** When the work item is past its deadline (default: none); see `runDeadline`. */
  deadline?: RunDeadline | null;
}

/**
 * What a refused event leaves in the context: the event's type (an event
 * without a string type, which only `stepRun` can be given, is named by
 * `String`), the state that refused it and why.
 */
function refusalOf(state: WorkflowRunState, context: WorkflowRunContext, event: unknown): RunRefusal {
  const type = (event as { type?: unknown } | null | undefined)?.type;
  return {
    event: typeof type === 'string' ? type : String(event),
    state,
    reason: refusalReason(state, context, event),
  };
}

type EventConfig = {
  guard?: { type: 'malformed' } | { type: 'holds'; params: { when: RunCondition } };
  target?: WorkflowRunState;
  actions: { type: 'apply'; params: { effect: RunEffect } } | { type: 'refuse'; params: { state: WorkflowRunState } };
};

function stateConfig(state: WorkflowRunState) {
  if (isFinalRunState(state)) return { type: 'final' as const };
  const refuse = { actions: { type: 'refuse' as const, params: { state } } };
  const on: Record<string, EventConfig[]> = {};
  const rows = WORKFLOW_RUN_TRANSITIONS.filter((t) => t.from === (state as LiveRunState));
  const events = [...new Set(rows.map((r) => r.event))] as WorkflowRunEventType[];
  for (const type of events) {
    on[type] = [
      { guard: { type: 'malformed' }, ...refuse },
      ...rows
        .filter((r) => r.event === type)
        .map((r) => ({
          guard: { type: 'holds' as const, params: { when: r.when } },
          target: r.to,
          actions: { type: 'apply' as const, params: { effect: r.effect } },
        })),
      refuse,
    ];
  }
  on['*'] = [refuse];
  return { on };
}

const states = Object.fromEntries(WORKFLOW_RUN_STATES.map((s) => [s, stateConfig(s)])) as Record<
  WorkflowRunState,
  ReturnType<typeof stateConfig>
>;

/**
 * The WorkflowRun of one work item. Pure: no clock, no I/O, no randomness.
 * Every move is a row of `WORKFLOW_RUN_TRANSITIONS`; which stage comes next
 * is decided by `routeOutcome` over the definition held in the context. What
 * the driver must do next (dispatch a hop, wait for an approval or a reply)
 * is `context.directive`. A refused event (wrong state, stale hop, unknown
 * approver, malformed) changes nothing but `context.refusal`.
 *
 * Persist with `actor.getPersistedSnapshot()` (plain JSON); restore with
 * `createActor(workflowRunMachine, { snapshot })`.
 */
export const workflowRunMachine = setup({
  types: {
    context: {} as WorkflowRunContext,
    events: {} as WorkflowRunEvent,
    input: {} as WorkflowRunInput,
  },
  guards: {
    // The protocol's schema is the one check of an event's shape.
    malformed: ({ event }) => !WorkflowRunEventSchema.safeParse(event).success,
    holds: ({ context, event }, params: { when: RunCondition }) => conditionHolds(context, event, params.when),
  },
  actions: {
    apply: assign(({ context, event }, params: { effect: RunEffect }) => applyEffect(context, event, params.effect)),
    refuse: assign(({ context, event }, params: { state: WorkflowRunState }) => ({
      refusal: refusalOf(params.state, context, event),
    })),
  },
}).createMachine({
  id: 'workflow-run',
  initial: 'pending',
  context: ({ input }) =>
    initialRunContext(input.runId, input.definition, input.budget ?? null, input.deadline ?? null),
  states,
});

export type WorkflowRunMachine = typeof workflowRunMachine;

/** A persisted run snapshot that cannot be restored: `WORKFLOW_RUN_SNAPSHOT_INVALID`. */
function badSnapshot(reason: string): WorkflowError {
  return new WorkflowError('WORKFLOW_RUN_SNAPSHOT_INVALID', `cannot restore a workflow run: ${reason}`, {
    details: { reason },
  });
}

/** A run as a value: the machine's state and context (what a persisted snapshot holds). */
export interface RunState {
  value: WorkflowRunState;
  context: WorkflowRunContext;
}

/** The run a new work item starts in (`pending`), as the machine's initial snapshot holds it. */
export function initialRun(input: WorkflowRunInput): RunState {
  return {
    value: 'pending',
    context: initialRunContext(input.runId, input.definition, input.budget ?? null, input.deadline ?? null),
  };
}

/**
 * The machine's transition as a pure function over a `RunState`: exactly the
 * moves of `workflowRunMachine` (built from the same rows, tried in the same
 * order, the same refusal), without an actor. A final run ignores events.
 */
export function stepRun(run: RunState, event: WorkflowRunEvent): RunState {
  const state = run.value;
  if (isFinalRunState(state)) return run;
  const refuse = (): RunState => ({
    value: state,
    context: { ...run.context, refusal: refusalOf(state, run.context, event) },
  });
  if (!WorkflowRunEventSchema.safeParse(event).success) return refuse();
  for (const row of WORKFLOW_RUN_TRANSITIONS) {
    if (row.from !== state || row.event !== event.type) continue;
    if (conditionHolds(run.context, event, row.when)) {
      return { value: row.to, context: applyEffect(run.context, event, row.effect) };
    }
  }
  return refuse();
}

/** A `RunState` as the actor's `getPersistedSnapshot()` writes it (plain JSON; `restoreWorkflowRun` reads it). */
export function persistRun(run: RunState): Record<string, unknown> {
  return {
    status: isFinalRunState(run.value) ? 'done' : 'active',
    value: run.value,
    historyValue: {},
    context: run.context,
    children: {},
  };
}

/** The `RunState` of a persisted run snapshot, checked as `restoreWorkflowRun` checks it. */
export function restoreRun(persisted: unknown): RunState {
  const snapshot = restoreWorkflowRun(persisted).getSnapshot();
  return { value: snapshot.value as WorkflowRunState, context: snapshot.context };
}

/**
 * An actor (not started) restored from `getPersistedSnapshot()` output (after
 * a JSON round trip, say from SQLite). The snapshot is checked first: its
 * state, and the definition it carries (which must still pass validation).
 * `options.inspect` (an inspector, `--inspect`) is given to the run's actor.
 */
export function restoreWorkflowRun(
  persisted: unknown,
  options: { inspect?: Observer<InspectionEvent> } = {},
): Actor<WorkflowRunMachine> {
  if (persisted === null || typeof persisted !== 'object') throw badSnapshot('not an object');
  const snap = persisted as { value?: unknown; status?: unknown; context?: Partial<WorkflowRunContext> };
  if (typeof snap.value !== 'string' || !(WORKFLOW_RUN_STATES as readonly string[]).includes(snap.value)) {
    throw badSnapshot(`unknown state ${JSON.stringify(snap.value)}`);
  }
  if (snap.status !== 'active' && snap.status !== 'done') {
    throw badSnapshot(`unexpected status ${JSON.stringify(snap.status)}`);
  }
  const context = snap.context;
  if (context === undefined || context === null || typeof context.runId !== 'string') {
    throw badSnapshot('no run id in the context');
  }
  const check = checkWorkflowDefinition(context.definition);
  if (!check.ok) {
    const first = check.problems[0]!;
    throw badSnapshot(`its definition is invalid: ${formatPath(first.path)}: ${first.message}`);
  }
  if (context.workflow?.id !== check.definition.id || context.workflow?.version !== check.definition.version) {
    throw badSnapshot('its workflow reference does not match its definition');
  }
  return createActor(workflowRunMachine, {
    snapshot: persisted as Snapshot<unknown>,
    // XState's types ask for the input; a restored actor starts from its snapshot and never reads it.
    input: { runId: context.runId, definition: check.definition },
    inspect: options.inspect,
  });
}

/** The state a persisted or live run snapshot is in. */
export function runStateOf(snapshot: Snapshot<unknown> & { value?: unknown }): WorkflowRunState {
  return snapshot.value as WorkflowRunState;
}
