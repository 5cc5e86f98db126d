import { z } from 'zod';
import { type Part, PartSchema } from '../../protocol/parts.js';
import { WorkflowError } from '../../protocol/workflow-error.js';
import type { WorkflowRef } from '../../protocol/workflow.js';
import type { IdSource } from '../../persistence/kernel/ids.js';
import { ROOT_CONTEXT, contextWith, endSpanWithError, traceFieldsOf } from '../../telemetry/tracing.js';
import type { WorkflowRegistry } from '../../workflow/definition.js';
import type { ItemBudget } from '../../workflow/records.js';
import type { CoordinatorStreams } from './coordinator-streams.js';
import type { CoordinatorEngine, Step } from './engine.js';
import type { ItemTraces } from './item-traces.js';
import type { BrokerMirror } from './mirror.js';
import type { CoordinatorGovernance } from './policies.js';
import { CoordinatorError, invalid } from './types.js';

/** What `Coordinator.createWorkItem` takes: the workflow to run, the request, and an optional budget and attributes. */
export interface CreateWorkItem {
  /** A workflow id (its latest version) or an exact reference. */
  workflow: string | WorkflowRef;
  /** The request: text, or A2A parts. */
  input: string | Part[];
  /** Limits of the item's cost and tokens, checked before every hop. */
  budget?: ItemBudget;
  /** Passed to user policies (`HopContext.attributes`). */
  attributes?: Record<string, string | number | boolean>;
  /** The stage the item starts at (default: the workflow's start stage): how a failed item is retried from a stage. */
  startStage?: string;
}

const PartsSchema = z.array(PartSchema).min(1).max(64);
const AttributesSchema = z.record(z.string().min(1).max(128), z.union([z.string().max(1024), z.number(), z.boolean()]));

/** What the work-item API is given: the parts it decides with, and what a committed step leads to (`after`). */
export interface CoordinatorItemsOptions {
  registry: WorkflowRegistry;
  governance: CoordinatorGovernance;
  engine: CoordinatorEngine;
  /** None where there is no broker (PostgreSQL without one): the rows are the A2A view. */
  mirror: BrokerMirror | undefined;
  traces: ItemTraces;
  ids: IdSource;
  streams: CoordinatorStreams;
  after: (step: Step) => Promise<void>;
  /** Throws `COORD_CLOSED` once the Coordinator closes. */
  assertOpen: () => void;
}

/**
 * The work-item API: a request checked, then decided and committed by the
 * engine (`createWorkItem`, `approve`, `deny`, `cancel`); what each commit
 * leads to is the Coordinator's `after`.
 */
export class CoordinatorItems {
  readonly #o: CoordinatorItemsOptions;

  constructor(options: CoordinatorItemsOptions) {
    this.#o = options;
  }

