import type { Observable } from 'rxjs';
import type { Dispatcher } from '../../bus/dispatcher.js';
import type { WorkQueue } from '../../bus/work-queue.js';
import type { PoolDeployment } from '../../machines/pool-machine.js';
import type { AuditChain } from '../../persistence/audit/audit-chain.js';
import type { AuditVerification, AuditVerifyOptions } from '../../persistence/audit/sqlite-chain.js';
import type { ContextStore } from '../../persistence/context/sqlite-store.js';
import type { CoordinatorTables } from '../../persistence/coordinator/coordinator-store.js';
import { RESULTS_ROLE } from '../../protocol/work-envelope.js';
import type { SwitchboardMetrics } from '../../telemetry/metrics.js';
import type { WorkflowRegistry } from '../../workflow/definition.js';
import type { HopRecord, ItemRecord } from '../../workflow/records.js';
import type { Broker } from '../broker/broker.js';
import { type Pool, createPool } from '../worker/pool.js';
import type { Coordinator } from './coordinator-api.js';
import { CoordinatorItems, type CreateWorkItem } from './coordinator-items.js';
import { CoordinatorLoop } from './coordinator-loop.js';
import type { CompiledCoordinatorOptions } from './coordinator-options.js';
import type { ArtifactChunk } from '../../protocol/artifact-chunk.js';
import { ArtifactChunkReceiver } from './artifact-chunks.js';
import { CoordinatorStreams, type SettleOptions } from './coordinator-streams.js';
import type { CoordinatorEngine, Step } from './engine.js';
import type { EndedRunForgetter } from './forget.js';
import type { ItemTraces } from './item-traces.js';
import type { BrokerMirror } from './mirror.js';
import { ChildItems } from './child-items.js';
import { OutboxPublisher } from './outbox-publisher.js';
import { logHopFailures } from './failure-log.js';
import type { CoordinatorGovernance } from './policies.js';
import type { CoordinatorStorage } from './storage/coordinator-storage.js';
import { CoordinatorError, type ItemStatus, invalid } from './types.js';

/** The parts a running Coordinator is made of, assembled and opened (`coordinator-assembly.ts`). */
export interface CoordinatorParts {
  compiled: CompiledCoordinatorOptions;
  storage: CoordinatorStorage;
  registry: WorkflowRegistry;
  governance: CoordinatorGovernance;
  engine: CoordinatorEngine;
  dispatcher: Dispatcher;
  bus: WorkQueue;
  broker: Broker | undefined;
  contextStore: ContextStore;
  /** None where there is no broker (PostgreSQL without one): the rows are the A2A view. */
  mirror: BrokerMirror | undefined;
  traces: ItemTraces;
  metrics: SwitchboardMetrics;
  closeOwned: () => Promise<void>;
  roles: Set<string>;
  forgetter: EndedRunForgetter;
}

/**
 * A Coordinator that runs: the work-item API (`CoordinatorItems`), the live
 * views (`CoordinatorStreams`), the outbox (`OutboxPublisher`) and the
 * results loop and timer (`CoordinatorLoop`), composed; it starts them and
 * closes them in order.
 */
export class RunningCoordinator implements Coordinator {
  readonly storage: 'sqlite' | 'postgres';
  readonly tables: CoordinatorTables;
  readonly audit: AuditChain;
  readonly bus: WorkQueue;
  readonly broker: Broker | undefined;
  readonly contextStore: ContextStore;
  readonly dispatcher: Dispatcher;
  readonly pools = new Map<string, Pool>();
  restored: Coordinator['restored'] = { items: [], refused: [], republished: 0 };
  readonly statuses$: Observable<ItemStatus>;
  readonly #p: CoordinatorParts;
  readonly #streams: CoordinatorStreams;
  readonly #publisher: OutboxPublisher;
  readonly #loop: CoordinatorLoop;
  readonly #chunks = new ArtifactChunkReceiver();
  readonly #items: CoordinatorItems;
  /** Stops observing queue depths. */
  #unobserve: (() => void) | undefined;
  #closed = false;

