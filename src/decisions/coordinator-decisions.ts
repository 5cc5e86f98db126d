import {
  type RunState,
  WORKFLOW_RUN_MACHINE_VERSION,
  initialRun,
  persistRun,
  stepRun,
} from '../machines/workflow-run-machine.js';
import {
  type FinalRunState,
  isFinalRunState,
  runDeadline,
  timeoutMessage,
} from '../machines/workflow-run-transitions.js';
import type { AuditEntryInput, JsonObject } from '../protocol/audit.js';
import type { Part } from '../protocol/parts.js';
import type { AskedBy, ResultEnvelope, RetryPolicy, WorkMessage } from '../protocol/work-envelope.js';
import type { WorkflowDefinition, WorkflowRunEvent } from '../protocol/workflow.js';
import { accrue } from '../workflow/cost-ledger.js';
import { itemOutput } from '../workflow/item-output.js';
import { stageRetryPolicy } from '../workflow/definition.js';
import type { GovernanceDecision, HopContext } from '../workflow/governance.js';
import {
  type HopRecord,
  type ItemBudget,
  type ItemChanges,
  type ItemEvent,
  type ItemEventKind,
  type ItemRecord,
  type ItemState,
  dispatchedHop,
} from '../workflow/records.js';

/**
 * The Coordinator's decisions, as one pure function: `decide(state, input,
 * env)` takes a work item's state (its row, its hops, its run) and one input
 * (create, a hop result, an approval, a denial, a cancellation, a timer) and
 * returns the item's next state and the changes to make (rows, audit entries,
 * outbox publishes, events). It does no I/O: ids and the time come in `env`,
 * and the governance cascade is a function it is given. The run machine
 * (`stepRun`) holds the workflow's decisions; this code routes inputs to it,
 * follows its directives and writes down what happened. A store commits the
 * changes; the Coordinator publishes and answers only after that commit.
 */

/** The metadata key under which switchboard links tasks to work items and hops. */
export const SWITCHBOARD_METADATA_KEY = 'switchboard';

/** The bus idempotency key of a stage hop attempt: `<item>/<hop>/<attempt>`. */
export function hopKey(itemId: string, hop: number, attempt: number): string {
  return `${itemId}/${hop}/${attempt}`;
}

/** A work item as the decisions see it: its row, its hops (by id, in order) and its run (none once ended). */
export interface ItemView {
  item: ItemRecord;
  hops: ReadonlyMap<string, HopRecord>;
  run: RunState | null;
}

/** A hop as the dispatcher starts it (the outbox body of a `start`). */
export interface StartBody {
  role: string;
  taskId: string;
  runId: string;
  hop: number;
  attempt: number;
  message: WorkMessage;
  idempotencyKey: string;
  taskKey?: string;
  retryPolicy?: Partial<RetryPolicy>;
  delayMs?: number;
  askedBy?: AskedBy;
}

/** One input to the Coordinator's decisions. */
export type CoordinatorInput =
  | {
      kind: 'create';
      itemId: string;
      taskId: string | null;
      definition: WorkflowDefinition;
      /** Whether the definition is not kept yet (its first item keeps it). */
      keepDefinition: boolean;
      input: Part[];
      budget: ItemBudget | null;
      attributes: Record<string, string | number | boolean> | null;
    }
  | { kind: 'result'; result: ResultEnvelope }
  | { kind: 'approve'; approver: string }
  | { kind: 'deny'; approver: string; reason?: string }
  | { kind: 'cancel'; by: string | null; reason: string | null }
  /** Time passed (`env.now`): hops past their stage's timeout, an item past its deadline. */
  | { kind: 'timer' };

/** What the decisions are given besides the state and the input: the time, ids, governance, definitions. */
export interface DecisionEnv {
  now: number;
  nextId(): string;
  governance: { decide(budget: ItemBudget | null, ctx: HopContext): GovernanceDecision };
}

/** How a result was handled. */
export type ResultHandling = 'applied' | 'duplicate' | 'late' | 'unknown';

