import { type Actor, createActor } from 'xstate';
import {
  type CoordinatorInput,
  type Decision,
  type DecisionEnv,
  type ItemView,
  type ResultHandling,
  decide,
  PARENT_ATTRIBUTE,
  POSITION_ATTRIBUTE,
  type SettleBody,
  ZERO_TREE_USAGE,
  timerDue,
  withCharge,
} from '../../decisions/coordinator-decisions.js';
import type { Logger } from '../../log/logger.js';
import {
  type RunState,
  WORKFLOW_RUN_MACHINE_VERSION,
  type WorkflowRunMachine,
  restoreRun,
  restoreWorkflowRun,
  workflowRunMachine,
} from '../../machines/workflow-run-machine.js';
import type { CoordinatorStore, StoredItem } from '../../persistence/coordinator/coordinator-store.js';
import type { Clock } from '../../persistence/kernel/clock.js';
import type { IdSource } from '../../persistence/kernel/ids.js';
import type { Part } from '../../protocol/parts.js';
import type { ResultEnvelope } from '../../protocol/work-envelope.js';
import type { WorkflowDefinition } from '../../protocol/workflow.js';
import type { WorkflowRegistry } from '../../workflow/definition.js';
import type {
  AncestorRollup,
  HopRecord,
  ItemBudget,
  ItemChanges,
  ItemRecord,
  OutboxRow,
} from '../../workflow/records.js';
import { type Context, ROOT_CONTEXT } from '../../telemetry/tracing.js';
import { branchPosition, branchRunning } from '../../machines/workflow-run-join.js';
import type { RunJoin } from '../../machines/workflow-run-join-shapes.js';
import type { ActorInspector } from '../inspection.js';
import { runDeadline } from '../../machines/workflow-run-transitions.js';
import { DecisionSpans } from './decision-spans.js';
import type { CoordinatorGovernance } from './policies.js';
import { CoordinatorError, type ItemStatus, statusOf } from './types.js';
import { TurnCpu } from './turn-cpu.js';
import type { ChildParams, Step } from './engine-step.js';
import {
  type InlineChild,
  type InlineChildren,
  freshSpawns,
  inlineAncestors,
  settlesOf,
  settlingView,
  withStep,
  withoutRows,
} from './inline-children.js';
import { type Ancestor, ItemLineage } from './item-lineage.js';

export type { ChildParams, Step } from './engine-step.js';

export { hopKey } from '../../decisions/coordinator-decisions.js';
export type { ResultHandling } from '../../decisions/coordinator-decisions.js';

/**
 * The Coordinator's committer: the small effectful part around the pure
 * decisions (`src/decisions/coordinator-decisions.ts`). It holds the live
 * items in memory (each one's row, hops and run), hands every input to
 * `decide`, commits the decided changes through the `CoordinatorStore` (a
 * batch of results shares one commit) and only then takes the new state into
 * memory and hands back what to publish and tell. A commit that fails changes
 * nothing, in the tables or in memory: there is nothing to roll back.
 * Decisions are serialized: one runs (decide, commit, take) at a time.
 */

/** What a timed commit did. */
export type TimedStep = 'create' | 'result' | 'decision';

/**
 * One commit's timing: its wall time (deciding, the store's commit call, and
 * taking the new state; not the wait for the commit's Promise to settle), the
 * decisions' part of it, the process's CPU time over its synchronous
 * stretches (not over its awaits, when the process runs other work), and
 * how many steps shared it (each figure is one step's share).
 */
export type CommitObserver = (ns: number, what: TimedStep, innerNs: number, cpuUs: number, batch: number) => void;

export interface EngineOptions {
  store: CoordinatorStore;
  registry: WorkflowRegistry;
  governance: CoordinatorGovernance;
  clock: Clock;
  ids: IdSource;
  logger: Logger;
  /** The default hop timeout (ms) of hops whose stage sets none; `0`: none (`CoordinatorOptions.hopTimeoutMs`). */
  hopTimeoutMs: number;
  /** An inspector (`--inspect`): each work item's WorkflowRun then also runs as a live root actor it sees. */
  inspect?: ActorInspector | undefined;
  /** Each item's trace context (default: none, every decision span is a root). */
  traces?: { of(itemId: string): Context } | undefined;
}

/**
 * A hop result to apply, with the context its decision span continues and
 * when the bus says it was published (the hop's time ends there).
 */
export interface AppliedResult {
  result: ResultEnvelope;
  trace?: Context;
  publishedAt?: number;
}

/** One input to decide, with the context its decision span continues (default: the item's). */
interface Input {
  view: ItemView | undefined;
  input: CoordinatorInput;
  trace?: Context | undefined;
}

/** A child's creation or end, waiting for its turn. */
type ChildCall = { kind: 'create'; params: ChildParams } | { kind: 'settle'; settle: SettleBody };

/** Children's calls that share one turn, and whether another decision was queued since (`queuedAt`). */
interface ChildGroup {
  queuedAt: number;
  calls: { call: ChildCall; resolve: (step: Step | undefined) => void; reject: (error: unknown) => void }[];
}

