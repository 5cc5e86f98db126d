import type { KeyObject } from 'node:crypto';
import { type Actor, createActor } from 'xstate';
import { type StartHop, questionHop } from '../../bus/dispatcher.js';
import type { Logger } from '../../log/logger.js';
import type { GovernanceDecision, HopContext } from '../../workflow/governance.js';
import { type WorkflowRegistry, stageRetryPolicy } from '../../workflow/definition.js';
import {
  WORKFLOW_RUN_MACHINE_VERSION,
  type WorkflowRunMachine,
  restoreWorkflowRun,
  workflowRunMachine,
} from '../../machines/workflow-run-machine.js';
import { type WorkflowRunContext, isFinalRunState } from '../../machines/workflow-run-transitions.js';
import type { AuditLog } from '../../persistence/audit/chain.js';
import type { AuditEntryInput, JsonObject } from '../../protocol/audit.js';
import type { Clock } from '../../persistence/kernel/clock.js';
import type { IdSource } from '../../persistence/kernel/ids.js';
import type { Part } from '../../protocol/parts.js';
import type { ResultEnvelope, RetryPolicy } from '../../protocol/work-envelope.js';
import type { WorkflowDefinition, WorkflowRunEvent } from '../../protocol/workflow.js';
import type { CoordinatorGovernance } from './policies.js';
import type { CoordinatorStore } from '../../persistence/coordinator/store.js';
import {
  type HopRecord,
  type ItemBudget,
  type ItemRecord,
  type ItemState,
  type OutboxRow,
  dispatchedHop,
} from '../../workflow/records.js';
import { type ItemEvent, type ItemEventKind, statusOf, type ItemStatus } from './types.js';
import { CoordinatorError } from './types.js';
import { LiveRecords } from './live-records.js';
import { accrue } from '../../workflow/cost-ledger.js';
import { SWITCHBOARD_METADATA_KEY } from './human-edge.js';
import type { ActorInspector } from '../inspection.js';

/**
 * The Coordinator's decisions, synchronous, each inside ONE SQLite
 * transaction: apply a hop result (or an approval, a denial, a
 * cancellation) to the work item's WorkflowRun actor, then follow the run's
 * directives (govern and dispatch the next hop, wait for an approval or a
 * reply, or end the item), writing the hop rows, the cost accruals, the run
 * snapshot, the audit rows and the publishes to make (an outbox) together.
 * Nothing here touches the bus or the broker: the Coordinator publishes the
 * outbox and moves the broker's tasks after the commit.
 */

/** What one transaction did, for the Coordinator to act on after the commit. */
export interface Step {
  audit: AuditEntryInput[];
  events: ItemEvent[];
  /** Items this step changed, as committed. */
  items: Map<string, ItemRecord>;
  /** The publishes this step added to the outbox (made after the commit). */
  outbox: OutboxRow[];
}

export type ResultHandling = 'applied' | 'duplicate' | 'late' | 'unknown';

interface Work {
  item: ItemRecord;
  actor: Actor<WorkflowRunMachine> | undefined;
}

const COORDINATOR_ACTOR = 'coordinator';

/** Drops `undefined` fields (audit rows are plain JSON); nested values are built without them. */
function json(value: object): JsonObject {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(value)) {
    const v = (value as Record<string, unknown>)[k];
    if (v !== undefined) out[k] = v;
  }
  return out as JsonObject;
}

/** The bus idempotency key of a stage hop attempt: `<item>/<hop>/<attempt>`. */
export function hopKey(itemId: string, hop: number, attempt: number): string {
  return `${itemId}/${hop}/${attempt}`;
}

/** Audit kinds that end a work item: the head is signed in their transaction. */
const ITEM_END_KINDS: ReadonlySet<string> = new Set(['item-completed', 'item-failed', 'item-canceled']);

export interface EngineOptions {
  store: CoordinatorStore;
  audit: AuditLog;
  registry: WorkflowRegistry;
  governance: CoordinatorGovernance;
  clock: Clock;
  ids: IdSource;
  logger: Logger;
  /** An inspector (`--inspect`) for each work item's WorkflowRun actor (a root actor); none by default. */
  inspect?: ActorInspector | undefined;
  /**
   * The Ed25519 key that signs the audit head (a checkpoint) in the
   * transaction of every work item's end; never stored.
   */
  auditKey?: KeyObject | undefined;
  /** Called with each transaction's duration (governance, audit, cost, routing, the store and the commit). */
  /** Per step; a step of a shared commit gets its share (`batch` steps shared it). */
  onTiming?: (ns: number, what: TimedStep, innerNs: number, cpuUs: number, batch: number) => void;
}

/** What a timed transaction did. */
export type TimedStep = 'create' | 'result' | 'decision';