/** A refused input: nothing changes (the Coordinator raises it as its error). */
export interface DecisionRefusal {
  code: 'COORD_UNKNOWN_ITEM' | 'COORD_ITEM_FINAL' | 'COORD_APPROVAL_REFUSED' | 'COORD_UNKNOWN_WORKFLOW';
  message: string;
}

/** What `decide` returns: the item's next state, the changes and events, or a refusal (nothing changes). */
export interface Decision {
  handling: ResultHandling;
  /** The item's state after the decision (the input state when nothing changed). */
  view: ItemView | undefined;
  /** What to commit (`null` when nothing changes). */
  changes: ItemChanges | null;
  events: ItemEvent[];
  /** The events the run took, in order (for an inspector's live actor). */
  runEvents: WorkflowRunEvent[];
  refusal?: DecisionRefusal;
  /** Events the run refused (logged by the caller). */
  refused: { event: string; state: string; reason: unknown }[];
}

const COORDINATOR_ACTOR = 'coordinator';

/** Audit kinds that end a work item. */
const ITEM_END_KINDS: ReadonlySet<string> = new Set(['item-completed', 'item-failed', 'item-canceled']);

/** Drops `undefined` fields (audit rows are plain JSON); nested values are built without them. */
function json(value: object): JsonObject {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(value)) {
    const v = (value as Record<string, unknown>)[k];
    if (v !== undefined) out[k] = v;
  }
  return out as JsonObject;
}

/** Resolved retry policies per definition object and stage (resolving parses): a cache of a pure function. */
const retryPolicies = new WeakMap<WorkflowDefinition, Map<string, RetryPolicy>>();

export function retryPolicyOf(def: WorkflowDefinition, stage: string): RetryPolicy {
  let byStage = retryPolicies.get(def);
  if (byStage === undefined) {
    byStage = new Map();
    retryPolicies.set(def, byStage);
  }
  let policy = byStage.get(stage);
  if (policy === undefined) {
    policy = stageRetryPolicy(def, stage);
    byStage.set(stage, policy);
  }
  return policy;
}

/** The working copy of one decision: the item's next state and what it writes, built up as it goes. */
class Work {
  item: ItemRecord;
  run: RunState | null;
  readonly hops: Map<string, HopRecord>;
  readonly #written = new Map<string, { hop: HopRecord; created: boolean }>();
  readonly usage: ItemChanges['usage'] = [];
  readonly outbox: ItemChanges['outbox'] = [];
  readonly audit: AuditEntryInput[] = [];
  readonly events: ItemEvent[] = [];
  readonly runEvents: WorkflowRunEvent[] = [];
  readonly refused: Decision['refused'] = [];
  readonly env: DecisionEnv;
  /** The stage hop result being applied: what the item's output keeps if it ends the run. */
  result: ResultEnvelope | undefined;

  constructor(view: ItemView, env: DecisionEnv) {
    this.item = view.item;
    this.run = view.run;
    this.hops = new Map(view.hops);
    this.env = env;
  }

  get ctx() {
    return this.run?.context;
  }

  hopByKey(key: string): HopRecord | undefined {
    for (const hop of this.hops.values()) if (hop.idempotencyKey === key) return hop;
    return undefined;
  }

  hopByContinuation(token: string): HopRecord | undefined {
    for (const hop of this.hops.values()) if (hop.continuation === token) return hop;
    return undefined;
  }

  insertHop(hop: HopRecord): void {
    this.hops.set(hop.id, hop);
    this.#written.set(hop.id, { hop, created: true });
  }

  updateHop(hop: HopRecord): void {
    this.hops.set(hop.id, hop);
    const before = this.#written.get(hop.id);
    this.#written.set(hop.id, { hop, created: before?.created ?? false });
  }

  /** Sends an event to the run; false when the run refused it. */
  send(event: WorkflowRunEvent): boolean {
    if (this.run === null) return false;
    this.runEvents.push(event);
    this.run = stepRun(this.run, event);
    const refusal = this.run.context.refusal;
    if (refusal === null) return true;
    this.refused.push({ event: event.type, state: refusal.state, reason: refusal.reason });
    return false;
  }