/** A step that changed nothing. */
function emptyStep(): Step {
  return { events: [], items: new Map(), outbox: [], rows: [], trace: ROOT_CONTEXT };
}

export class CoordinatorEngine {
  readonly #store: CoordinatorStore;
  readonly #registry: WorkflowRegistry;
  readonly #governance: CoordinatorGovernance;
  readonly #clock: Clock;
  readonly #ids: IdSource;
  readonly #hopTimeoutMs: number;
  readonly #log: Logger;
  readonly #inspect: ActorInspector | undefined;
  /** The decisions' spans, told what decide-and-commit does. */
  readonly #spans: DecisionSpans;
  /** The live items: what the decisions start from. */
  readonly #live = new Map<string, ItemView>();
  /** With an inspector: one live actor per run, fed the events the run took once committed. */
  readonly #shown = new Map<string, Actor<WorkflowRunMachine>>();
  /** Each ancestor's budget and parent (facts that never change), read once: a child's hops are governed against them. */
  readonly #lineage: ItemLineage;
  /** Definitions already kept in the tables (run snapshots refer to them). */
  readonly #kept = new Set<string>();
  /** Outbox rows published since the last commit: deleted by the next one. */
  #published: number[] = [];
  /** The decision running now: the next waits for it. */
  #turn: Promise<unknown> = Promise.resolve();
  /** How many decisions were queued so far (a waiting group of results is joined only while none came after it). */
  #queued = 0;
  /** Results waiting for their turn, joined by results that arrive meanwhile: one decision and commit for all. */
  #waitingResults:
    | {
        queuedAt: number;
        calls: {
          batch: readonly AppliedResult[];
          resolve: (outcomes: ({ step: Step; handling: ResultHandling } | { error: unknown })[]) => void;
          reject: (error: unknown) => void;
        }[];
      }
    | undefined;
  /** Children's creations and ends waiting for their turn, joined by those that arrive meanwhile (see `#childTurn`). */
  #waitingChildren: ChildGroup | undefined;
  /** Nanoseconds spent deciding and committing, and how many steps. */
  readonly timing = { ns: 0n, count: 0 };
  /** Set by `observeCommits` (the bench and tests); not an option. */
  observer: CommitObserver | undefined;
  /** Set by the Coordinator: children a decision starts are created, and a child's end settled, in its commit (`inline-children.ts`). */
  inlineChildren: InlineChildren | undefined;

