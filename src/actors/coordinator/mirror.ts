import { type Context, ROOT_CONTEXT, traceFieldsOf, withContext } from '../../telemetry/tracing.js';
import type { Logger } from '../../log/logger.js';
import type { TaskState } from '../../protocol/task.js';
import type { BrokerApi } from '../broker/api.js';
import type { CoordinatorTables } from '../../persistence/coordinator/coordinator-store.js';
import type { HopRecord, ItemRecord } from '../../workflow/records.js';
import { outputArtifacts } from '../../workflow/item-output.js';
import { HOP_TASK_STATE, ITEM_TASK_STATE } from '../../workflow/task-view.js';
import type { ChunkOut } from './artifact-chunks.js';
import { type HumanEdge, type Party, SWITCHBOARD_METADATA_KEY } from './human-edge.js';

/**
 * The broker's view of the Coordinator's work, kept in step with its tables:
 * the work item's A2A task (edge → Coordinator) and one child task per hop
 * (Coordinator → the role's agent, `parentTaskId` in its metadata), each
 * moved through `working`, `input-required` (a suspended hop),
 * `auth-required` (an item at an approval gate) and its final state.
 *
 * An eventually consistent projection of the committed changes: the
 * Coordinator hands it each commit's item and hop rows (`follow`), and it
 * keeps its own view of every item it mirrors from them, without reading the
 * tables again; one item at a time, coalescing bursts. It is idempotent: a
 * sync moves only what differs from what the broker has. After a restart it
 * reads an item from the tables once, and `recover` catches up every item
 * whose mirror was behind at the crash (a hop task created just before the
 * crash is found again by its first message's id, the hop id).
 *
 * The item's own task is made here too, by the item's first sync after its
 * creation commit (never before it: a commit that fails leaves no task); one
 * made just before a crash is found again by its first message's id, the
 * item id.
 *
 * An ended item's output goes on its task as artifacts (the Coordinator is
 * the task's worker) before the task's final move: the answer's parts and the
 * last hop's artifacts, or the failure, or the cancellation
 * (`outputArtifacts`). Each has a fixed id, so a sync after a crash puts the
 * same artifacts again, not new ones.
 */

/** The broker context the role agents register in. */
export const ROLE_AGENTS_CONTEXT = 'switchboard-roles';

const FINAL_TASK_STATES: readonly TaskState[] = ['completed', 'failed', 'canceled', 'rejected'];

export class BrokerMirror {
  readonly #broker: BrokerApi;
  readonly #store: CoordinatorTables;
  readonly #edge: HumanEdge;
  readonly #log: Logger;
  readonly #roles = new Map<string, Promise<Party>>();
  /** The state each task was last moved to (or read in), by task id. */
  readonly #known = new Map<string, TaskState>();
  readonly #running = new Map<string, Promise<void>>();
  readonly #again = new Set<string>();
  /** What the mirror knows of each item it follows: the committed rows, as handed over. */
  readonly #views = new Map<string, { item: ItemRecord; hops: Map<string, HopRecord> }>();
  /** Task ids the mirror gave hops and items (its own columns; the committed rows do not carry them). */
  readonly #taskOf = new Map<string, string>();
  /** Who waits for an item's task to be made (`itemTask`), by item id. */
  readonly #taskWaiters = new Map<string, Set<() => void>>();
  /**
   * Items created in this process whose syncs never failed: every task of
   * theirs is one this mirror made and knows, so none is looked for in the
   * broker (by its first message) before it is made.
   */
  readonly #madeHere = new Set<string>();
  /** The artifact chunks being added to each item's task, by item id (one chain per item, in order). */
  readonly #chunking = new Map<string, Promise<void>>();
  /** After a restart: look for hop tasks created but not recorded before the crash. */
  #recovering = false;
  #closed = false;
  /** Whether the task ids in the tables name tasks of this broker. */
  readonly #storedTasks: boolean;

  /** Told each item task id once it is kept in the item's row (the engine's live record takes it). */
  readonly #onItemTask: (itemId: string, taskId: string) => void;
  readonly #traces: { of(itemId: string): Context } | undefined;

  /**
   * `storedTasks: false`: the broker is not the one the tables' task ids
   * name (a Coordinator on PostgreSQL with a broker of its own, new on each
   * start): the mirror finds or makes every task anew from the rows.
   */
  constructor(options: {
    broker: BrokerApi;
    store: CoordinatorTables;
    edge: HumanEdge;
    logger: Logger;
    onItemTask?: (itemId: string, taskId: string) => void;
    storedTasks?: boolean;
    /** Each item's trace: an item's broker calls run in its context, and its hop tasks carry its trace fields. */
    traces?: { of(itemId: string): Context };
  }) {
    this.#storedTasks = options.storedTasks ?? true;
    this.#broker = options.broker;
    this.#store = options.store;
    this.#edge = options.edge;
    this.#log = options.logger;
    this.#onItemTask = options.onItemTask ?? (() => undefined);
    this.#traces = options.traces;
  }