  event(
    kind: ItemEventKind,
    hop: number | null,
    detail: string,
    extra: { stage?: string | null; role?: string | null; usage?: ItemEvent['usage']; model?: string } = {},
  ): void {
    this.events.push({
      kind,
      itemId: this.item.id,
      hop,
      stage: extra.stage ?? this.ctx?.stage ?? this.item.stage,
      role: extra.role ?? null,
      detail,
      ...(extra.usage === undefined ? {} : { usage: extra.usage }),
      ...(extra.model === undefined ? {} : { model: extra.model }),
      at: this.env.now,
    });
  }

  /** The item's row from its run, and the decision's changes; a final run is dropped from the state. */
  finish(handling: ResultHandling, created: boolean, extra: Partial<ItemChanges> = {}): Decision {
    const now = this.env.now;
    let runRecord: ItemChanges['run'];
    if (this.run !== null) {
      const ctx = this.run.context;
      this.item = {
        ...this.item,
        state: this.run.value as ItemState,
        stage: ctx.stage,
        hop: ctx.hop,
        failure: ctx.failure,
        updatedAt: now,
      };
      const persisted = persistRun(this.run);
      // The definition is kept once per version (coord_definitions), not in every snapshot.
      runRecord = {
        machineVersion: WORKFLOW_RUN_MACHINE_VERSION,
        snapshot: { ...persisted, context: { ...this.run.context, definition: null } },
      };
    }
    const ended = this.audit.some((e) => ITEM_END_KINDS.has(e.kind));
    const changes: ItemChanges = {
      itemId: this.item.id,
      item: this.item,
      created,
      ...(runRecord === undefined ? {} : { run: runRecord }),
      hops: [...this.#written.values()],
      usage: this.usage,
      outbox: this.outbox,
      audit: this.audit,
      ended,
      ...extra,
    };
    const final = this.run !== null && isFinalRunState(this.run.value);
    return {
      handling,
      view: { item: this.item, hops: this.hops, run: final ? null : this.run },
      changes,
      events: this.events,
      runEvents: this.runEvents,
      refused: this.refused,
    };
  }
}

function unchanged(view: ItemView | undefined, handling: ResultHandling): Decision {
  return { handling, view, changes: null, events: [], runEvents: [], refused: [] };
}

function refused(view: ItemView | undefined, refusal: DecisionRefusal): Decision {
  return { ...unchanged(view, 'applied'), refusal };
}

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
      return result(view, input.result, env);
    case 'timer':
      return timer(view, env);
    case 'approve':
    case 'deny':
    case 'cancel': {
      if (view === undefined) return refused(view, { code: 'COORD_UNKNOWN_ITEM', message: 'no such work item' });
      if (view.item.finishedAt !== null || view.run === null) {
        return refused(view, {
          code: 'COORD_ITEM_FINAL',
          message: `work item ${view.item.id} is ${view.item.state}`,
        });
      }
      const work = new Work(view, env);
      const itemId = view.item.id;
      if (input.kind === 'cancel') {
        const event: WorkflowRunEvent = {
          type: 'CANCEL',
          ...(input.by === null ? {} : { by: input.by }),
          ...(input.reason === null ? {} : { reason: input.reason }),
        };
        if (!work.send(event)) return refusedEvent(view, work, event.type);
      } else if (input.kind === 'approve') {
        if (!work.send({ type: 'APPROVED', by: input.approver })) return refusedEvent(view, work, 'APPROVED');
        work.audit.push({
          kind: 'approval',
          itemId,
          hop: work.item.approval?.hop ?? work.item.hop,
          actor: input.approver,
          data: json({ decision: 'approved', by: input.approver, stage: work.item.approval?.stage }),
        });
        work.event('approved', work.item.hop, `approved by ${input.approver}`);
        work.item = { ...work.item, approval: null };
      } else {
        const reason = input.reason;
        const event: WorkflowRunEvent = {
          type: 'DENIED',
          by: input.approver,
          ...(reason === undefined || reason === '' ? {} : { reason }),
        };
        if (!work.send(event)) return refusedEvent(view, work, 'DENIED');
        work.audit.push({
          kind: 'approval',
          itemId,
          hop: work.item.approval?.hop ?? work.item.hop,
          actor: input.approver,
          data: json({ decision: 'denied', by: input.approver, reason, stage: work.item.approval?.stage }),
        });
        work.event('approval-denied', work.item.hop, `denied by ${input.approver}${reason ? `: ${reason}` : ''}`);
        work.item = { ...work.item, approval: null };
      }
      drive(work);
      return work.finish('applied', false);
    }
  }
}