  constructor(options: EngineOptions) {
    this.#store = options.store;
    this.#lineage = new ItemLineage({
      live: (id) => this.#live.get(id)?.item,
      load: async (id) => (await this.#store.loadItem(id))?.item,
    });
    this.#registry = options.registry;
    this.#governance = options.governance;
    this.#clock = options.clock;
    this.#ids = options.ids;
    this.#hopTimeoutMs = options.hopTimeoutMs;
    this.#log = options.logger;
    this.#inspect = options.inspect;
    this.#spans = new DecisionSpans(options.traces);
  }

  get liveRuns(): number {
    return this.#live.size;
  }

  /** A live item as last committed (undefined once it ended, or unknown). */
  liveItem(itemId: string): ItemRecord | undefined {
    return this.#live.get(itemId)?.item;
  }

  /** The live items as last committed, oldest first. */
  liveItems(): ItemRecord[] {
    return [...this.#live.values()]
      .map((v) => v.item)
      .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** Loads every live item and its run. Returns the items it could not restore. */
  async restore(): Promise<{ restored: string[]; refused: { itemId: string; reason: string }[] }> {
    const restored: string[] = [];
    const refused: { itemId: string; reason: string }[] = [];
    for (const stored of await this.#store.loadLive()) {
      const itemId = stored.item.id;
      const saved = stored.run;
      if (saved === undefined) {
        refused.push({ itemId, reason: 'no run snapshot' });
        continue;
      }
      if (saved.machineVersion !== WORKFLOW_RUN_MACHINE_VERSION) {
        refused.push({
          itemId,
          reason: `run snapshot of machine version ${saved.machineVersion}, this code runs ${WORKFLOW_RUN_MACHINE_VERSION}`,
        });
        continue;
      }
      try {
        const persisted = withItemBounds(await this.#withDefinition(saved.snapshot, stored.item.workflow), stored.item);
        const run = restoreRun(persisted);
        this.#live.set(itemId, viewOf(stored, run));
        if (this.#inspect !== undefined) {
          const actor = restoreWorkflowRun(persisted, { inspect: this.#inspect });
          actor.start();
          this.#shown.set(itemId, actor);
        }
        restored.push(itemId);
      } catch (error) {
        refused.push({ itemId, reason: (error as Error).message });
      }
    }
    return { restored, refused };
  }

  /** Outbox rows now (after a restart: what a crash may have left unpublished). */
  outbox(): Promise<OutboxRow[]> {
    return this.#store.loadOutbox();
  }

  /** Marks outbox rows as published: the next commit deletes them. */
  published(ids: readonly number[]): void {
    this.#published.push(...ids);
  }

  /** Deletes published outbox rows now (on close). */
  async flushPublished(): Promise<void> {
    if (this.#published.length === 0) return;
    const ids = this.#published;
    this.#published = [];
    await this.#store.commit({ changes: [], deleteOutbox: ids });
  }

  /** A stored run snapshot refers to its definition (kept once per version); put it back in the context. */
  async #withDefinition(snapshot: unknown, ref: { id: string; version: number }): Promise<unknown> {
    const snap = snapshot as { context?: { definition?: unknown } };
    if (snap?.context === undefined || (snap.context.definition !== null && snap.context.definition !== undefined)) {
      return snapshot;
    }
    const definition = (await this.#store.loadDefinition(ref)) ?? this.#registry.get(ref);
    return { ...snap, context: { ...snap.context, definition } };
  }

  /** The Coordinator's clock now (ms since the epoch). */
  now(): number {
    return this.#clock.now();
  }

  #env(): DecisionEnv {
    return {
      now: this.#clock.now(),
      nextId: () => this.#ids.next(),
      governance: this.#governance,
      hopTimeoutMs: this.#hopTimeoutMs,
    };
  }

  /** Runs `fn` when the decision before it is done (decisions never interleave). */
  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    this.#queued += 1;
    const run = this.#turn.then(fn, fn);
    this.#turn = run.catch(() => undefined);
    return run;
  }

  // --------------------------------------------------------------- commands

  /** Creates a work item and drives it to its first hop (its broker task is made by the mirror, after the commit). */
  createItem(params: {
    itemId: string;
    taskId: string | null;
    definition: WorkflowDefinition;
    input: Part[];
    budget: ItemBudget | null;
    attributes: Record<string, string | number | boolean> | null;
    /** The item's root span context: the decision's span continues it. */
    trace?: Context;
    /** The stage the run starts at (default: the definition's start). */
    startStage?: string;
  }): Promise<Step> {
    const { definition, trace, ...rest } = params;
    const defKey = `${definition.id}@${definition.version}`;
    return this.#exclusive(async () => {
      const input: CoordinatorInput = { kind: 'create', definition, ...rest, keepDefinition: !this.#kept.has(defKey) };
      const [done] = await this.#decideAndCommit('create', [{ view: undefined, input, trace }]);
      this.#kept.add(defKey);
      return done!.step;
    });
  }

  /**
   * The item's broker task, made (or found) by the mirror after the item's
   * creation commit and kept in the item's row: the mirror hands its id back
   * here once it is committed there, and the live record takes it, so every
   * status and row from here on carries it (a decision decided before it and
   * committed after it takes it too). Statuses emitted before it say
   * `taskId: null`: the task did not exist yet.
   */
  itemTask(itemId: string, taskId: string): void {
    const view = this.#live.get(itemId);
    if (view === undefined || view.item.taskId !== null) return;
    this.#live.set(itemId, { ...view, item: { ...view.item, taskId } });
  }

  /** Applies one hop result, once (a result already handled is a no-op). */
  async applyResult(result: ResultEnvelope): Promise<{ step: Step; handling: ResultHandling }> {
    const [done] = await this.applyResults([{ result }]);
    if ('error' in done!) throw done.error;
    return done!;
  }

  /**
   * Applies hop results that arrived together in ONE commit (one transaction
   * and one audit append for all). If the commit fails, nothing of the batch
   * stays (memory is only taken after a commit) and each result is applied
   * again alone, so one that fails fails alone (its entry is `{ error }`) and
   * the rest commit.
   */
  applyResults(
    batch: readonly AppliedResult[],
  ): Promise<({ step: Step; handling: ResultHandling } | { error: unknown })[]> {
    return new Promise((resolve, reject) => {
      // Results arriving while a decision runs (a commit in flight: long on a network store) wait for
      // the next turn together, and are decided and committed together, unless another decision was
      // queued after them (it keeps its place).
      const waiting = this.#waitingResults;
      if (waiting !== undefined && waiting.queuedAt === this.#queued) {
        waiting.calls.push({ batch, resolve, reject });
        return;
      }
      const group = { queuedAt: 0, calls: [{ batch, resolve, reject }] };
      this.#waitingResults = group;
      this.#applyNow(() => {
        if (this.#waitingResults === group) this.#waitingResults = undefined;
        return group.calls.flatMap((c) => c.batch);
      }).then(
        (outcomes) => {
          let at = 0;
          for (const call of group.calls) {
            call.resolve(outcomes.slice(at, at + call.batch.length));
            at += call.batch.length;
          }
        },
        (error: unknown) => {
          for (const call of group.calls) call.reject(error);
        },
      );
      group.queuedAt = this.#queued;
    });
  }

  /** Applies the results `take` hands over when their turn comes (see `applyResults`). */
  #applyNow(
    take: () => readonly AppliedResult[],
  ): Promise<({ step: Step; handling: ResultHandling } | { error: unknown })[]> {
    return this.#exclusive(async () => {
      const batch = take();
      const inputs = async () => {
        const out: (Input & { itemId: string })[] = [];
        for (const { result, trace, publishedAt } of batch) {
          const itemId = result.headers.runId;
          const input: CoordinatorInput = {
            kind: 'result',
            result,
            ...(publishedAt === undefined ? {} : { publishedAt }),
          };
          out.push({ view: await this.#view(itemId), input, itemId, trace });
        }
        return out;
      };
      if (batch.length > 1) {
        try {
          return await this.#decideAndCommit('result', await inputs());
        } catch (error) {
          this.#log.warn(
            { err: error, results: batch.length },
            'a shared commit failed: applying its results one by one',
          );
        }
      }
      const alone: ({ step: Step; handling: ResultHandling } | { error: unknown })[] = [];
      for (const one of await inputs()) {
        try {
          const [done] = await this.#decideAndCommit('result', [{ ...one, view: await this.#view(one.itemId) }]);
          alone.push(done!);
        } catch (error) {
          alone.push({ error });
        }
      }
      return alone;
    });
  }

  /**
   * Time passed: a timer input for every live item past its deadline or with
   * a hop (or query) out past its timeout (its stage's, or the default hop
   * timeout), all decided and committed together. Which items are due is a
   * look at their rows (`timerDue`): the others cost no decision. Resolves
   * with the steps that changed something.
   */
  tick(): Promise<Step[]> {
    return this.#exclusive(async () => {
      const inputs: Input[] = [];
      const now = this.#clock.now();
      for (const view of this.#live.values()) {
        // A child's deadline may be its parent's, inherited (in its run's context): its own definition need set none.
        if (timerDue(view, now, this.#hopTimeoutMs)) inputs.push({ view, input: { kind: 'timer' } });
      }
      if (inputs.length === 0) return [];
      const done = await this.#decideAndCommit('decision', inputs);
      return done.map((d) => d.step).filter((s) => s.events.length > 0 || s.outbox.length > 0);
    });
  }

  /**
   * The bus lost its state: a reconcile input for every live item (every hop
   * it has out published again under its own key), all decided and committed
   * together. Resolves with the steps that publish something.
   */
  reconcile(reason: string): Promise<Step[]> {
    return this.#exclusive(async () => {
      const inputs: Input[] = [];
      for (const view of this.#live.values()) {
        if (view.run !== null) inputs.push({ view, input: { kind: 'reconcile', reason } });
      }
      if (inputs.length === 0) return [];
      const done = await this.#decideAndCommit('decision', inputs);
      return done.map((d) => d.step).filter((s) => s.outbox.length > 0);
    });
  }

  /**
   * Creates a child work item a parent's stage asked for (a `spawn` outbox
   * row), once: a child that exists already, or one its parent no longer
   * waits for (the join decided, the parent ended), is not created, and the
   * answer is `undefined`. Checked and created in one turn, so that a parent's
   * decision that abandons the branch comes before or after it, never between.
   * Children's creations and ends that arrive together share a turn and a
   * commit (see `#childTurn`).
   */
  createChild(params: ChildParams): Promise<Step | undefined> {
    return this.#childTurn({ kind: 'create', params });
  }

  /** A child's end, told to its parent (a `settle` outbox row): applied once; a parent that ended takes nothing. */
  async settleChild(settle: SettleBody): Promise<Step> {
    return (await this.#childTurn({ kind: 'settle', settle })) ?? emptyStep();
  }

  /**
   * Children's creations and ends arriving while a decision runs (the rows of
   * one commit are carried out together) wait for the next turn together, and
   * are decided and committed together, unless another decision was queued
   * after them (it keeps its place): a parent whose children settled together
   * writes its row once. If the shared commit fails, each is decided again
   * alone, so one that fails fails alone.
   */
  #childTurn(call: ChildCall): Promise<Step | undefined> {
    return new Promise((resolve, reject) => {
      const waiting = this.#waitingChildren;
      // Creations share a turn too: siblings made in one commit keep their order by the
      // position each carries (`switchboard.position`), not by when they were made.
      if (waiting !== undefined && waiting.queuedAt === this.#queued) {
        waiting.calls.push({ call, resolve, reject });
        return;
      }
      const group: ChildGroup = { queuedAt: 0, calls: [{ call, resolve, reject }] };
      this.#waitingChildren = group;
      this.#exclusive(async () => {
        if (this.#waitingChildren === group) this.#waitingChildren = undefined;
        return this.#childrenNow(group.calls.map((c) => c.call));
      }).then(
        (outcomes) => {
          for (const [i, c] of group.calls.entries()) {
            const outcome = outcomes[i]!;
            if ('error' in outcome) c.reject(outcome.error);
            else c.resolve(outcome.step);
          }
        },
        (error: unknown) => {
          for (const c of group.calls) c.reject(error);
        },
      );
      group.queuedAt = this.#queued;
    });
  }

  /** Decides and commits children's creations and ends in one commit; each alone if that fails. */
  async #childrenNow(calls: readonly ChildCall[]): Promise<({ step: Step | undefined } | { error: unknown })[]> {
    if (calls.length > 1) {
      try {
        return await this.#childrenTogether(calls);
      } catch (error) {
        this.#log.warn({ err: error, inputs: calls.length }, 'a shared commit failed: deciding its inputs one by one');
      }
    }
    const alone: ({ step: Step | undefined } | { error: unknown })[] = [];
    for (const call of calls) {
      try {
        alone.push({ step: await this.#childrenTogether([call]).then((o) => o[0]!.step) });
      } catch (error) {
        alone.push({ error });
      }
    }
    return alone;
  }

  /**
   * The creations first, each checked against the state before them (a
   * child that exists, or one whose parent no longer waits for it, is not
   * created: `undefined`), then the ends in the order they came (a parent
   * that is not known takes nothing: an empty step): as if the creations
   * had had a turn of their own just before.
   */
  async #childrenTogether(calls: readonly ChildCall[]): Promise<{ step: Step | undefined }[]> {
    const out: { step: Step | undefined }[] = calls.map(() => ({ step: undefined }));
    const inputs: Input[] = [];
    const at: number[] = [];
    const creating = new Set<string>();
    const keeping = new Set<string>();
    for (const [i, call] of calls.entries()) {
      if (call.kind !== 'create') continue;
      const { definition, trace, parentId, hop, branch, ...rest } = call.params;
      if (creating.has(rest.itemId) || (await this.#view(rest.itemId)) !== undefined) continue;
      const join = this.#live.get(parentId)?.run?.context.join ?? null;
      if (!branchRunning(join, hop, branch)) continue;
      const defKey = `${definition.id}@${definition.version}`;
      const input: CoordinatorInput = {
        kind: 'create',
        definition,
        ...rest,
        attributes: withPosition(rest.attributes, join, branch),
        taskId: null,
        keepDefinition: !this.#kept.has(defKey) && !keeping.has(defKey),
      };
      creating.add(rest.itemId);
      keeping.add(defKey);
      inputs.push({ view: undefined, input, trace });
      at.push(i);
    }
    for (const [i, call] of calls.entries()) {
      if (call.kind !== 'settle') continue;
      const view = await this.#view(call.settle.parentId);
      if (view === undefined) {
        out[i] = { step: emptyStep() };
        continue;
      }
      inputs.push({ view, input: { kind: 'child', settle: call.settle } });
      at.push(i);
    }
    if (inputs.length === 0) return out;
    const what = calls.every((c) => c.kind === 'create') ? 'create' : 'decision';
    const done = await this.#decideAndCommit(what, inputs);
    for (const key of keeping) this.#kept.add(key);
    for (const [k, d] of done.entries()) out[at[k]!] = { step: d.step };
    return out;
  }

  approve(itemId: string, approver: string): Promise<Step> {
    return this.#command(itemId, { kind: 'approve', approver });
  }

  deny(itemId: string, approver: string, reason?: string): Promise<Step> {
    return this.#command(itemId, { kind: 'deny', approver, ...(reason === undefined ? {} : { reason }) });
  }

  cancel(itemId: string, by: string | null, reason: string | null): Promise<Step> {
    return this.#command(itemId, { kind: 'cancel', by, reason });
  }

  #command(itemId: string, input: CoordinatorInput): Promise<Step> {
    return this.#exclusive(async () => {
      const view = await this.#view(itemId);
      if (view === undefined) throw new CoordinatorError('COORD_UNKNOWN_ITEM', `no work item ${itemId}`);
      const [done] = await this.#decideAndCommit('decision', [{ view, input }]);
      return done!.step;
    });
  }

  /** A live item from memory; an ended one (a late result) from the store. */
  async #view(itemId: string): Promise<ItemView | undefined> {
    const live = this.#live.get(itemId);
    if (live !== undefined) return live;
    const stored = await this.#store.loadItem(itemId);
    return stored === undefined ? undefined : viewOf(stored, null);
  }

  /**
   * Decides each input in order (a later one sees the state an earlier one
   * left), commits all their changes in one batch, then takes the new states
   * into memory. A refusal throws (nothing committed) when it is alone.
   */
  async #decideAndCommit(
    what: TimedStep,
    inputs: readonly Input[],
  ): Promise<{ step: Step; handling: ResultHandling }[]> {
    const observe = this.observer !== undefined;
    const cpu = observe ? new TurnCpu() : undefined;
    const start = process.hrtime.bigint();
    const overlay = new Map<string, ItemView | undefined>();
    const decisions: Decision[] = [];
    // A child's ancestors (parent first), and each budgeted item's own subtree, with their live usage (one read
    // for the batch): its hops are governed against them, its charges added to them.
    const chains = new Map<string, { id: string; budget: ItemBudget | null }[]>();
    const own = new Map<string, ItemBudget>();
    for (const { view, input } of inputs) {
      const id = idOf(view, input);
      if (id === undefined) continue;
      const attributes = input.kind === 'create' ? input.attributes : view?.item.attributes;
      const parent = attributes?.[PARENT_ATTRIBUTE];
      if (typeof parent === 'string' && !chains.has(id)) {
        let chain = this.#lineage.chainNow(parent);
        if (chain === undefined) {
          cpu?.pause();
          chain = await this.#lineage.chain(parent);
          cpu?.resume();
        }
        chains.set(id, chain);
      }
      // A new item has no subtree yet; an ended one starts no hop.
      const budget = input.kind === 'create' ? null : (view?.item.budget ?? null);
      if (budget !== null && view!.item.finishedAt === null) own.set(id, budget);
    }
    // Each as the batch's decisions so far left it: a later decision sees what an earlier one charged to an
    // item they share (all were read before the batch).
    const charged = new Map<string, AncestorRollup>();
    for (const [id, budget] of own) charged.set(id, { id, budget, tree: ZERO_TREE_USAGE });
    for (const chain of chains.values()) {
      for (const a of chain) if (!charged.has(a.id)) charged.set(a.id, { ...a, tree: ZERO_TREE_USAGE });
    }
    if (charged.size > 0) {
      cpu?.pause();
      const trees = await this.#store.loadTreeUsage([...charged.keys()]);
      cpu?.resume();
      for (const [id, a] of charged) {
        const tree = trees.get(id);
        if (tree !== undefined) charged.set(id, { ...a, tree });
      }
    }
    const spans = this.#spans;
    spans.begin();
    // Which input each decision is for (a child created in its parent's commit is its parent's input's).
    const owners: number[] = [];
    const inline: InlineChild[] = [];
    // Definitions this batch keeps already (a create input's, then an inline child's).
    const keeping = new Set<string>();
    for (const { input } of inputs) {
      if (input.kind === 'create' && input.keepDefinition)
        keeping.add(`${input.definition.id}@${input.definition.version}`);
    }
    const failInline = (error: unknown) => {
      for (const child of inline.splice(0)) child.finish(error);
    };
    // A later decision of the batch sees what an earlier one charged to the ancestors it shares.
    const charge = (decision: Decision) => {
      const rollup = decision.changes?.rollup;
      if (rollup === undefined) return;
      for (const itemId of rollup.itemIds) {
        const a = charged.get(itemId);
        if (a !== undefined) charged.set(itemId, withCharge(a, rollup));
      }
    };
    /** Decides one input of the batch for input `k` (the item's state as the batch left it), and keeps it. */
    const decideOne = (
      current: ItemView | undefined,
      input: CoordinatorInput,
      id: string | undefined,
      trace: Context | undefined,
      k: number,
    ): Decision => {
      spans.deciding(input, id, trace);
      let decision: Decision;
      try {
        decision = decide(current, input, this.#env());
      } catch (error) {
        spans.failed(error);
        failInline(error);
        throw error;
      }
      // One span per policy of each cascade the decision ran, under the decision's span.
      for (const g of decision.governed) spans.governed(g.ctx, g.decision);
      spans.decided(input, id, decision);
      if (decision.refusal !== undefined) {
        const refusal = new CoordinatorError(decision.refusal.code, decision.refusal.message);
        spans.failed(refusal);
        failInline(refusal);
        throw refusal;
      }
      for (const r of decision.refused) {
        this.#log.warn({ itemId: id, event: r.event, refusal: r }, 'the run refused an event');
      }
      if (decision.handling === 'unknown' && input.kind === 'result') {
        this.#log.warn({ taskId: input.result.headers.taskId }, 'a result for an unknown hop or query: ignored');
      }
      if (id !== undefined) overlay.set(id, decision.view);
      decisions.push(decision);
      owners.push(k);
      charge(decision);
      return decision;
    };
    /**
     * What a decision leads to that this batch can decide too (see
     * `inline-children.ts`): the children it started, created; its item's
     * end, settled in its parent while the parent is live; and what those
     * lead to in turn. Their rows are then not written.
     */
    const follow = (id: string, before: ItemView | undefined, at: number, k: number): void => {
      if (this.inlineChildren === undefined) return;
      const decision = decisions[at]!;
      const done = new Set<unknown>();
      for (const body of freshSpawns(before, decision)) {
        const ancestors = inlineAncestors(body.parentId, decision, chains, charged);
        if (ancestors === undefined) continue;
        const child = this.inlineChildren(body);
        if (child === undefined) continue;
        inline.push(child);
        const { trace: _trace, parentId: _parent, hop: _hop, branch: _branch, definition, ...rest } = child.params;
        const defKey = `${definition.id}@${definition.version}`;
        const createInput: CoordinatorInput = {
          kind: 'create',
          definition,
          ...rest,
          taskId: null,
          keepDefinition: !this.#kept.has(defKey) && !keeping.has(defKey),
          ancestors,
        };
        keeping.add(defKey);
        const childId = rest.itemId;
        chains.set(childId, ancestors);
        decideOne(undefined, createInput, childId, child.trace, k);
        done.add(body);
        follow(childId, undefined, decisions.length - 1, k);
      }
      // A child's end is settled in its parent once the batch has no more ends for it (`settleInParents`).
      for (const body of settlesOf(decision)) {
        const chain = chains.get(id);
        if (chain === undefined) continue;
        const group = settling.get(body.parentId);
        if (group === undefined) settling.set(body.parentId, { chain, ends: [{ body, at }], k });
        else group.ends.push({ body, at });
      }
      if (done.size > 0) decisions[at] = withoutRows(decisions[at]!, done);
    };
    /**
     * The ends this batch decided, settled in their parents while the parents are live: each parent's in
     * one decision (what they start is written once). Before an input for one of those parents, and after
     * the last input, so that a parent takes its children's ends in the order a decision per end would.
     */
    const settling = new Map<
      string,
      { chain: readonly Ancestor[]; ends: { body: SettleBody; at: number }[]; k: number }
    >();
    const settleInParents = (only?: string): void => {
      while (settling.size > 0) {
        const parent = only ?? settling.keys().next().value!;
        const group = settling.get(parent);
        if (group === undefined) return;
        settling.delete(parent);
        const state = overlay.has(parent) ? overlay.get(parent) : this.#live.get(parent);
        const view = settlingView(state, parent, group.chain, charged);
        if (view === undefined) continue;
        const [first, ...rest] = group.ends.map((e) => e.body);
        const input: CoordinatorInput = {
          kind: 'child',
          settle: first!,
          ...(rest.length === 0 ? {} : { siblings: rest }),
        };
        decideOne(view.view, input, parent, undefined, group.k);
        if (!chains.has(parent)) chains.set(parent, view.chain);
        // The rows the parent's decision carried out are not written.
        for (const { body, at } of group.ends) decisions[at] = withoutRows(decisions[at]!, new Set([body]));
        follow(parent, view.view, decisions.length - 1, group.k);
        if (only !== undefined) return;
      }
    };
    for (const [k, { view, input: given, trace }] of inputs.entries()) {
      const id = idOf(view, given);
      const ancestors = id === undefined ? undefined : chains.get(id)?.map((a) => charged.get(a.id)!);
      const tree = id !== undefined && own.has(id) ? charged.get(id)!.tree : undefined;
      let current = id !== undefined && overlay.has(id) ? overlay.get(id) : view;
      let input = given;
      if (ancestors !== undefined) {
        if (input.kind === 'create') input = { ...input, ancestors };
        else if (current !== undefined) current = { ...current, ancestors };
      }
      if (tree !== undefined && current !== undefined) current = { ...current, tree };
      // Ends this batch settles in this item go first, as they came before this input.
      if (id !== undefined && settling.has(id)) {
        settleInParents(id);
        current = overlay.has(id) ? overlay.get(id) : current;
        if (current !== undefined && ancestors !== undefined) current = { ...current, ancestors };
        if (tree !== undefined && current !== undefined) current = { ...current, tree: charged.get(id)!.tree };
      }
      decideOne(current, input, id, trace, k);
      if (id !== undefined) follow(id, current, decisions.length - 1, k);
    }
    settleInParents();
    const innerNs = process.hrtime.bigint() - start;
    const changes = decisions.flatMap((d) => (d.changes === null ? [] : [d.changes]));
    // Published outbox rows are deleted in bulk (a few pages every 64 publishes, not a statement per commit).
    const deleting = this.#published.length >= 64 ? this.#published : [];
    if (deleting.length > 0) this.#published = [];
    let committed: OutboxRow[][] = [];
    // The work is timed up to the return of the store's commit call (the embedded store commits
    // inside it): the wait for its Promise to settle is the event loop's queue, not the Coordinator's.
    let workNs = process.hrtime.bigint() - start;
    if (changes.length > 0 || deleting.length > 0) {
      try {
        const pending = this.#store.commit({ changes, deleteOutbox: deleting });
        workNs = process.hrtime.bigint() - start;
        cpu?.pause();
        committed = (await pending).outbox;
        cpu?.resume();
      } catch (error) {
        this.#published.unshift(...deleting);
        spans.failed(error);
        failInline(error);
        throw error;
      }
    } else if (what === 'result') {
      // Nothing to commit, so no commit's fence: the store is asked whether this Coordinator still leads before
      // the results are acked (a replaced leader's memory would drop a result its successor is waiting for).
      try {
        cpu?.pause();
        await this.#store.checkFence?.();
        cpu?.resume();
      } catch (error) {
        spans.failed(error);
        throw error;
      }
    }
    const taken = process.hrtime.bigint();
    // Committed: memory takes the new states.
    for (const child of inline) child.finish();
    for (const key of keeping) this.#kept.add(key);
    let c = 0;
    const steps = decisions.map((d, i) => {
      const step: Step = { events: d.events, items: new Map(), outbox: [], rows: [], trace: spans.committed(i) };
      if (d.changes !== null) {
        step.outbox = committed[c++] ?? [];
        const taken = this.#withItemTask(d);
        const item = taken.view?.item.id === d.changes.itemId ? taken.view.item : d.changes.item;
        step.items.set(d.changes.itemId, item);
        step.rows.push({ item, hops: d.changes.hops.map((h) => h.hop), created: d.changes.created });
        this.#take(d.changes, taken);
      }
      return { step, handling: d.handling };
    });
    // One step per input: a child created in its parent's commit is part of its parent's input's step.
    const out: { step: Step; handling: ResultHandling }[] = [];
    for (const [i, s] of steps.entries()) {
      const k = owners[i]!;
      const first = out[k];
      if (first === undefined) out[k] = s;
      else withStep(first.step, s.step);
    }
    const ns = workNs + (process.hrtime.bigint() - taken);
    this.timing.ns += ns;
    this.timing.count += inputs.length;
    if (cpu !== undefined) {
      const used = cpu.total();
      const n = inputs.length;
      for (let i = 0; i < n; i++) {
        this.observer?.(Number(ns) / n, what, Number(innerNs) / n, used / n, n);
      }
    }
    return out;
  }

  /**
   * The decisions copy the item's task id from the state they start from: one
   * decided before the mirror handed the id back (`itemTask`) takes it from
   * the live record now.
   */
  #withItemTask(d: Decision): Decision {
    const view = d.view;
    if (view === undefined || view.item.taskId !== null) return d;
    const taskId = this.#live.get(view.item.id)?.item.taskId ?? null;
    if (taskId === null) return d;
    return { ...d, view: { ...view, item: { ...view.item, taskId } } };
  }

  /** Takes a committed decision's state into memory (an ended item leaves it) and shows it to the inspector. */
  #take(changes: ItemChanges, decision: Decision): void {
    const id = changes.itemId;
    const view = decision.view;
    if (view !== undefined && view.run !== null && view.item.finishedAt === null) this.#live.set(id, view);
    else this.#live.delete(id);
    if (this.#inspect === undefined) return;
    let actor = this.#shown.get(id);
    if (actor === undefined && changes.created) {
      const def = (view?.run ?? undefined)?.context.definition ?? this.#registry.get(changes.item.workflow);
      if (def !== undefined) {
        actor = createActor(workflowRunMachine, {
          input: {
            runId: id,
            definition: def,
            budget: changes.item.budget,
            deadline: runDeadline(def, changes.item.createdAt),
          },
          inspect: this.#inspect,
        });
        actor.start();
        this.#shown.set(id, actor);
      }
    }
    if (actor === undefined) return;
    for (const event of decision.runEvents) actor.send(event);
    if (actor.getSnapshot().status === 'done') {
      actor.stop();
      this.#shown.delete(id);
    }
  }

  /** Statuses of a committed step's events, in order. */
  statuses(step: Step): ItemStatus[] {
    return step.events.flatMap((event) => {
      const item = step.items.get(event.itemId);
      return item === undefined ? [] : [statusOf(item, event)];
    });
  }
}