  constructor(parts: CoordinatorParts) {
    this.#p = parts;
    const { storage, engine, compiled } = parts;
    this.storage = storage.name;
    this.tables = storage.tables;
    this.audit = storage.audit;
    this.bus = parts.bus;
    this.broker = parts.broker;
    this.contextStore = parts.contextStore;
    this.dispatcher = parts.dispatcher;
    const closed = () => this.#closed;
    const after = (step: Step) => this.#after(step);
    this.#streams = new CoordinatorStreams({ storage, live: engine, clock: compiled.clock, closed });
    this.statuses$ = this.#streams.statuses$;
    const children = new ChildItems({
      engine,
      registry: parts.registry,
      traces: parts.traces,
      log: compiled.log,
      after,
    });
    // A decision's new children are created, and a child's end settled in its live parent, in its own commit;
    // the rest are carried out from their rows.
    engine.inlineChildren = (body) => children.prepareInline(body);
    this.#publisher = new OutboxPublisher({
      dispatcher: parts.dispatcher,
      engine,
      traces: parts.traces,
      log: compiled.log,
      closed,
      local: children,
    });
    this.#loop = new CoordinatorLoop({
      dispatcher: parts.dispatcher,
      engine,
      tables: storage.tables,
      metrics: parts.metrics,
      log: compiled.log,
      after,
      closed,
      consumer: compiled.consumer,
      resultsVisibilityTimeoutMs: compiled.resultsVisibilityTimeoutMs,
      timerIntervalMs: compiled.timerIntervalMs,
      generation: () => parts.bus.generation(),
      chunk: (chunk) => this.#chunk(chunk),
    });
    this.#items = new CoordinatorItems({
      registry: parts.registry,
      governance: parts.governance,
      engine,
      mirror: parts.mirror,
      traces: parts.traces,
      ids: compiled.ids,
      streams: this.#streams,
      after,
      assertOpen: () => this.#assertOpen(),
    });
  }

  get timing() {
    return this.#p.engine.timing;
  }

  async start(): Promise<void> {
    const { engine, mirror, compiled } = this.#p;
    const options = compiled.given;
    const { restored, refused } = await engine.restore();
    for (const r of refused) compiled.log.error(r, 'could not restore a work item');
    const outbox = await engine.outbox();
    this.restored = { items: restored, refused, republished: outbox.length };
    await this.#publisher.publishRows(outbox);
    if (mirror !== undefined) {
      for (const role of [...this.#p.roles].sort()) await mirror.roleAgent(role);
      await mirror.recover();
    }
    for (const [role, d] of Object.entries(options.deployments ?? {})) {
      this.pools.set(
        role,
        createPool({
          role,
          handler: d.handler,
          bus: this.bus,
          contextStore: this.contextStore,
          deployment: d.deployment,
          stopGraceMs: 2000,
          inspect: options.inspect,
          ...(d.visibilityTimeoutMs === undefined ? {} : { visibilityTimeoutMs: d.visibilityTimeoutMs }),
          ...(d.observeIntervalMs === undefined ? {} : { observeIntervalMs: d.observeIntervalMs }),
          ...(d.pollWaitMs === undefined ? {} : { pollWaitMs: d.pollWaitMs }),
          logger: compiled.logger,
        }),
      );
    }
    const depthRoles = [...new Set([...this.#p.roles, RESULTS_ROLE])].sort();
    this.#unobserve = this.#p.metrics.observeQueueDepth(async () => {
      if (this.#closed) return [];
      const stats = await Promise.allSettled(depthRoles.map((role) => this.bus.stats(role)));
      return stats.flatMap((r) => (r.status === 'fulfilled' ? [{ role: r.value.role, depth: r.value.depth }] : []));
    });
    // This Coordinator is the one consumer of the results: what an earlier one held (a leader that
    // died, a process killed) is handed out again now, not when its leases would have run out.
    await this.#loop.begin();
    const taken = await this.bus.expireLeases(RESULTS_ROLE);
    if (taken > 0) compiled.log.info({ results: taken }, 'took back the results an earlier Coordinator held');
    this.#loop.start();
    this.#p.forgetter.start();
  }

  #assertOpen(): void {
    if (this.#closed) throw new CoordinatorError('COORD_CLOSED', 'the Coordinator is closed');
  }

  createWorkItem(request: CreateWorkItem): Promise<string> {
    return this.#items.createWorkItem(request);
  }

  approve(itemId: string, approver: string): Promise<void> {
    return this.#items.approve(itemId, approver);
  }

  deny(itemId: string, approver: string, reason?: string): Promise<void> {
    return this.#items.deny(itemId, approver, reason);
  }

  cancel(itemId: string, options: { by?: string; reason?: string } = {}): Promise<void> {
    return this.#items.cancel(itemId, options);
  }

  watch(itemId: string): Observable<ItemStatus> {
    return this.#streams.watch(itemId);
  }

  settled(itemId: string, options: SettleOptions = {}): Promise<ItemStatus> {
    return this.#streams.settled(itemId, options);
  }

  getItem(itemId: string): Promise<ItemRecord | undefined> {
    return this.tables.readItem(itemId);
  }

  listItems(): Promise<ItemRecord[]> {
    return this.tables.readItems();
  }

  listHops(itemId: string): Promise<HopRecord[]> {
    return this.tables.readHops(itemId);
  }

  verifyAudit(options: AuditVerifyOptions = {}): Promise<AuditVerification> {
    return this.audit.verifyChain(options);
  }

  configureRole(role: string, deployment: PoolDeployment): void {
    const pool = this.pools.get(role);
    if (pool === undefined) throw invalid(`no pool runs role ${role} in this process`);
    pool.configure(deployment);
  }

  mirrored(): Promise<void> {
    return this.#p.mirror?.idle() ?? Promise.resolve();
  }

  async forgetEndedRuns(): Promise<number> {
    this.#assertOpen();
    return this.#p.forgetter.forgetEnded();
  }

  /** An artifact chunk a hop streamed: to the item's watchers and its task, what of it is new. */
  #chunk(chunk: ArtifactChunk): void {
    if (this.#closed) return;
    const out = this.#chunks.accept(chunk);
    if (out === undefined) return;
    if (!this.#streams.chunk(chunk.itemId, chunk.hop, chunk.role, out)) return;
    this.#p.mirror?.addChunk(chunk.itemId, out);
  }

  /** What a committed step leads to: statuses out, publishes made, the broker moved. Resolves once published. */
  #after(step: Step): Promise<void> {
    this.#streams.emit(this.#p.engine.statuses(step));
    logHopFailures(this.#p.compiled.log, step);
    for (const rows of step.rows) {
      this.#p.mirror?.follow(rows.item, rows.hops, rows.created);
      if (rows.item.finishedAt !== null) {
        this.#p.traces.ended(rows.item.id);
        this.#chunks.forget(rows.item.id);
      }
    }
    return this.#publisher.publishStep(step);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#loop.stopTimer();
    this.#unobserve?.();
    // The in-process workers finish what they hold (their results are still taken), then the results loop
    // stops before anything waits on a commit: no delivery is taken from here on (a replaced leader's commits
    // hang on its database; what it holds goes back to the bus for the next leader).
    for (const pool of this.pools.values()) await pool.stop();
    await this.#loop.stopResults();
    await this.#p.forgetter.close();
    await this.#publisher.close();
    await this.#loop.drained();
    await this.#p.mirror?.close();
    try {
      await this.#p.engine.flushPublished();
    } catch (error) {
      this.#p.compiled.log.warn({ err: error }, 'could not prune the outbox');
    }
    this.#streams.complete();
    await this.#p.closeOwned();
  }
}