function refusedEvent(view: ItemView, work: Work, type: string): Decision {
  const r = work.run!.context.refusal!;
  return refused(view, {
    code: 'COORD_APPROVAL_REFUSED',
    message: `${type} refused in state ${r.state}: ${r.reason}`,
  });
}

function create(input: Extract<CoordinatorInput, { kind: 'create' }>, env: DecisionEnv): Decision {
  const { itemId, definition } = input;
  const now = env.now;
  const workflow = { id: definition.id, version: definition.version };
  const item: ItemRecord = {
    id: itemId,
    taskId: input.taskId,
    workflow,
    state: 'pending',
    stage: null,
    hop: 0,
    hops: 0,
    input: input.input,
    budget: input.budget,
    attributes: input.attributes,
    usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, elapsedMs: 0 },
    failure: null,
    approval: null,
    createdAt: now,
    updatedAt: now,
    finishedAt: null,
    output: null,
    mirrored: false,
  };
  const work = new Work(
    {
      item,
      hops: new Map(),
      run: initialRun({ runId: itemId, definition, budget: input.budget, deadline: runDeadline(definition, now) }),
    },
    env,
  );
  work.audit.push({
    kind: 'item-created',
    itemId,
    actor: 'edge',
    // The item's broker task is made after this commit: its id is the item row's, not the audit's.
    data: json({ workflow, budget: input.budget, inputParts: input.input.length }),
  });
  work.event('created', null, `work item created on ${definition.id}@${definition.version}`);
  work.send({ type: 'START' });
  drive(work);
  return work.finish('applied', true, input.keepDefinition ? { definition: { ref: workflow, body: definition } } : {});
}

// ------------------------------------------------------------------ results

/**
 * A result is applied once, keyed by its hop (one row per hop attempt): only
 * a hop that is out (`dispatched`) takes a result, and a suspension only
 * once per continuation. A redelivered result finds its hop moved on and
 * changes nothing.
 */
function result(view: ItemView | undefined, result: ResultEnvelope, env: DecisionEnv): Decision {
  if (view === undefined) return unchanged(view, 'unknown');
  const now = env.now;
  const askedBy = result.headers.askedBy;
  if (askedBy !== undefined) {
    const work = new Work(view, env);
    const query = work.hopByContinuation(askedBy.continuationToken);
    // A question is published only after its suspension commits, so an answer always finds its query.
    if (query === undefined || query.kind !== 'query') return unchanged(view, 'unknown');
    if (query.state !== 'dispatched') return unchanged(view, 'duplicate');
    return answer(work, result, query, now);
  }
  const hop = view.hops.get(result.headers.taskId);
  if (hop === undefined || hop.kind !== 'stage' || hop.itemId !== result.headers.runId) {
    return unchanged(view, 'unknown');
  }
  if (hop.state !== 'dispatched') return unchanged(view, 'duplicate');
  const work = new Work(view, env);
  work.result = result;
  if (result.ask !== undefined && work.hopByContinuation(result.ask.continuationToken) !== undefined) {
    return unchanged(view, 'duplicate');
  }
  const accrual = accrue(hop, work.item, result.usage, now);
  work.item = accrual.item;
  work.usage.push(accrual.row);
  let next: HopRecord = accrual.hop;
  const cost = costRow(next, accrual.added, accrual.model);
  const live = work.run !== null && work.item.finishedAt === null;

  if (result.outcome === 'suspended' && result.ask !== undefined) {
    const ask = result.ask;
    next = { ...next, state: 'suspended' };
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
        work.send({
          type: 'GOVERNANCE_DENIED',
          hop: hop.hop,
          reason,
          ...(decision.decision === 'deny' ? { policy: decision.policy } : {}),
        });
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
  } else if (result.outcome === 'completed') {
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
    sendUsage(work, { type: 'HOP_SUCCEEDED', hop: hop.hop, attempt: hop.attempt, usage: accrual.added });
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
    if (!live) return late(work, hop);
    // The worker's bus already retried the hop: the run decides whether its retries were spent.
    sendUsage(work, {
      type: 'HOP_FAILED',
      hop: hop.hop,
      attempt: hop.attempt,
      errorType: error.type.slice(0, 128),
      message: error.message.slice(0, 2000),
      deliveries: result.deliveries ?? 1,
      usage: accrual.added,
    });
  }
  drive(work);
  return work.finish('applied', false);
}