/** A child's attributes with its position, read from its parent's join when its spawn row carried none (a row from before positions). */
function withPosition(
  attributes: Record<string, string | number | boolean>,
  join: RunJoin | null,
  branch: string,
): Record<string, string | number | boolean> {
  if (attributes[POSITION_ATTRIBUTE] !== undefined || join === null) return attributes;
  const position = branchPosition(join, branch);
  return position === undefined ? attributes : { ...attributes, [POSITION_ATTRIBUTE]: position };
}

function idOf(view: ItemView | undefined, input: CoordinatorInput): string | undefined {
  if (input.kind === 'create') return input.itemId;
  if (input.kind === 'result') return input.result.headers.runId;
  return view?.item.id;
}

/**
 * A run snapshot persisted before the run held its item's budget (or its
 * deadline) has none in its context: it gets the item's budget back, and the
 * deadline of its definition from the item's creation (the run decides
 * overruns and deadlines).
 */
function withItemBounds(snapshot: unknown, item: ItemRecord): unknown {
  const snap = snapshot as { context?: { budget?: unknown; deadline?: unknown; definition?: unknown } };
  if (snap?.context === undefined) return snapshot;
  let context = snap.context;
  if (context.budget === undefined) context = { ...context, budget: item.budget };
  if (context.deadline === undefined) {
    // The restore that follows checks the definition whole.
    const ms = (context.definition as { deadline?: unknown } | null | undefined)?.deadline;
    context = { ...context, deadline: typeof ms === 'number' ? { at: item.createdAt + ms, ms } : null };
  }
  return context === snap.context ? snapshot : { ...snap, context };
}

function viewOf(stored: StoredItem, run: RunState | null): ItemView {
  const hops = new Map<string, HopRecord>();
  for (const hop of stored.hops) hops.set(hop.id, hop);
  return { item: stored.item, hops, run };
}
