import {
  type RunState,
  WORKFLOW_RUN_MACHINE_VERSION,
  persistRun,
  stepRun,
} from '../../machines/workflow-run-machine.js';
import { isFinalRunState } from '../../machines/workflow-run-transitions.js';
import type { AuditEntryInput, JsonObject } from '../../protocol/audit.js';
import type { ResultEnvelope } from '../../protocol/work-envelope.js';
import type { WorkflowRunEvent } from '../../protocol/workflow.js';
import type {
  AncestorRollup,
  HopRecord,
  ItemChanges,
  ItemEvent,
  ItemEventKind,
  ItemRecord,
  ItemState,
  TreeUsage,
} from '../../workflow/records.js';
import { type CancelChildBody, childItemId } from './child-rows.js';
import { addTreeUsage, treeRollup, withCharge } from './tree-rollup.js';
import type { Decision, DecisionEnv, DecisionRefusal, GovernanceCheck, ItemView, ResultHandling } from './types.js';

/**
 * The working copy every decision builds up (`Work`), and the decisions
 * that change nothing: unchanged, refused.
 */

export const COORDINATOR_ACTOR = 'coordinator';

/** Audit kinds that end a work item. */
const ITEM_END_KINDS: ReadonlySet<string> = new Set(['item-completed', 'item-failed', 'item-canceled']);

/** Drops `undefined` fields (audit rows are plain JSON); nested values are built without them. */
export function json(value: object): JsonObject {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(value)) {
    const v = (value as Record<string, unknown>)[k];
    if (v !== undefined) out[k] = v;
  }
  return out as JsonObject;
}

/** The working copy of one decision: the item's next state and what it writes, built up as it goes. */
export class Work {
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
  readonly governed: GovernanceCheck[] = [];
  readonly env: DecisionEnv;
  /** The stage hop result being applied: what the item's output keeps if it ends the run. */
  result: ResultEnvelope | undefined;

  /** A child's ancestors (parent first), with their subtree's live usage before this decision. */
  readonly ancestors: readonly AncestorRollup[];
  /** The item's own subtree usage, live, before this decision (undefined: not read). */
  readonly tree: TreeUsage | undefined;
  /** The run's hop number before this decision. */
  readonly hopBefore: number;
  /**
   * Run hops this decision took (a stage hop's first attempt dispatched, a
   * fan-out stage's hop that started children): counted into the rollup, as
   * the item's own hop count counts them (a hop denied or waiting for an
   * approval is not taken).
   */
  hopsTaken = 0;

  constructor(view: ItemView, env: DecisionEnv) {
    this.item = view.item;
    this.run = view.run;
    this.hops = new Map(view.hops);
    this.env = env;
    this.ancestors = view.ancestors ?? [];
    this.tree = view.tree;
    this.hopBefore = view.item.hop;
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
    if (refusal === null) {
      this.#cancelAbandoned();
      return true;
    }
    this.refused.push({ event: event.type, state: refusal.state, reason: refusal.reason });
    return false;
  }

  /** A `cancel-child` row for each child the last event left running (its join decided or abandoned). */
  #cancelAbandoned(): void {
    const cancel = this.run?.context.cancelChildren ?? null;
    if (cancel === null) return;
    for (const branch of cancel.branches) {
      const body: CancelChildBody = {
        parentId: this.item.id,
        childId: childItemId(this.item.id, cancel.hop, branch),
        reason: `its parent ${this.item.id} no longer waits for it (${this.run!.value})`,
      };
      this.outbox.push({ kind: 'cancel-child', body });
    }
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
    const rollup = treeRollup(this.item.id, this.ancestors, this.usage, this.hopsTaken);
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
      ...(rollup === null ? {} : { rollup }),
      ...extra,
    };
    const final = this.run !== null && isFinalRunState(this.run.value);
    const ancestors = rollup === null ? this.ancestors : this.ancestors.map((a) => withCharge(a, rollup));
    const tree = this.tree === undefined || rollup === null ? this.tree : addTreeUsage(this.tree, rollup);
    return {
      handling,
      view: {
        item: this.item,
        hops: this.hops,
        run: final ? null : this.run,
        ...(ancestors.length === 0 ? {} : { ancestors }),
        ...(tree === undefined ? {} : { tree }),
      },
      changes,
      events: this.events,
      runEvents: this.runEvents,
      governed: this.governed,
      refused: this.refused,
    };
  }
}

/** A decision that changes nothing. */
export function unchanged(view: ItemView | undefined, handling: ResultHandling): Decision {
  return { handling, view, changes: null, events: [], runEvents: [], governed: [], refused: [] };
}

/** A refused input: nothing changes. */
export function refused(view: ItemView | undefined, refusal: DecisionRefusal): Decision {
  return { ...unchanged(view, 'applied'), refusal };
}

/** The work of an input to a live item (an approval, a denial, a cancel), or its refusal: no such item, or it ended. */
export function liveWork(view: ItemView | undefined, env: DecisionEnv): Work | Decision {
  if (view === undefined) return refused(view, { code: 'COORD_UNKNOWN_ITEM', message: 'no such work item' });
  if (view.item.finishedAt !== null || view.run === null) {
    return refused(view, {
      code: 'COORD_ITEM_FINAL',
      message: `work item ${view.item.id} is ${view.item.state}`,
    });
  }
  return new Work(view, env);
}

/** An input the run refused (an approval, a denial, a cancel in a state that takes none): `COORD_APPROVAL_REFUSED`. */
export function refusedEvent(view: ItemView | undefined, work: Work, type: string): Decision {
  const r = work.run!.context.refusal!;
  return refused(view, {
    code: 'COORD_APPROVAL_REFUSED',
    message: `${type} refused in state ${r.state}: ${r.reason}`,
  });
}
