import {
  BRANCH_ATTRIBUTE,
  type CancelChildBody,
  PARENT_ATTRIBUTE,
  POSITION_ATTRIBUTE,
  type SettleBody,
  type SpawnBody,
} from '../../decisions/coordinator-decisions.js';
import type { Logger } from '../../log/logger.js';
import type { WorkflowDefinition } from '../../protocol/workflow.js';
import { type Context, type Span, contextWith, endSpanWithError, traceFieldsOf } from '../../telemetry/tracing.js';
import { type WorkflowRegistry, checkWorkflowDefinition } from '../../workflow/definition.js';
import { ZERO_RUN_USAGE } from '../../protocol/workflow.js';
import type { OutboxRow } from '../../workflow/records.js';
import type { ChildParams, CoordinatorEngine, Step } from './engine.js';
import type { InlineChild } from './inline-children.js';
import type { ItemTraces } from './item-traces.js';
import { CoordinatorError } from './types.js';

/** How many checked branch definitions are kept. */
const CHECKED_DEFINITIONS = 64;

/**
 * The Coordinator's own outbox rows for child work items, carried out after
 * the commit that wrote them: a child created (`spawn`), a parent told that
 * a child ended (`settle`), a child canceled (`cancel-child`). Each is
 * idempotent (a child's id is fixed by its parent, hop and branch; a parent
 * takes a branch's end once), so a row carried out again after a crash or a
 * takeover changes nothing the first did.
 */
export class ChildItems {
  readonly #engine: CoordinatorEngine;
  readonly #registry: WorkflowRegistry;
  readonly #traces: ItemTraces;
  readonly #log: Logger;
  readonly #after: (step: Step) => Promise<void>;
  /** Branch definitions checked already, by their JSON text (the oldest leaves first past the bound). */
  readonly #checked = new Map<string, WorkflowDefinition | string>();
  /** The same, by the definition object a spawn body carried. */
  readonly #checkedBy = new WeakMap<object, WorkflowDefinition | string>();

  constructor(options: {
    engine: CoordinatorEngine;
    registry: WorkflowRegistry;
    traces: ItemTraces;
    log: Logger;
    after: (step: Step) => Promise<void>;
  }) {
    this.#engine = options.engine;
    this.#registry = options.registry;
    this.#traces = options.traces;
    this.#log = options.log.child({ component: 'children' });
    this.#after = options.after;
  }

  /** Whether a row is one of these (not a publish on the bus). */
  handles(row: OutboxRow): boolean {
    return row.kind === 'spawn' || row.kind === 'settle' || row.kind === 'cancel-child';
  }

  /** Carries out one row; what its commit leads to follows without being waited for (it may publish rows itself). */
  async carryOut(row: OutboxRow): Promise<void> {
    if (row.kind === 'spawn') return this.#spawn(row.body as SpawnBody);
    if (row.kind === 'settle') return this.#settle(row.body as SettleBody);
    if (row.kind === 'cancel-child') return this.#cancel(row.body as CancelChildBody);
  }

  /**
   * A `spawn` row's child, for the engine to create in the commit of the
   * decision that wrote the row (`inline-children.ts`): its creation as
   * `#spawn` would ask for it, under the same span. Undefined when its
   * workflow cannot be found (the row, carried out, fails the branch).
   */
  prepareInline(body: SpawnBody): InlineChild | undefined {
    const definition = this.#definitionOf(body);
    if (typeof definition === 'string') return undefined;
    const { params, span, trace } = this.#creation(body, definition);
    return {
      params,
      trace,
      finish: (error?: unknown) => {
        if (error !== undefined) {
          endSpanWithError(span, error);
          return;
        }
        span.end();
        this.#traces.keep(body.childId, trace, traceFieldsOf(trace));
      },
    };
  }