  async createWorkItem(request: CreateWorkItem): Promise<string> {
    this.#o.assertOpen();
    if (request === null || typeof request !== 'object') throw invalid('createWorkItem takes { workflow, input }');
    const { registry, governance, engine, mirror, streams } = this.#o;
    const def =
      typeof request.workflow === 'string'
        ? registry.latest(request.workflow)
        : request.workflow !== null && typeof request.workflow === 'object'
          ? registry.get(request.workflow)
          : undefined;
    if (def === undefined) {
      throw new CoordinatorError('COORD_UNKNOWN_WORKFLOW', `no workflow ${JSON.stringify(request.workflow)}`);
    }
    let input: Part[];
    if (typeof request.input === 'string') {
      if (request.input.length === 0 || request.input.length > 16_000)
        throw invalid('input text is 1 to 16000 characters');
      input = [{ kind: 'text', text: request.input }];
    } else {
      const parsed = PartsSchema.safeParse(request.input);
      if (!parsed.success) throw invalid(`input: ${parsed.error.issues[0]?.message ?? 'invalid parts'}`);
      input = parsed.data;
    }
    let budget: ItemBudget | null = null;
    if (request.budget !== undefined) {
      try {
        governance.budgetEntry(request.budget);
      } catch (error) {
        // A bad budget is this call's bad argument: the Coordinator's own refusal.
        if (error instanceof WorkflowError) throw invalid(error.message, error);
        throw error;
      }
      budget = {
        ...(request.budget.maxTokens === undefined ? {} : { maxTokens: request.budget.maxTokens }),
        ...(request.budget.maxCostUsd === undefined ? {} : { maxCostUsd: request.budget.maxCostUsd }),
        ...(request.budget.maxHops === undefined ? {} : { maxHops: request.budget.maxHops }),
      };
    }
    let attributes: Record<string, string | number | boolean> | null = null;
    if (request.attributes !== undefined) {
      const parsed = AttributesSchema.safeParse(request.attributes);
      if (!parsed.success) throw invalid(`attributes: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
      attributes = parsed.data;
    }
    const startStage = request.startStage;
    if (startStage !== undefined && (typeof startStage !== 'string' || !Object.hasOwn(def.stages, startStage))) {
      throw invalid(
        `no stage ${JSON.stringify(startStage)} in workflow ${def.id}@${def.version}: name one of ${Object.keys(def.stages).join(', ')}`,
      );
    }
    const itemId = this.#o.ids.next();
    // The item's broker task is made by the mirror after this commit (a failed commit leaves no task);
    // the call returns once it is there, so that `getItem(id)`'s `taskId` is set (if the broker fails, later).
    // The item's statuses wait for it too, so that they carry its id (`null` only if the broker failed).
    // Without a broker there is no task to wait for: the call returns once committed, `taskId` null.
    const { traces } = this.#o;
    const root = traces.begin(itemId, def);
    const trace = contextWith(ROOT_CONTEXT, root);
    streams.hold(itemId);
    let taskId: string | undefined;
    try {
      let step: Step;
      try {
        step = await engine.createItem({
          itemId,
          taskId: null,
          definition: def,
          input,
          budget,
          attributes,
          trace,
          ...(startStage === undefined ? {} : { startStage }),
        });
        traces.keep(itemId, trace, traceFieldsOf(trace));
      } catch (error) {
        endSpanWithError(root, error);
        throw error;
      }
      root.end();
      void this.#o.after(step);
      if (mirror !== undefined) taskId = await mirror.itemTask(itemId);
    } finally {
      streams.release(itemId, taskId);
    }
    return itemId;
  }

  async approve(itemId: string, approver: string): Promise<void> {
    this.#o.assertOpen();
    if (typeof approver !== 'string' || approver.length === 0 || approver.length > 128) {
      throw invalid('an approver is a name of 1 to 128 characters');
    }
    void this.#o.after(await this.#o.engine.approve(itemId, approver));
  }

  async deny(itemId: string, approver: string, reason?: string): Promise<void> {
    this.#o.assertOpen();
    if (typeof approver !== 'string' || approver.length === 0 || approver.length > 128) {
      throw invalid('an approver is a name of 1 to 128 characters');
    }
    if (reason !== undefined && (typeof reason !== 'string' || reason.length > 2000)) {
      throw invalid('a reason is at most 2000 characters');
    }
    void this.#o.after(await this.#o.engine.deny(itemId, approver, reason));
  }

  async cancel(itemId: string, options: { by?: string; reason?: string } = {}): Promise<void> {
    this.#o.assertOpen();
    const { by, reason } = options ?? {};
    if (by !== undefined && (typeof by !== 'string' || by.length === 0 || by.length > 256)) {
      throw invalid('who cancels is a name of 1 to 256 characters');
    }
    if (reason !== undefined && (typeof reason !== 'string' || reason.length === 0 || reason.length > 2000)) {
      throw invalid('a reason is 1 to 2000 characters');
    }
    void this.#o.after(await this.#o.engine.cancel(itemId, options.by ?? null, options.reason ?? null));
  }
}