  #traceOf(itemId: string): Context {
    return this.#traces === undefined ? ROOT_CONTEXT : this.#traces.of(itemId);
  }

  /** The broker agent of a role (registered on first use, in `switchboard-roles`). */
  roleAgent(role: string): Promise<Party> {
    let party = this.#roles.get(role);
    if (party === undefined) {
      party = this.#broker
        .register({
          name: role,
          contextId: ROLE_AGENTS_CONTEXT,
          kind: 'parent',
          description: `the ${role} role's worker pool`,
        })
        .then((r) => ({ agentId: r.agentId, token: r.token }));
      this.#roles.set(role, party);
      party.catch(() => this.#roles.delete(role));
    }
    return party;
  }

  /** Catches up every item whose mirror may be behind (on start, after a crash). */
  async recover(): Promise<void> {
    this.#recovering = true;
    for (const item of await this.#store.readUnmirroredItems()) this.schedule(item.id);
    return this.idle();
  }

  /**
   * Takes a commit's rows of one item (the item as committed, the hop rows it
   * wrote) into the mirror's view, and schedules the item's sync. `created`:
   * the item is new (its rows are all there is); otherwise an item the mirror
   * has no view of yet is read from the tables once, at its sync.
   */
  follow(item: ItemRecord, hops: readonly HopRecord[], created: boolean): void {
    let view = this.#views.get(item.id);
    if (view === undefined && created) {
      view = { item, hops: new Map() };
      this.#views.set(item.id, view);
      this.#madeHere.add(item.id);
    }
    if (view !== undefined) {
      view.item = item;
      for (const hop of hops) view.hops.set(hop.id, hop);
    }
    this.schedule(item.id);
  }

  /** The mirror's view of an item: from the commits it followed, or read from the tables once. */
  async #view(itemId: string): Promise<{ item: ItemRecord; hops: Map<string, HopRecord> } | undefined> {
    const known = this.#views.get(itemId);
    if (known !== undefined) return known;
    const item = await this.#store.readItem(itemId);
    if (item === undefined) return undefined;
    const hops = await this.#store.readHops(itemId);
    // A commit followed while the rows were read is newer: its view wins.
    const followed = this.#views.get(itemId);
    if (followed !== undefined) return followed;
    const view = { item, hops: new Map(hops.map((h) => [h.id, h])) };
    this.#views.set(itemId, view);
    return view;
  }

  /**
   * The item's task id once its sync has made (or found) it; `undefined` if
   * that sync ended without it (the broker failed: a later sync makes it).
   */
  itemTask(itemId: string): Promise<string | undefined> {
    const known = this.#taskOf.get(itemId) ?? this.#views.get(itemId)?.item.taskId ?? undefined;
    if (known !== undefined) return Promise.resolve(known);
    const running = this.#running.get(itemId);
    if (running === undefined) return this.#store.readItem(itemId).then((item) => item?.taskId ?? undefined);
    return new Promise((resolve) => {
      let waiters = this.#taskWaiters.get(itemId);
      if (waiters === undefined) {
        waiters = new Set();
        this.#taskWaiters.set(itemId, waiters);
      }
      const done = () => {
        waiters.delete(done);
        if (waiters.size === 0 && this.#taskWaiters.get(itemId) === waiters) this.#taskWaiters.delete(itemId);
        const made = this.#taskOf.get(itemId);
        if (made !== undefined) resolve(made);
        else
          this.#store.readItem(itemId).then(
            (item) => resolve(item?.taskId ?? undefined),
            () => resolve(undefined),
          );
      };
      waiters.add(done);
      void running.finally(done);
    });
  }

  #taskMade(itemId: string): void {
    for (const done of [...(this.#taskWaiters.get(itemId) ?? [])]) done();
  }

  /** Brings an item's tasks in line with its view, soon (coalesced per item). */
  schedule(itemId: string): void {
    if (this.#closed) return;
    if (this.#running.has(itemId)) {
      this.#again.add(itemId);
      return;
    }
    const run = (async () => {
      do {
        this.#again.delete(itemId);
        try {
          await withContext(this.#traceOf(itemId), () => this.#sync(itemId));
        } catch (error) {
          // A broker call that failed may have made a task all the same: later syncs look for it.
          this.#madeHere.delete(itemId);
          this.#log.warn({ err: error, itemId }, 'broker mirror: sync failed');
          break;
        }
      } while (this.#again.has(itemId) && !this.#closed);
    })().finally(() => this.#running.delete(itemId));
    this.#running.set(itemId, run);
  }

  /** Resolves when no sync is running. */
  async idle(): Promise<void> {
    while (this.#running.size > 0) await Promise.all([...this.#running.values()]);
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.idle();
    await Promise.all([...this.#chunking.values()]);
  }

  /**
   * A chunk of an artifact a hop streams, added to the item's task (A2A's
   * artifact update: `append` after the first, `lastChunk` on the last), in
   * the order given, before the item's output. A preview: a chunk the broker
   * refuses (the task ended, the broker is down) is dropped.
   */
  addChunk(itemId: string, chunk: ChunkOut): void {
    if (this.#closed) return;
    const before = this.#chunking.get(itemId) ?? Promise.resolve();
    const next = before.then(async () => {
      // Not waited for (the item's sync may wait for these chunks): a chunk before its item's task is made is dropped.
      const taskId = this.#taskOf.get(itemId) ?? this.#views.get(itemId)?.item.taskId ?? undefined;
      if (taskId === undefined) return;
      const { coordinator } = await this.#edge.parties(itemId);
      if (FINAL_TASK_STATES.includes(await this.#state(taskId, coordinator.token))) return;
      await this.#broker.addArtifact({
        token: coordinator.token,
        id: taskId,
        artifact: {
          artifactId: chunk.artifactId,
          ...(chunk.name === undefined ? {} : { name: chunk.name }),
          parts: [{ kind: 'text', text: chunk.text }],
        },
        append: chunk.append,
        lastChunk: chunk.lastChunk,
      });
    });
    const tracked = next
      .catch((error: unknown) =>
        this.#log.debug(
          { err: error, itemId, artifactId: chunk.artifactId },
          'an artifact chunk was not added to the task',
        ),
      )
      .finally(() => {
        if (this.#chunking.get(itemId) === tracked) this.#chunking.delete(itemId);
      });
    this.#chunking.set(itemId, tracked);
  }

  async #state(taskId: string, token: string): Promise<TaskState> {
    const known = this.#known.get(taskId);
    if (known !== undefined) return known;
    const { task } = await this.#broker.getTask({ token, id: taskId, historyLength: 0 });
    this.#known.set(taskId, task.status.state);
    return task.status.state;
  }

  async #move(taskId: string, token: string, to: TaskState, text?: string): Promise<void> {
    const from = await this.#state(taskId, token);
    if (from === to || FINAL_TASK_STATES.includes(from)) return;
    await this.#broker.setStatus({
      token,
      id: taskId,
      state: to,
      ...(text === undefined ? {} : { message: { parts: [{ kind: 'text', text }] } }),
    });
    this.#known.set(taskId, to);
  }

  async #hopTask(item: ItemRecord, hop: HopRecord, coordinator: Party): Promise<string> {
    const known = (this.#storedTasks ? hop.taskId : null) ?? this.#taskOf.get(hop.id);
    if (known !== undefined) return known;
    const role = await this.roleAgent(hop.role);
    if ((this.#recovering || !this.#storedTasks) && !this.#madeHere.has(item.id)) {
      const { tasks } = await this.#broker.listTasks({ token: coordinator.token, role: 'requester' });
      const found = tasks.find((t) => t.history[0]?.messageId === hop.id);
      if (found !== undefined) {
        await this.#store.recordHopTask(hop.id, found.id);
        this.#taskOf.set(hop.id, found.id);
        return found.id;
      }
    }
    const trace = traceFieldsOf(this.#traceOf(item.id));
    const label = hop.kind === 'query' ? `query from hop ${hop.hop} to ${hop.role}` : `hop ${hop.hop} (${hop.stage})`;
    const { task } = await this.#broker.send({
      token: coordinator.token,
      to: role.agentId,
      message: {
        messageId: hop.id,
        parts: [{ kind: 'text', text: `${label} of work item ${item.id}` }],
        metadata: {
          [SWITCHBOARD_METADATA_KEY]: {
            itemId: item.id,
            parentTaskId: item.taskId,
            hopId: hop.id,
            hop: hop.hop,
            attempt: hop.attempt,
            kind: hop.kind,
            stage: hop.stage,
            idempotencyKey: hop.idempotencyKey,
          },
          // The item's trace (`traceparent`, `tracestate`), so the A2A task can be followed to its spans.
          ...trace,
        },
      },
    });
    this.#known.set(task.id, task.status.state);
    await this.#store.recordHopTask(hop.id, task.id);
    this.#taskOf.set(hop.id, task.id);
    return task.id;
  }

  /** The item's output as artifacts of its task, while the task is still live (a final task takes none). */
  async #putOutput(
    itemId: string,
    itemTask: string,
    output: NonNullable<ItemRecord['output']>,
    coordinator: Party,
  ): Promise<void> {
    // The chunks streamed before the item ended go on its task first.
    await this.#chunking.get(itemId);
    if (FINAL_TASK_STATES.includes(await this.#state(itemTask, coordinator.token))) return;
    for (const artifact of outputArtifacts(output)) {
      await this.#broker.addArtifact({ token: coordinator.token, id: itemTask, artifact, lastChunk: true });
    }
  }

  /**
   * A child work item's link to its parent (its task's metadata): the
   * parent item, its task (the parent's task has the child's as a child
   * task) and the branch.
   */
  async #parentLink(item: ItemRecord): Promise<Record<string, unknown>> {
    const parentItemId = item.attributes?.['switchboard.parent'];
    if (typeof parentItemId !== 'string') return {};
    const parentTaskId = this.#taskOf.get(parentItemId) ?? (await this.#view(parentItemId))?.item.taskId ?? null;
    return { parentItemId, parentTaskId, branch: item.attributes?.['switchboard.branch'] ?? null };
  }

  async #sync(itemId: string): Promise<void> {
    const view = await this.#view(itemId);
    if (view === undefined || view.item.mirrored) return;
    const item = view.item;
    const parties = await this.#edge.parties(itemId);
    let itemTask = (this.#storedTasks ? item.taskId : null) ?? this.#taskOf.get(itemId) ?? null;
    if (itemTask === null) {
      itemTask = this.#madeHere.has(itemId) ? null : ((await this.#edge.findItemTask(itemId)) ?? null);
      if (itemTask === null) {
        itemTask = await this.#edge.createItemTask(itemId, item.input, {
          itemId,
          workflow: item.workflow,
          ...(await this.#parentLink(item)),
        });
      }
      await this.#store.recordItemTask(itemId, itemTask);
      this.#taskOf.set(itemId, itemTask);
      view.item = { ...view.item, taskId: itemTask };
      this.#onItemTask(itemId, itemTask);
      this.#taskMade(itemId);
    }
    const final = item.finishedAt !== null;
    for (const hop of [...view.hops.values()]) {
      const taskId = await this.#hopTask({ ...item, taskId: itemTask }, hop, parties.coordinator);
      const role = await this.roleAgent(hop.role);
      if (item.state === 'canceled' && hop.state !== 'completed' && hop.state !== 'failed') {
        const state = await this.#state(taskId, role.token);
        if (!FINAL_TASK_STATES.includes(state)) {
          await this.#broker.cancel({ token: parties.coordinator.token, id: taskId });
          this.#known.set(taskId, 'canceled');
        }
        continue;
      }
      const to = HOP_TASK_STATE[hop.state];
      const text =
        hop.state === 'failed' && hop.error !== null
          ? `${hop.error.type}: ${hop.error.message}`.slice(0, 2000)
          : undefined;
      await this.#move(taskId, role.token, to, text);
    }
    const to = ITEM_TASK_STATE[item.state];
    if (item.output !== null) await this.#putOutput(itemId, itemTask, item.output, parties.coordinator);
    if (to === 'canceled') {
      const state = await this.#state(itemTask, parties.coordinator.token);
      if (!FINAL_TASK_STATES.includes(state)) {
        await this.#edge.cancelItemTask(itemId, itemTask);
        this.#known.set(itemTask, 'canceled');
      }
    } else {
      const text = item.failure === null ? undefined : item.failure.reason.slice(0, 2000);
      await this.#move(itemTask, parties.coordinator.token, to, text);
    }
    if (final) {
      // A hop committed since this sync started (a late result) keeps the item open.
      if (this.#views.get(itemId)?.item.hops === item.hops) {
        await this.#store.recordMirrored(itemId);
        await this.#edge.release(itemId);
        this.#known.delete(itemTask);
        this.#taskOf.delete(itemId);
        for (const hop of view.hops.values()) {
          const taskId = hop.taskId ?? this.#taskOf.get(hop.id);
          if (taskId !== undefined) this.#known.delete(taskId);
          this.#taskOf.delete(hop.id);
        }
        this.#views.delete(itemId);
        this.#madeHere.delete(itemId);
      }
    }
  }
}