  /** A child's creation, under a span of its own continuing its parent's trace. */
  #creation(body: SpawnBody, definition: WorkflowDefinition): { params: ChildParams; span: Span; trace: Context } {
    const branch = `${body.hop}:${body.branch}`;
    const span = this.#traces.begin(body.childId, definition, {
      ctx: this.#traces.of(body.parentId),
      itemId: body.parentId,
      branch,
    });
    const trace = contextWith(this.#traces.of(body.parentId), span);
    const params: ChildParams = {
      itemId: body.childId,
      parentId: body.parentId,
      hop: body.hop,
      branch: body.branch,
      definition,
      input: body.input,
      budget: body.budget,
      // A row from before positions were written has none: the engine reads it from the parent's join.
      attributes: {
        [PARENT_ATTRIBUTE]: body.parentId,
        [BRANCH_ATTRIBUTE]: branch,
        ...(body.position === undefined ? {} : { [POSITION_ATTRIBUTE]: body.position }),
      },
      deadline:
        body.deadlineAt === null
          ? null
          : { at: body.deadlineAt, ms: Math.max(1, body.deadlineAt - this.#engine.now()) },
      trace,
    };
    return { params, span, trace };
  }

  async #spawn(body: SpawnBody): Promise<void> {
    const definition = this.#definitionOf(body);
    if (typeof definition === 'string') {
      // A child that cannot run is a failed branch: its parent's join decides what follows.
      this.#log.error({ parentId: body.parentId, branch: body.branch, reason: definition }, 'a child cannot start');
      await this.#settle({
        parentId: body.parentId,
        childId: body.childId,
        hop: body.hop,
        branch: body.branch,
        outcome: 'failed',
        output: null,
        error: { type: 'UnknownWorkflow', message: definition },
        usage: { ...ZERO_RUN_USAGE },
      });
      return;
    }
    const { params, span, trace } = this.#creation(body, definition);
    let step: Step | undefined;
    try {
      step = await this.#engine.createChild(params);
    } catch (error) {
      endSpanWithError(span, error);
      throw error;
    }
    span.end();
    if (step === undefined) return;
    this.#traces.keep(body.childId, trace, traceFieldsOf(trace));
    void this.#after(step);
  }

  #definitionOf(body: SpawnBody): WorkflowDefinition | string {
    if (body.definition !== null) {
      // A map's elements carry the same definition (one object, made once by the decision; or equal texts, read
      // from outbox rows): checked once, not once per child.
      const same = this.#checkedBy.get(body.definition);
      if (same !== undefined) return same;
      const text = JSON.stringify(body.definition);
      const known = this.#checked.get(text);
      if (known !== undefined) {
        this.#checkedBy.set(body.definition, known);
        return known;
      }
      const check = checkWorkflowDefinition(body.definition);
      const checked = check.ok
        ? check.definition
        : `the branch's workflow is invalid: ${check.problems[0]?.message ?? 'unknown problem'}`;
      if (this.#checked.size >= CHECKED_DEFINITIONS) this.#checked.delete(this.#checked.keys().next().value!);
      this.#checked.set(text, checked);
      this.#checkedBy.set(body.definition, checked);
      return checked;
    }
    const at = body.workflow?.lastIndexOf('@') ?? -1;
    const def =
      body.workflow === null || at < 0
        ? undefined
        : this.#registry.get({ id: body.workflow.slice(0, at), version: Number(body.workflow.slice(at + 1)) });
    return def ?? `no workflow ${body.workflow} is loaded: load it (--workflows) before the one that runs it`;
  }

  async #settle(body: SettleBody): Promise<void> {
    const step = await this.#engine.settleChild(body);
    void this.#after(step);
  }

  async #cancel(body: CancelChildBody): Promise<void> {
    try {
      void this.#after(await this.#engine.cancel(body.childId, body.parentId, body.reason));
    } catch (error) {
      // Ended already, or never made (its parent let it go before it was): nothing to cancel.
      if (
        error instanceof CoordinatorError &&
        (error.code === 'COORD_ITEM_FINAL' || error.code === 'COORD_UNKNOWN_ITEM')
      ) {
        return;
      }
      throw error;
    }
  }
}