/** The publish of a query: the same body (and idempotency key) each time it is published. */
function queryBody(work: Work, query: HopRecord, asking: HopRecord, question: WorkMessage): StartBody {
  const continuationToken = query.continuation!;
  return {
    role: query.role,
    taskId: asking.id,
    runId: work.item.id,
    hop: asking.hop,
    attempt: 1,
    idempotencyKey: query.idempotencyKey,
    askedBy: { role: asking.role, continuationToken, taskId: asking.id, hop: asking.hop },
    message: question,
  };
}

function answer(work: Work, result: ResultEnvelope, query: HopRecord, now: number): Decision {
  if (!takeAnswer(work, result, query, now)) return late(work, query);
  drive(work);
  return work.finish('applied', false);
}

/** Records a query's answer (or failure) and resumes the hop that asked: false when nothing waits for it. */
function takeAnswer(work: Work, result: ResultEnvelope, query: HopRecord, now: number): boolean {
  const added = recordAnswer(work, result, query, now);
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
function recordAnswer(work: Work, result: ResultEnvelope, query: HopRecord, now: number): HopRecord['usage'] {
  const accrual = accrue(query, work.item, result.usage, now);
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

function late(work: Work, hop: HopRecord): Decision {
  work.event('late-result', hop.hop, `a result after the item ended (${work.item.state}): cost accrued`, {
    stage: hop.stage,
    role: hop.role,
  });
  return work.finish('late', false);
}

function costRow(hop: HopRecord, added: HopRecord['usage'], model: string): AuditEntryInput {
  return {
    kind: 'cost',
    itemId: hop.itemId,
    hop: hop.hop,
    actor: COORDINATOR_ACTOR,
    data: json({
      hopId: hop.id,
      agent: hop.role,
      model,
      inputTokens: added.inputTokens,
      outputTokens: added.outputTokens,
      costUsd: added.costUsd,
      elapsedMs: added.elapsedMs,
    }),
  };
}

/**
 * Sends the run an event that carries a hop's usage. The run decides
 * whether that usage takes the item over its budget (and then fails it,
 * `BUDGET_EXCEEDED`); this writes down that it did.
 */
function sendUsage(work: Work, event: WorkflowRunEvent): void {
  const before = work.run?.value;
  work.send(event);
  noteOverrun(work, before);
}

/** Writes down that the last event the run took (from state `before`) failed it over its budget. */
function noteOverrun(work: Work, before: string | undefined): void {
  const run = work.run;
  if (run === null || before === run.value || run.context.failure?.code !== 'BUDGET_EXCEEDED') return;
  work.event('budget-exceeded', work.item.hop, run.context.failure.reason);
}

/** Whether the run waits for the answer to the question asked under `continuation`. */
function awaitsReply(work: Work, continuation: string): boolean {
  const run = work.run;
  if (run === null || run.value !== 'suspended') return false;
  const d = run.context.directive;
  return d.kind === 'await-reply' && d.continuation === continuation;
}

// --------------------------------------------------------------- directives

function govern(
  work: Work,
  hop: { stage: string; role: string; hop: number; attempt: number; approvedBy: string | null; query: boolean },
): GovernanceDecision {
  const ctx: HopContext = {
    itemId: work.item.id,
    workflow: work.item.workflow,
    stage: hop.stage,
    role: hop.role,
    hop: hop.hop,
    attempt: hop.attempt,
    usage: work.item.usage,
    approvedBy: hop.approvedBy,
    ...(work.item.attributes === null ? {} : { attributes: work.item.attributes }),
  };
  const decision = work.env.governance.decide(work.item.budget, ctx);
  work.audit.push({
    kind: 'governance',
    itemId: work.item.id,
    hop: hop.hop,
    actor: COORDINATOR_ACTOR,
    data: json({
      stage: hop.stage,
      role: hop.role,
      attempt: hop.attempt,
      query: hop.query,
      decision: decision.decision,
      reason: decision.decision === 'allow' ? undefined : decision.reason,
      approvedBy: hop.approvedBy,
      verdicts: decision.verdicts,
    }),
  });
  return decision;
}

/** Follows the run's directive until it waits (a hop out, an approval, a reply) or ends. */
function drive(work: Work): void {
  for (let guard = 0; guard < 32; guard++) {
    const run = work.run;
    if (run === null) return;
    const ctx = run.context;
    const state = run.value as ItemState;
    const d = ctx.directive;
    if (d.kind === 'start') {
      work.send({ type: 'START' });
      continue;
    }
    if (d.kind === 'dispatch') {
      if (dispatched(work, d.hop, d.attempt, d.resume)) return;
      const decision = govern(work, {
        stage: d.stage,
        role: d.role,
        hop: d.hop,
        attempt: d.attempt,
        approvedBy: d.approvedBy,
        query: false,
      });
      if (decision.decision === 'deny') {
        work.send({ type: 'GOVERNANCE_DENIED', hop: d.hop, reason: decision.reason, policy: decision.policy });
        work.event('denied', d.hop, `${decision.policy}: ${decision.reason}`, { stage: d.stage, role: d.role });
        continue;
      }
      if (decision.decision === 'require-approval') {
        work.send({
          type: 'APPROVAL_REQUIRED',
          hop: d.hop,
          reason: decision.reason.slice(0, 2000),
          ...(decision.approvers === null ? {} : { approvers: decision.approvers }),
        });
        continue;
      }
      if (d.resume !== null) resume(work, d.resume);
      else dispatch(work, d.stage, d.role, d.hop, d.attempt, d.delayMs);
      return;
    }
    if (d.kind === 'await-approval') {
      if (work.item.approval === null) {
        work.item = {
          ...work.item,
          approval: { stage: d.stage, hop: d.hop, source: d.source, approvers: d.approvers, reason: d.reason },
        };
        work.audit.push({
          kind: 'approval-requested',
          itemId: work.item.id,
          hop: d.hop,
          actor: COORDINATOR_ACTOR,
          data: json({ stage: d.stage, source: d.source, approvers: d.approvers, reason: d.reason }),
        });
        work.event(
          'approval-requested',
          d.hop,
          `waits for ${d.approvers === null ? 'an approver' : d.approvers.join(' or ')}: ${d.reason}`,
          { stage: d.stage, role: ctx.definition.stages[d.stage]?.role ?? null },
        );
      }
      return;
    }
    if (d.kind === 'await-reply') return;
    if (isFinalRunState(state)) end(work, state);
    return;
  }
  throw new Error(`the run of ${work.item.id} did not settle`);
}

/** Whether the directive's hop is already out (after a restart, a directive may be acted on already). */
function dispatched(work: Work, hop: number, attempt: number, resume: string | null): boolean {
  if (resume === null) return work.hopByKey(hopKey(work.item.id, hop, attempt)) !== undefined;
  const query = work.hopByContinuation(resume);
  if (query?.askedBy === null || query?.askedBy === undefined) return false;
  return work.hops.get(query.askedBy)?.state === 'dispatched';
}

function dispatch(work: Work, stage: string, role: string, hop: number, attempt: number, delayMs: number): void {
  const now = work.env.now;
  const item = work.item;
  const record = dispatchedHop({
    id: work.env.nextId(),
    itemId: item.id,
    seq: item.hops + 1,
    hop,
    attempt,
    kind: 'stage',
    stage,
    role,
    idempotencyKey: hopKey(item.id, hop, attempt),
    continuation: null,
    askedBy: null,
    dispatchedAt: now,
    activeSince: now + delayMs,
  });
  work.insertHop(record);
  work.item = { ...item, hops: item.hops + 1 };
  work.outbox.push({ kind: 'start', body: startBody(work, record, delayMs) });
  work.audit.push({
    kind: attempt > 1 ? 'retry' : 'dispatch',
    itemId: item.id,
    hop,
    actor: COORDINATOR_ACTOR,
    data: json({ hopId: record.id, stage, role, attempt, idempotencyKey: record.idempotencyKey, delayMs }),
  });
  work.event('dispatched', hop, attempt > 1 ? `dispatched (attempt ${attempt})` : 'dispatched', { stage, role });
}

/** The publish of a stage hop: the same body (and idempotency key) each time it is published. */
function startBody(work: Work, record: HopRecord, delayMs: number): StartBody {
  const item = work.item;
  const ctx = work.run!.context;
  const { stage, hop, attempt } = record;
  return {
    role: record.role,
    taskId: record.id,
    runId: item.id,
    hop,
    attempt,
    idempotencyKey: record.idempotencyKey,
    taskKey: item.id,
    retryPolicy: retryPolicyOf(ctx.definition, stage),
    message: {
      role: 'user',
      parts: item.input,
      metadata: {
        [SWITCHBOARD_METADATA_KEY]: {
          itemId: item.id,
          hopId: record.id,
          workflow: `${ctx.workflow.id}@${ctx.workflow.version}`,
          stage,
          hop,
          attempt,
        },
      },
    },
    ...(delayMs > 0 ? { delayMs } : {}),
  };
}

/** Whether a definition sets any time bound (a deadline, a stage timeout): only then do timers look at its items. */
export function hasTimeBounds(def: WorkflowDefinition): boolean {
  return def.deadline !== undefined || Object.values(def.stages).some((s) => s.timeout !== undefined);
}

/**
 * Time passed. The run decides: a `TICK` at `now` fails an item past its
 * deadline (`DEADLINE_EXCEEDED`). A stage hop out longer than its stage's
 * `timeout` (from when it became active: its dispatch, or its resume) is
 * told to the run (`HOP_TIMED_OUT`), once per timeout; while its retry
 * policy's `maximumAttempts` allows, the run has it re-published under the
 * same idempotency key (a lost message is found again; one still queued is a
 * duplicate the bus ignores); then it fails (`HopTimedOut`, exhausted) and
 * the run routes the failure. Each is audited (`timeout`).
 */
function timer(view: ItemView | undefined, env: DecisionEnv): Decision {
  if (view === undefined || view.run === null || view.item.finishedAt !== null) return unchanged(view, 'applied');
  const def = view.run.context.definition;
  const now = env.now;
  const work = new Work(view, env);
  if ((view.run.context.deadline ?? null) !== null) {
    work.send({ type: 'TICK', now });
    const failure = work.ctx?.failure ?? null;
    if (work.run !== null && work.run.value === 'failed' && failure?.code === 'DEADLINE_EXCEEDED') {
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
    if (hop.state !== 'dispatched' || hop.activeSince === null) continue;
    if (hop.kind === 'query') {
      if (queryTimedOut(work, hop)) changed = true;
      continue;
    }
    const timeout = def.stages[hop.stage]?.timeout;
    if (timeout === undefined || now < hop.activeSince + timeout * (hop.timeouts + 1)) continue;
    const timeouts = hop.timeouts + 1;
    // What the hop cost, should the run fail it.
    const accrual = accrue(hop, work.item, undefined, now);
    const before = work.run?.value;
    const event: WorkflowRunEvent = {
      type: 'HOP_TIMED_OUT',
      hop: hop.hop,
      attempt: hop.attempt,
      timeouts,
      usage: accrual.added,
    };
    if (!work.send(event)) continue;
    changed = true;
    const base = { hopId: hop.id, stage: hop.stage, role: hop.role, timeoutMs: timeout, timeouts };
    if ((work.ctx?.republish ?? null) !== null) {
      // Re-published as it went out: its start (same key), or the reply that resumed it.
      const answered = [...work.hops.values()]
        .filter((q) => q.kind === 'query' && q.askedBy === hop.id && q.reply !== null)
        .at(-1);
      work.updateHop({ ...hop, timeouts });
      work.outbox.push(
        answered === undefined
          ? { kind: 'start', body: startBody(work, hop, 0) }
          : { kind: 'signal', body: answered.reply },
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
    const message = timeoutMessage(def, hop.stage, timeouts, 'hop');
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
 * A query out longer than the asking stage's `timeout`, told to the run
 * (`HOP_TIMED_OUT` with the query's continuation): while the asking stage's
 * retry policy's `maximumAttempts` allows (and its question was kept), the
 * run has it re-published under the same idempotency key; then it fails
 * (`HopTimedOut`) and the hop that asked resumes with that failure as its
 * answer. Audited (`timeout`, `what: "query"`). True when the run took it.
 */
function queryTimedOut(work: Work, query: HopRecord): boolean {
  const def = work.run!.context.definition;
  const now = work.env.now;
  const timeout = def.stages[query.stage]?.timeout;
  if (timeout === undefined || query.activeSince === null) return false;
  if (now < query.activeSince + timeout * (query.timeouts + 1)) return false;
  const asking = query.askedBy === null ? undefined : work.hops.get(query.askedBy);
  if (asking === undefined || query.continuation === null) return false;
  const timeouts = query.timeouts + 1;
  const questionKept = query.question !== null;
  // What the query cost, should the run fail it (as an answer would accrue it).
  const added = accrue(query, work.item, undefined, now).added;
  const before = work.run?.value;
  const event: WorkflowRunEvent = {
    type: 'HOP_TIMED_OUT',
    hop: asking.hop,
    attempt: asking.attempt,
    timeouts,
    continuation: query.continuation,
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
  if ((work.ctx?.republish ?? null) !== null && query.question !== null) {
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
  const message = timeoutMessage(def, query.stage, timeouts, 'query', questionKept);
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
    headers: {
      taskId: asking.id,
      runId: work.item.id,
      hop: asking.hop,
      attempt: 1,
      idempotencyKey: query.idempotencyKey,
      askedBy: { role: asking.role, continuationToken: query.continuation, taskId: asking.id, hop: asking.hop },
    },
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

function resume(work: Work, continuation: string): void {
  const query = work.hopByContinuation(continuation);
  const asking = query?.askedBy === null || query === undefined ? undefined : work.hops.get(query.askedBy);
  if (query === undefined || asking === undefined || query.reply === null) {
    throw new Error(`no answer recorded for continuation ${continuation}`);
  }
  const now = work.env.now;
  work.updateHop({ ...asking, state: 'dispatched', activeSince: now });
  work.outbox.push({ kind: 'signal', body: query.reply });
  work.audit.push({
    kind: 'resume',
    itemId: work.item.id,
    hop: asking.hop,
    actor: COORDINATOR_ACTOR,
    data: json({ hopId: asking.id, answeredBy: query.role, queryId: query.id, continuation }),
  });
  work.event('resumed', asking.hop, `resumed with ${query.role}'s answer`, {
    stage: asking.stage,
    role: asking.role,
  });
}

/** The item ends: the one place an item's end is written (its row, its audit entry, its event). */
function end(work: Work, state: FinalRunState): void {
  if (work.item.finishedAt !== null) return;
  const ctx = work.run!.context;
  work.item = { ...work.item, finishedAt: work.env.now, approval: null, output: itemOutput(state, ctx, work.result) };
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
        ? `work item failed: ${failure?.code ?? 'FAILED'}: ${failure?.reason ?? ''}`
        : `work item canceled${ctx.cancellation?.by ? ` by ${ctx.cancellation.by}` : ''}`;
  work.event(state as ItemEventKind, ctx.hop, detail);
}