export class CoordinatorEngine {
  readonly #store: CoordinatorStore;
  readonly #audit: AuditLog;
  readonly #registry: WorkflowRegistry;
  readonly #governance: CoordinatorGovernance;
  readonly #clock: Clock;
  readonly #ids: IdSource;
  readonly #log: Logger;
  readonly #inspect: ActorInspector | undefined;
  /** The live runs: one root actor per work item not yet final. */
  readonly #runs = new Map<string, Actor<WorkflowRunMachine>>();
  readonly #rec: LiveRecords;
  /** Resolved retry policies per definition object and stage (resolving parses). */
  readonly #retryPolicies = new WeakMap<WorkflowDefinition, Map<string, RetryPolicy>>();
  /** Definitions already kept in the tables (run snapshots refer to them). */
  readonly #kept = new Set<string>();
  readonly #tx: (fn: (step: Step) => ResultHandling) => { step: Step; handling: ResultHandling };
  readonly #batchTx: <T>(fn: () => T) => T;
  /** Outbox rows published since the last transaction: deleted by the next one. */
  #published: number[] = [];
  /** Outbox rows the open transaction deletes: published again if it rolls back. */
  #deleting: number[] = [];
  /** Nanoseconds spent inside transactions, and how many (for the bench). */
  readonly timing = { ns: 0n, count: 0 };
  readonly #onTiming: EngineOptions['onTiming'];
  /** Time spent inside the last transaction's body (without BEGIN and COMMIT). */
  #innerNs = 0n;

  constructor(options: EngineOptions) {
    this.#store = options.store;
    this.#audit = options.audit;
    this.#registry = options.registry;
    this.#governance = options.governance;
    this.#clock = options.clock;
    this.#ids = options.ids;
    this.#log = options.logger;
    this.#inspect = options.inspect;
    this.#onTiming = options.onTiming;
    this.#rec = new LiveRecords(options.store);
    const tx = this.#store.db.transaction((fn: (step: Step) => ResultHandling) => {
      const done = this.#body(fn);
      if (done.step.audit.length > 0) {
        this.#audit.appendManyInTransaction(done.step.audit);
        const key = options.auditKey;
        if (key !== undefined && done.step.audit.some((e) => ITEM_END_KINDS.has(e.kind))) this.#audit.checkpoint(key);
      }
      return done;
    });
    this.#tx = (fn) => tx.immediate(fn);
    // Results that arrive together share one transaction (see applyResults).
    const batch = this.#store.db.transaction((fn: () => unknown) => fn());
    this.#batchTx = <T>(fn: () => T) => batch.immediate(fn) as T;
  }

  /** A step's work inside an open transaction; its audit rows are left to the caller to append. */
  #body(fn: (step: Step) => ResultHandling): { step: Step; handling: ResultHandling } {
    const began = process.hrtime.bigint();
    // Published outbox rows are deleted in bulk (a few pages every 64 publishes, not two writes each).
    if (this.#published.length >= 64) {
      this.#store.deleteOutbox(this.#published);
      this.#deleting.push(...this.#published);
      this.#published = [];
    }
    const step: Step = { audit: [], events: [], items: new Map(), outbox: [] };
    const handling = fn(step);
    this.#innerNs += process.hrtime.bigint() - began;
    return { step, handling };
  }

  get liveRuns(): number {
    return this.#runs.size;
  }

  /** Restores every live item's run from its snapshot. Returns the items it could not restore. */
  restore(): { restored: string[]; refused: { itemId: string; reason: string }[] } {
    const restored: string[] = [];
    const refused: { itemId: string; reason: string }[] = [];
    for (const item of this.#store.liveItems()) {
      const saved = this.#store.loadRun(item.id);
      if (saved === undefined) {
        refused.push({ itemId: item.id, reason: 'no run snapshot' });
        continue;
      }
      if (saved.machineVersion !== WORKFLOW_RUN_MACHINE_VERSION) {
        refused.push({
          itemId: item.id,
          reason: `run snapshot of machine version ${saved.machineVersion}, this code runs ${WORKFLOW_RUN_MACHINE_VERSION}`,
        });
        continue;
      }
      try {
        const actor = restoreWorkflowRun(this.#withDefinition(saved.snapshot, item.workflow), {
          inspect: this.#inspect,
        });
        actor.start();
        this.#runs.set(item.id, actor);
        this.#rec.load(item.id);
        restored.push(item.id);
      } catch (error) {
        refused.push({ itemId: item.id, reason: (error as Error).message });
      }
    }
    return { restored, refused };
  }

  /** Outbox rows now (after a restart: what a crash may have left unpublished). */
  outbox() {
    return this.#store.outbox();
  }

  /** Marks outbox rows as published: the next transaction deletes them. */
  published(ids: readonly number[]): void {
    this.#published.push(...ids);
  }

  /** Deletes published outbox rows now (on close). */
  flushPublished(): void {
    if (this.#published.length === 0) return;
    const ids = this.#published;
    this.#published = [];
    this.#store.db.transaction(() => this.#store.deleteOutbox(ids)).immediate();
  }

  #run(
    what: TimedStep,
    fn: (step: Step) => ResultHandling,
    touched: () => Iterable<string>,
  ): { step: Step; handling: ResultHandling } {
    const cpu = this.#onTiming === undefined ? undefined : process.cpuUsage();
    const start = process.hrtime.bigint();
    this.#innerNs = 0n;
    try {
      const done = this.#tx(fn);
      this.#deleting = [];
      return done;
    } catch (error) {
      // The transaction rolled back: the memory goes back too.
      this.#rolledBack(touched());
      throw error;
    } finally {
      this.#timed(what, start, cpu, 1);
    }
  }

  /** After a rollback: the actors, records and outbox bookkeeping go back to where the tables are. */
  #rolledBack(itemIds: Iterable<string>): void {
    this.#kept.clear();
    this.#published.unshift(...this.#deleting);
    this.#deleting = [];
    for (const itemId of itemIds) this.#reload(itemId);
  }

  #timed(what: TimedStep, start: bigint, cpu: NodeJS.CpuUsage | undefined, n: number): void {
    const ns = process.hrtime.bigint() - start;
    this.timing.ns += ns;
    this.timing.count += n;
    if (cpu === undefined || n === 0) return;
    const used = process.cpuUsage(cpu);
    const share = (x: number) => x / n;
    for (let i = 0; i < n; i++) {
      this.#onTiming?.(share(Number(ns)), what, share(Number(this.#innerNs)), share(used.user + used.system), n);
    }
  }

  #reload(itemId: string): void {
    this.#runs.get(itemId)?.stop();
    this.#runs.delete(itemId);
    const item = this.#rec.load(itemId);
    const saved = this.#store.loadRun(itemId);
    if (item === undefined || item.finishedAt !== null || saved === undefined) return;
    const actor = restoreWorkflowRun(this.#withDefinition(saved.snapshot, item.workflow), { inspect: this.#inspect });
    actor.start();
    this.#runs.set(itemId, actor);
  }

  /** A stored run snapshot refers to its definition (kept once per version); put it back in the context. */
  #withDefinition(snapshot: unknown, ref: { id: string; version: number }): unknown {
    const snap = snapshot as { context?: { definition?: unknown } };
    if (snap?.context === undefined || (snap.context.definition !== null && snap.context.definition !== undefined)) {
      return snapshot;
    }
    const definition = this.#store.definition(ref) ?? this.#registry.get(ref);
    return { ...snap, context: { ...snap.context, definition } };
  }

  // --------------------------------------------------------------- commands

  /** Creates a work item (its broker task already made) and drives it to its first hop. */
  createItem(params: {
    itemId: string;
    taskId: string | null;
    definition: WorkflowDefinition;
    input: Part[];
    budget: ItemBudget | null;
    attributes: Record<string, string | number | boolean> | null;
  }): Step {
    const { itemId, definition } = params;
    return this.#run(
      'create',
      (step) => {
        const now = this.#clock.now();
        const workflow = { id: definition.id, version: definition.version };
        const defKey = `${definition.id}@${definition.version}`;
        if (!this.#kept.has(defKey)) {
          this.#store.saveDefinition(workflow, definition);
          this.#kept.add(defKey);
        }
        const item: ItemRecord = {
          id: itemId,
          taskId: params.taskId,
          workflow,
          state: 'pending',
          stage: null,
          hop: 0,
          hops: 0,
          input: params.input,
          budget: params.budget,
          attributes: params.attributes,
          usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, elapsedMs: 0 },
          failure: null,
          approval: null,
          createdAt: now,
          updatedAt: now,
          finishedAt: null,
          mirrored: false,
        };
        this.#rec.insertItem(item);
        const actor = createActor(workflowRunMachine, { input: { runId: itemId, definition }, inspect: this.#inspect });
        actor.start();
        this.#runs.set(itemId, actor);
        const work: Work = { item, actor };
        step.audit.push({
          kind: 'item-created',
          itemId,
          actor: 'edge',
          data: json({
            workflow: { id: definition.id, version: definition.version },
            taskId: params.taskId,
            budget: params.budget,
            inputParts: params.input.length,
          }),
        });
        this.#event(step, work, 'created', null, `work item created on ${definition.id}@${definition.version}`);
        this.#send(work, { type: 'START' });
        this.#drive(step, work);
        this.#commit(step, work);
        return 'applied';
      },
      () => [itemId],
    ).step;
  }

  /** Applies one hop result, once (a result already handled is a no-op). */
  applyResult(result: ResultEnvelope): { step: Step; handling: ResultHandling } {
    const touched = new Set<string>([result.headers.runId]);
    return this.#run(
      'result',
      (step) => this.#applyResult(step, result),
      () => touched,
    );
  }

  /**
   * Applies hop results that arrived together in ONE transaction (a group
   * commit: one BEGIN/COMMIT and one audit append for all). If any of them
   * throws, or the commit fails, nothing of the batch stays: the memory is put
   * back and each result is applied again alone, in its own transaction, so
   * one that fails fails alone (its entry is `{ error }`) and the rest commit.
   */
  applyResults(
    batch: readonly { result: ResultEnvelope }[],
  ): ({ step: Step; handling: ResultHandling } | { error: unknown })[] {
    const alone = () =>
      batch.map(({ result }) => {
        try {
          return this.applyResult(result);
        } catch (error) {
          return { error };
        }
      });
    if (batch.length === 1) return alone();
    const cpu = this.#onTiming === undefined ? undefined : process.cpuUsage();
    const start = process.hrtime.bigint();
    this.#innerNs = 0n;
    let applied: { step: Step; handling: ResultHandling }[];
    try {
      applied = this.#batchTx(() => {
        const steps = batch.map(({ result }) => this.#body((step) => this.#applyResult(step, result)));
        const began = process.hrtime.bigint();
        const audit = steps.flatMap((s) => s.step.audit);
        if (audit.length > 0) this.#audit.appendManyInTransaction(audit);
        this.#innerNs += process.hrtime.bigint() - began;
        return steps;
      });
      this.#deleting = [];
    } catch (error) {
      this.#rolledBack(new Set(batch.map((b) => b.result.headers.runId)));
      this.#log.warn({ err: error, results: batch.length }, 'a shared commit failed: applying its results one by one');
      return alone();
    }
    this.#timed('result', start, cpu, batch.length);
    return applied;
  }

  approve(itemId: string, approver: string): Step {
    return this.#decide(itemId, (step, work) => {
      this.#send(work, { type: 'APPROVED', by: approver }, true);
      step.audit.push({
        kind: 'approval',
        itemId,
        hop: work.item.approval?.hop ?? work.item.hop,
        actor: approver,
        data: json({ decision: 'approved', by: approver, stage: work.item.approval?.stage }),
      });
      this.#event(step, work, 'approved', work.item.hop, `approved by ${approver}`);
      work.item = { ...work.item, approval: null };
    });
  }

  deny(itemId: string, approver: string, reason?: string): Step {
    return this.#decide(itemId, (step, work) => {
      this.#send(
        work,
        { type: 'DENIED', by: approver, ...(reason === undefined || reason === '' ? {} : { reason }) },
        true,
      );
      step.audit.push({
        kind: 'approval',
        itemId,
        hop: work.item.approval?.hop ?? work.item.hop,
        actor: approver,
        data: json({ decision: 'denied', by: approver, reason, stage: work.item.approval?.stage }),
      });
      this.#event(step, work, 'approval-denied', work.item.hop, `denied by ${approver}${reason ? `: ${reason}` : ''}`);
      work.item = { ...work.item, approval: null };
    });
  }

  cancel(itemId: string, by: string | null, reason: string | null): Step {
    return this.#decide(itemId, (_step, work) => {
      this.#send(
        work,
        { type: 'CANCEL', ...(by === null ? {} : { by }), ...(reason === null ? {} : { reason }) },
        true,
      );
    });
  }

  #decide(itemId: string, act: (step: Step, work: Work) => void): Step {
    return this.#run(
      'decision',
      (step) => {
        const item = this.#rec.item(itemId);
        if (item === undefined) throw new CoordinatorError('COORD_UNKNOWN_ITEM', `no work item ${itemId}`);
        const actor = this.#runs.get(itemId);
        if (item.finishedAt !== null || actor === undefined) {
          throw new CoordinatorError('COORD_ITEM_FINAL', `work item ${itemId} is ${item.state}`);
        }
        const work: Work = { item, actor };
        act(step, work);
        this.#drive(step, work);
        this.#commit(step, work);
        return 'applied';
      },
      () => [itemId],
    ).step;
  }

  // ---------------------------------------------------------------- results

  /**
   * A result is applied once, keyed by its hop (one row per hop attempt): only
   * a hop that is out (`dispatched`) takes a result, and a suspension only
   * once per continuation. A redelivered result finds its hop moved on and
   * changes nothing.
   */
  #applyResult(step: Step, result: ResultEnvelope): ResultHandling {
    const now = this.#clock.now();
    const askedBy = result.headers.askedBy;
    if (askedBy !== undefined) {
      const query = this.#rec.hopByContinuation(askedBy.continuationToken);
      if (query === undefined) {
        // A question is published only after its suspension commits, so an answer always finds
        // its query; one that does not answers a question this Coordinator never asked.
        this.#log.warn({ continuation: askedBy.continuationToken }, 'an answer to an unknown query: ignored');
        return 'unknown';
      }
      if (query.state !== 'dispatched') return 'duplicate';
      return this.#applyAnswer(step, result, query, now);
    }
    const hop = this.#rec.hop(result.headers.taskId);
    if (hop === undefined || hop.kind !== 'stage' || hop.itemId !== result.headers.runId) {
      this.#log.warn({ taskId: result.headers.taskId }, 'a result for an unknown hop: ignored');
      return 'unknown';
    }
    if (hop.state !== 'dispatched') return 'duplicate';
    if (result.ask !== undefined && this.#rec.hopByContinuation(result.ask.continuationToken) !== undefined) {
      return 'duplicate';
    }
    const item = this.#rec.item(hop.itemId)!;
    const work: Work = { item, actor: this.#runs.get(item.id) };
    const accrual = accrue(hop, work.item, result.usage, now);
    work.item = accrual.item;
    this.#store.addUsage(accrual.row);
    let next: HopRecord = accrual.hop;
    const cost = this.#costRow(next, accrual.added, accrual.model);
    const live = work.actor !== undefined && work.item.finishedAt === null;

    if (result.outcome === 'suspended' && result.ask !== undefined) {
      const ask = result.ask;
      next = { ...next, state: 'suspended' };
      this.#rec.updateHop(next);
      const query = dispatchedHop({
        id: this.#ids.next(),
        itemId: item.id,
        seq: work.item.hops + 1,
        hop: hop.hop,
        attempt: 1,
        kind: 'query',
        stage: hop.stage,
        role: ask.role,
        idempotencyKey: `${ask.continuationToken}:ask`,
        continuation: ask.continuationToken,
        askedBy: hop.id,
        dispatchedAt: now,
        activeSince: now,
      });
      this.#rec.insertHop(query);
      work.item = { ...work.item, hops: work.item.hops + 1 };
      step.audit.push(
        {
          kind: 'suspend',
          itemId: item.id,
          hop: hop.hop,
          actor: hop.role,
          data: json({ hopId: hop.id, askedRole: ask.role, continuation: ask.continuationToken }),
        },
        cost,
      );
      this.#event(step, work, 'suspended', hop.hop, `asked ${ask.role} and stood down`, {
        stage: hop.stage,
        role: hop.role,
        usage: accrual.added,
        model: accrual.model,
      });
      // A question the Coordinator does not allow is never published: its query hop fails.
      const drop = (type: string, message: string) => {
        this.#rec.updateHop({
          ...query,
          state: 'failed',
          activeSince: null,
          finishedAt: now,
          error: { type, message },
        });
      };
      if (!live) {
        drop('ItemEnded', `the work item is ${work.item.state}`);
        return this.#late(step, work, hop);
      }
      // An overrun ends the item before anything else is decided; otherwise the ask is governed like a hop.
      const decision = this.#overBudget(step, work)
        ? null
        : this.#govern(step, work, {
            stage: hop.stage,
            role: ask.role,
            hop: hop.hop,
            attempt: hop.attempt,
            approvedBy: null,
            query: true,
          });
      if (decision === null) drop('BudgetExceeded', 'the work item is over its budget');
      if (decision !== null && decision.decision !== 'allow') {
        const reason =
          decision.decision === 'deny' ? decision.reason : `a query cannot wait for an approval (${decision.reason})`;
        drop('GovernanceDenied', reason);
        this.#send(work, {
          type: 'GOVERNANCE_DENIED',
          hop: hop.hop,
          reason,
          ...(decision.decision === 'deny' ? { policy: decision.policy } : {}),
        });
        this.#event(step, work, 'denied', hop.hop, `query to ${ask.role} denied: ${reason}`, { stage: hop.stage });
      } else if (decision !== null) {
        this.#send(work, {
          type: 'HOP_SUSPENDED',
          hop: hop.hop,
          attempt: hop.attempt,
          continuation: ask.continuationToken,
          askedRole: ask.role,
          usage: accrual.added,
        });
        // The question goes out from the outbox, in this transaction, like every other hop.
        const start = questionHop(result)!;
        step.outbox.push(this.#store.addOutbox(item.id, 'start', start));
        step.audit.push({
          kind: 'dispatch',
          itemId: item.id,
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
      this.#rec.updateHop(next);
      step.audit.push(
        {
          kind: 'result',
          itemId: item.id,
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
      this.#event(step, work, 'hop-completed', hop.hop, 'completed', {
        stage: hop.stage,
        role: hop.role,
        usage: accrual.added,
        model: accrual.model,
      });
      if (!live) return this.#late(step, work, hop);
      if (!this.#overBudget(step, work)) {
        this.#send(work, { type: 'HOP_SUCCEEDED', hop: hop.hop, attempt: hop.attempt, usage: accrual.added });
      }
    } else {
      const error = result.error ?? { type: 'InvalidResult', message: `a ${result.outcome} result without its fields` };
      next = { ...next, state: 'failed', finishedAt: now, error };
      this.#rec.updateHop(next);
      step.audit.push(
        {
          kind: 'failure',
          itemId: item.id,
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
      this.#event(step, work, 'hop-failed', hop.hop, `failed: ${error.type}: ${error.message.slice(0, 200)}`, {
        stage: hop.stage,
        role: hop.role,
        usage: accrual.added,
        model: accrual.model,
      });
      if (!live) return this.#late(step, work, hop);
      if (!this.#overBudget(step, work)) {
        const def = this.#definitionOf(work);
        const policy = this.#retryPolicy(def, hop.stage);
        const spent = policy.maximumAttempts !== 0 && (result.deliveries ?? 1) >= policy.maximumAttempts;
        const final = policy.nonRetryableErrorTypes.includes(error.type) || !spent ? 'non-retryable' : 'exhausted';
        this.#send(work, {
          type: 'HOP_FAILED',
          hop: hop.hop,
          attempt: hop.attempt,
          errorType: error.type.slice(0, 128),
          message: error.message.slice(0, 2000),
          final,
          usage: accrual.added,
        });
      }
    }
    this.#drive(step, work);
    this.#commit(step, work);
    return 'applied';
  }

  #applyAnswer(step: Step, result: ResultEnvelope, query: HopRecord, now: number): ResultHandling {
    const item = this.#rec.item(query.itemId)!;
    const work: Work = { item, actor: this.#runs.get(item.id) };
    const accrual = accrue(query, work.item, result.usage, now);
    work.item = accrual.item;
    this.#store.addUsage(accrual.row);
    const failed = result.outcome === 'failed';
    const next: HopRecord = {
      ...accrual.hop,
      state: failed ? 'failed' : 'completed',
      finishedAt: now,
      error: failed ? (result.error ?? { type: 'Error', message: 'the query failed' }) : null,
      reply: result,
    };
    this.#rec.updateHop(next);
    step.audit.push(
      {
        kind: 'result',
        itemId: item.id,
        hop: query.hop,
        actor: query.role,
        data: json({ hopId: query.id, kind: 'query', outcome: result.outcome, parts: result.parts.length }),
      },
      this.#costRow(next, accrual.added, accrual.model),
    );
    this.#event(
      step,
      work,
      'answered',
      query.hop,
      failed ? `the query failed: ${next.error?.type}` : 'answered the query',
      { stage: query.stage, role: query.role, usage: accrual.added, model: accrual.model },
    );
    const ctx = work.actor?.getSnapshot().context;
    if (
      work.item.finishedAt !== null ||
      ctx === undefined ||
      ctx.directive.kind !== 'await-reply' ||
      ctx.directive.continuation !== query.continuation
    ) {
      return this.#late(step, work, query);
    }
    if (!this.#overBudget(step, work)) {
      this.#send(work, {
        type: 'HOP_RESUMED',
        hop: query.hop,
        continuation: query.continuation!,
        usage: accrual.added,
      });
    }
    this.#drive(step, work);
    this.#commit(step, work);
    return 'applied';
  }

  #late(step: Step, work: Work, hop: HopRecord): ResultHandling {
    this.#event(
      step,
      work,
      'late-result',
      hop.hop,
      `a result after the item ended (${work.item.state}): cost accrued`,
      {
        stage: hop.stage,
        role: hop.role,
      },
    );
    this.#commit(step, work);
    return 'late';
  }

  #costRow(hop: HopRecord, added: HopRecord['usage'], model: string): AuditEntryInput {
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

  /** Fails the item when its usage is over its budget (strictly): true when it did. */
  #overBudget(step: Step, work: Work): boolean {
    const budget = work.item.budget;
    if (budget === null) return false;
    const u = work.item.usage;
    const tokens = u.inputTokens + u.outputTokens;
    const over: string[] = [];
    if (budget.maxTokens !== undefined && tokens > budget.maxTokens)
      over.push(`${tokens} of ${budget.maxTokens} tokens`);
    if (budget.maxCostUsd !== undefined && u.costUsd > budget.maxCostUsd) {
      over.push(`${u.costUsd} of ${budget.maxCostUsd} USD`);
    }
    if (over.length === 0) return false;
    const reason = `budget exceeded: ${over.join(', ')}`;
    this.#send(work, { type: 'BUDGET_EXCEEDED', reason });
    this.#event(step, work, 'budget-exceeded', work.item.hop, reason);
    return true;
  }

  // ------------------------------------------------------------- directives

  #definitionOf(work: Work): WorkflowDefinition {
    const ctx = work.actor?.getSnapshot().context;
    if (ctx !== undefined) return ctx.definition;
    const def = this.#registry.get(work.item.workflow);
    if (def === undefined) throw new CoordinatorError('COORD_UNKNOWN_WORKFLOW', 'the item has no definition');
    return def;
  }

  #govern(
    step: Step,
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
    const decision = this.#governance.decide(work.item.budget, ctx);
    step.audit.push({
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
  #drive(step: Step, work: Work): void {
    for (let guard = 0; guard < 32; guard++) {
      const actor = work.actor;
      if (actor === undefined) return;
      const snapshot = actor.getSnapshot();
      const ctx = snapshot.context;
      const state = snapshot.value as ItemState;
      const d = ctx.directive;
      if (d.kind === 'start') {
        this.#send(work, { type: 'START' });
        continue;
      }
      if (d.kind === 'dispatch') {
        if (this.#dispatched(work, d.hop, d.attempt, d.resume)) return;
        const decision = this.#govern(step, work, {
          stage: d.stage,
          role: d.role,
          hop: d.hop,
          attempt: d.attempt,
          approvedBy: d.approvedBy,
          query: false,
        });
        if (decision.decision === 'deny') {
          this.#send(work, { type: 'GOVERNANCE_DENIED', hop: d.hop, reason: decision.reason, policy: decision.policy });
          this.#event(step, work, 'denied', d.hop, `${decision.policy}: ${decision.reason}`, {
            stage: d.stage,
            role: d.role,
          });
          continue;
        }
        if (decision.decision === 'require-approval') {
          this.#send(work, {
            type: 'APPROVAL_REQUIRED',
            hop: d.hop,
            reason: decision.reason.slice(0, 2000),
            ...(decision.approvers === null ? {} : { approvers: decision.approvers }),
          });
          continue;
        }
        if (d.resume !== null) this.#resume(step, work, d.resume);
        else this.#dispatch(step, work, ctx, d.stage, d.role, d.hop, d.attempt, d.delayMs);
        return;
      }
      if (d.kind === 'await-approval') {
        if (work.item.approval === null) {
          work.item = {
            ...work.item,
            approval: { stage: d.stage, hop: d.hop, source: d.source, approvers: d.approvers, reason: d.reason },
          };
          step.audit.push({
            kind: 'approval-requested',
            itemId: work.item.id,
            hop: d.hop,
            actor: COORDINATOR_ACTOR,
            data: json({ stage: d.stage, source: d.source, approvers: d.approvers, reason: d.reason }),
          });
          this.#event(
            step,
            work,
            'approval-requested',
            d.hop,
            `waits for ${d.approvers === null ? 'an approver' : d.approvers.join(' or ')}: ${d.reason}`,
            { stage: d.stage, role: ctx.definition.stages[d.stage]?.role ?? null },
          );
        }
        return;
      }
      if (d.kind === 'await-reply') return;
      if (isFinalRunState(state)) this.#finish(step, work, ctx, state);
      return;
    }
    throw new Error(`the run of ${work.item.id} did not settle`);
  }

  /** Whether the directive's hop is already out (after a restart, a directive may be acted on already). */
  #dispatched(work: Work, hop: number, attempt: number, resume: string | null): boolean {
    if (resume === null) return this.#rec.hopByKey(work.item.id, hopKey(work.item.id, hop, attempt)) !== undefined;
    const query = this.#rec.hopByContinuation(resume);
    if (query?.askedBy === null || query?.askedBy === undefined) return false;
    return this.#rec.hop(query.askedBy)?.state === 'dispatched';
  }

  #dispatch(
    step: Step,
    work: Work,
    ctx: WorkflowRunContext,
    stage: string,
    role: string,
    hop: number,
    attempt: number,
    delayMs: number,
  ): void {
    const now = this.#clock.now();
    const item = work.item;
    const record = dispatchedHop({
      id: this.#ids.next(),
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
    this.#rec.insertHop(record);
    work.item = { ...item, hops: item.hops + 1 };
    const start: StartHop = {
      role,
      taskId: record.id,
      runId: item.id,
      hop,
      attempt,
      idempotencyKey: record.idempotencyKey,
      taskKey: item.id,
      retryPolicy: this.#retryPolicy(ctx.definition, stage),
      message: {
        role: 'user',
        parts: item.input,
        metadata: {
          [SWITCHBOARD_METADATA_KEY]: {
            itemId: item.id,
            parentTaskId: item.taskId,
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
    step.outbox.push(this.#store.addOutbox(item.id, 'start', start));
    step.audit.push({
      kind: attempt > 1 ? 'retry' : 'dispatch',
      itemId: item.id,
      hop,
      actor: COORDINATOR_ACTOR,
      data: json({ hopId: record.id, stage, role, attempt, idempotencyKey: record.idempotencyKey, delayMs }),
    });
    this.#event(step, work, 'dispatched', hop, attempt > 1 ? `dispatched (attempt ${attempt})` : 'dispatched', {
      stage,
      role,
    });
  }

  #resume(step: Step, work: Work, continuation: string): void {
    const query = this.#rec.hopByContinuation(continuation);
    const asking = query?.askedBy === null || query === undefined ? undefined : this.#rec.hop(query.askedBy);
    if (query === undefined || asking === undefined || query.reply === null) {
      throw new Error(`no answer recorded for continuation ${continuation}`);
    }
    const now = this.#clock.now();
    this.#rec.updateHop({ ...asking, state: 'dispatched', activeSince: now });
    step.outbox.push(this.#store.addOutbox(work.item.id, 'signal', query.reply));
    step.audit.push({
      kind: 'resume',
      itemId: work.item.id,
      hop: asking.hop,
      actor: COORDINATOR_ACTOR,
      data: json({ hopId: asking.id, answeredBy: query.role, queryId: query.id, continuation }),
    });
    this.#event(step, work, 'resumed', asking.hop, `resumed with ${query.role}'s answer`, {
      stage: asking.stage,
      role: asking.role,
    });
  }

  #finish(step: Step, work: Work, ctx: WorkflowRunContext, state: ItemState): void {
    if (work.item.finishedAt !== null) return;
    const now = this.#clock.now();
    work.item = { ...work.item, finishedAt: now, approval: null };
    const failure = ctx.failure;
    const kind = state === 'completed' ? 'item-completed' : state === 'failed' ? 'item-failed' : 'item-canceled';
    step.audit.push({
      kind,
      itemId: work.item.id,
      hop: ctx.hop,
      actor: COORDINATOR_ACTOR,
      data: json({
        state,
        failure,
        cancellation: ctx.cancellation,
        usage: work.item.usage,
        hops: work.item.hops,
      }),
    });
    const detail =
      state === 'completed'
        ? 'work item completed'
        : state === 'failed'
          ? `work item failed: ${failure?.code ?? 'FAILED'}: ${failure?.reason ?? ''}`
          : `work item canceled${ctx.cancellation?.by ? ` by ${ctx.cancellation.by}` : ''}`;
    this.#event(step, work, state as ItemEventKind, ctx.hop, detail);
  }

  // ---------------------------------------------------------------- helpers

  #retryPolicy(def: WorkflowDefinition, stage: string): RetryPolicy {
    let byStage = this.#retryPolicies.get(def);
    if (byStage === undefined) {
      byStage = new Map();
      this.#retryPolicies.set(def, byStage);
    }
    let policy = byStage.get(stage);
    if (policy === undefined) {
      policy = stageRetryPolicy(def, stage);
      byStage.set(stage, policy);
    }
    return policy;
  }

  /** Sends an event to the run; a refused event throws only when `strict` (an approval by a non-approver). */
  #send(work: Work, event: WorkflowRunEvent, strict = false): boolean {
    const actor = work.actor;
    if (actor === undefined) return false;
    actor.send(event);
    const refusal = actor.getSnapshot().context.refusal;
    if (refusal === null) return true;
    if (strict) {
      throw new CoordinatorError(
        'COORD_APPROVAL_REFUSED',
        `${event.type} refused in state ${refusal.state}: ${refusal.reason}`,
      );
    }
    this.#log.warn({ itemId: work.item.id, event: event.type, refusal }, 'the run refused an event');
    return false;
  }

  #event(
    step: Step,
    work: Work,
    kind: ItemEventKind,
    hop: number | null,
    detail: string,
    extra: { stage?: string | null; role?: string | null; usage?: ItemEvent['usage']; model?: string } = {},
  ): void {
    step.events.push({
      kind,
      itemId: work.item.id,
      hop,
      stage: extra.stage ?? work.actor?.getSnapshot().context.stage ?? work.item.stage,
      role: extra.role ?? null,
      detail,
      ...(extra.usage === undefined ? {} : { usage: extra.usage }),
      ...(extra.model === undefined ? {} : { model: extra.model }),
      at: this.#clock.now(),
    });
  }

  /** Writes the item row and the run snapshot; a final run's actor is stopped and dropped. */
  #commit(step: Step, work: Work): void {
    const now = this.#clock.now();
    const actor = work.actor;
    let run: { machineVersion: number; snapshot: unknown } | undefined;
    if (actor !== undefined) {
      const snapshot = actor.getSnapshot();
      const ctx = snapshot.context;
      work.item = {
        ...work.item,
        state: snapshot.value as ItemState,
        stage: ctx.stage,
        hop: ctx.hop,
        failure: ctx.failure,
        updatedAt: now,
      };
      const persisted = actor.getPersistedSnapshot() as unknown as { context: object };
      // The definition is kept once per version (coord_definitions), not in every snapshot.
      const slim = { ...persisted, context: { ...persisted.context, definition: null } };
      run = { machineVersion: WORKFLOW_RUN_MACHINE_VERSION, snapshot: slim };
      if (isFinalRunState(snapshot.value as string)) {
        actor.stop();
        this.#runs.delete(work.item.id);
      }
    }
    this.#rec.putItem(work.item, run);
    step.items.set(work.item.id, work.item);
  }

  /** Statuses of a committed step's events, in order. */
  statuses(step: Step): ItemStatus[] {
    return step.events.flatMap((event) => {
      const item = step.items.get(event.itemId);
      return item === undefined ? [] : [statusOf(item, event)];
    });
  }
}
