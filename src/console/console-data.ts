import { APPROVALS_ROLE, ITEMS_ROLE } from '../actors/coordinator/intake.js';
import type { DeadLetter, WorkQueue } from '../bus/work-queue.js';
import {
  type QueueView,
  type SystemSnapshot,
  itemRowOf,
  queueViewOf,
  readSystemSnapshot,
} from '../inspect/system-snapshot.js';
import { TASK_TRANSITIONS } from '../machines/task-transitions.js';
import { WORKFLOW_RUN_TRANSITIONS } from '../machines/workflow-run-transitions.js';
import { AuditLog, type AuditVerification } from '../persistence/audit/sqlite-chain.js';
import type { CoordinatorStore, CoordinatorTables } from '../persistence/coordinator/coordinator-store.js';
import type { ItemPageFilter } from '../persistence/coordinator/item-reads.js';
import { SqliteCoordinatorStore } from '../persistence/coordinator/sqlite-store.js';
import type { SqliteDatabase } from '../persistence/kernel/database.js';
import type { AuditHead, AuditRow } from '../protocol/audit.js';
import type { Part } from '../protocol/parts.js';
import { TASK_STATES, type TaskState } from '../protocol/task.js';
import { RESULTS_ROLE } from '../protocol/work-envelope.js';
import { WORKFLOW_RUN_STATES } from '../protocol/workflow.js';
import { outputSummary } from '../workflow/item-output.js';
import type { HopRecord, ItemRecord, ItemState } from '../workflow/records.js';
import { type BusMessageLookup, type BusWait, busWaitsOf } from '../workflow/bus-waits.js';
import { sqliteBusLookup } from '../bus/sqlite/message-states.js';
import { readBusWaits } from '../persistence/coordinator/bus-wait-reads.js';
import { type TaskView, taskViewsOfItems } from '../workflow/task-view.js';
import {
  type ConsoleChild,
  type ItemPath,
  type ShownPart,
  type WorkflowDiagram,
  childTree,
  itemPath,
  shownParts,
  workflowDiagram,
} from './item-view.js';

/** The tables the console reads, and the kept workflow definitions (to draw an item's stages). */
export type ConsoleTables = CoordinatorTables & Pick<CoordinatorStore, 'loadDefinition'>;

/** How many items the console reads to find an item's descendants. */
export const MAX_TREE_ITEMS = 10_000;

/** Task states a task leaves no more. */
const TERMINAL_TASK_STATES: readonly TaskState[] = ['completed', 'canceled', 'failed', 'rejected'];

/**
 * What the console shows, read from a switchboard database opened read-only
 * (it reads while the broker, the bus and the Coordinator write), or from a
 * Coordinator's PostgreSQL database read-only, and from the bus. Nothing here returns a capability token, a continuation token or an
 * envelope body: names, states, counts, times, costs, verdicts, and the text
 * of what an item asked and answered when its timeline is opened.
 */

/** One work item in a list. */
export interface ConsoleItem {
  id: string;
  workflow: string;
  state: ItemState;
  stage: string | null;
  hop: number;
  hops: number;
  costUsd: number;
  inputTokens: number;
  outputTokens: number;
  createdAt: number;
  updatedAt: number;
  finishedAt: number | null;
  /** ms from creation to its end (or to now). */
  elapsedMs: number;
  failure: { code: string; reason: string } | null;
  approval: ItemRecord['approval'];
  /** What the item ended with, in one line of text (at most `MAX_SHOWN_TEXT` characters), and its artifacts' names. */
  output: { state: string; summary: string; artifacts: string[] } | null;
}

/** One hop of an item's timeline. */
export interface ConsoleHop {
  seq: number;
  hop: number;
  attempt: number;
  kind: HopRecord['kind'];
  stage: string;
  role: string;
  state: HopRecord['state'];
  model: string | null;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  elapsedMs: number;
  error: HopRecord['error'];
  dispatchedAt: number;
  finishedAt: number | null;
  /** For an answered query: the text of the answer (at most `MAX_SHOWN_TEXT` characters). */
  answer: string | null;
}

/** One audit row of an item, with its place in the chain. */
export interface ConsoleAuditRow {
  seq: number;
  at: string;
  kind: string;
  hop: number | null;
  actor: string;
  data: unknown;
  hash: string;
}

export interface ConsoleItemDetail {
  item: ConsoleItem;
  /** What the item was asked. */
  input: ShownPart[];
  /** What it ended with: its parts and artifacts (completed), else null (see `item.failure`, `item.output`). */
  result: { parts: ShownPart[]; artifacts: { name: string; parts: ShownPart[] }[] } | null;
  /** Its workflow's own stages (null when the kept definition cannot be read), and its path through them. */
  workflow: WorkflowDiagram | null;
  path: ItemPath;
  /** Its child work items (branches, map elements, child workflows) and theirs, in tree order. */
  children: ConsoleChild[];
  hops: ConsoleHop[];
  /**
   * What it waits for on the bus while running or suspended: each hop (or
   * query) out, its role, since when and for how long, and where its
   * message is when the bus is the file's (else `bus` is null).
   */
  waiting: BusWait[];
  /**
   * What its hops streamed to its A2A task while they ran (a model agent's
   * answer as it is written), each artifact by name with its text so far;
   * read from the broker's tables when the file holds them (else empty).
   */
  streamed: { artifactId: string; name: string; parts: ShownPart[] }[];
  audit: ConsoleAuditRow[];
  /** The whole chain's verification (the item's rows are in it). */
  chain: { ok: boolean; entries: number; head: string | null; problem: string | null };
}

export interface ConsoleDeadLetter {
  id: string;
  role: string;
  itemId: string | null;
  hop: number | null;
  deliveries: number;
  error: { type: string; message: string };
  publishedAt: number;
  deadAt: number;
}

export interface ConsoleAgent {
  agentId: string;
  name: string;
  contextId: string;
  kind: string;
  live: boolean;
  registeredAt: string;
}

export interface ConsoleTask {
  taskId: string;
  state: string;
  contextId: string;
  worker: string;
  requester: string;
  updatedAt: string;
}

/** A machine drawn from its transition table: its states and one edge per (from, to) with its labels. */
export interface MachineGraph {
  id: 'task' | 'workflow-run';
  states: string[];
  initial: string;
  final: string[];
  edges: { from: string; to: string; labels: string[] }[];
}

/** Longest text shown of an answer or a failure. */
export const MAX_SHOWN_TEXT = 2000;

/** The bus's own roles, shown beside the workflows' roles. */
const CONTROL_ROLES = [ITEMS_ROLE, APPROVALS_ROLE, RESULTS_ROLE];

/** How many of the newest items the derived task view covers (a store with no broker beside it). */
export const DERIVED_TASK_ITEMS = 50;

/** The audit chain as the console reads it: the SQLite `AuditLog` answers at once, `PostgresAuditLog` over the network. */
export interface ConsoleAuditReads {
  head(): AuditHead | Promise<AuditHead>;
  list(options: { itemId: string }): AuditRow[] | Promise<AuditRow[]>;
  verifyChain(): AuditVerification | Promise<AuditVerification>;
}

/** Where the console reads: a switchboard SQLite file, or a Coordinator's PostgreSQL database. */
export type ConsoleSource =
  | { kind: 'sqlite'; db: SqliteDatabase }
  | { kind: 'postgres'; tables: ConsoleTables; audit: ConsoleAuditReads };

export class ConsoleData {
  readonly #db: SqliteDatabase | undefined;
  readonly #bus: WorkQueue | undefined;
  readonly #tables: ConsoleTables | undefined;
  readonly #audit: ConsoleAuditReads | undefined;
  /** The roles last read (the live poll reads them again only once the audit head moved). */
  #roles: { head: string; roles: string[] } | undefined;

  constructor(source: ConsoleSource, bus?: WorkQueue) {
    this.#bus = bus;
    if (source.kind === 'postgres') {
      this.#tables = source.tables;
      this.#audit = source.audit;
      return;
    }
    const db = source.db;
    this.#db = db;
    this.#tables = this.#has('coord_items') ? new SqliteCoordinatorStore(db, { readOnly: true }) : undefined;
    this.#audit = this.#has('audit_log') ? new AuditLog(db, { readOnly: true }) : undefined;
  }

  /** Which store the console reads. */
  get store(): ConsoleSource['kind'] {
    return this.#db === undefined ? 'postgres' : 'sqlite';
  }

  /** Whether the file holds the Coordinator's tables (else only broker views have data). */
  get hasCoordinator(): boolean {
    return this.#tables !== undefined;
  }

  /**
   * A value that changes whenever something the views show moved. On SQLite:
   * the file's `data_version` (any other connection's commit). On PostgreSQL:
   * the audit head (every commit of the Coordinator appends to it) and the
   * queue counters of every role (a publish, an ack, a dead letter).
   */
  async version(): Promise<string> {
    if (this.#db !== undefined) return String(this.#db.pragma('data_version', { simple: true }));
    const head = this.#audit === undefined ? { seq: 0, hash: '' } : await this.#audit.head();
    const key = `${head.seq}:${head.hash}`;
    if (this.#roles?.head !== key) this.#roles = { head: key, roles: await this.roles() };
    const queues = this.#bus === undefined ? [] : await this.#queueViews(this.#roles.roles);
    return JSON.stringify([key, queues.map((q) => [q.role, q.depth, q.delayed, q.inFlight, q.deadLetters])]);
  }

  /** Counts of tasks, queues and items, as `switchboard top` shows them. */
  async overview(now = Date.now()): Promise<SystemSnapshot> {
    if (this.#db === undefined) return this.#derivedOverview(now);
    const snapshot = readSystemSnapshot(this.#db, { now, limit: 10 });
    if (this.#bus !== undefined && this.#bus.backend !== 'sqlite') snapshot.queues = await this.queues();
    return snapshot;
  }

  /** The overview of a store with no broker beside it: items from their rows, tasks derived from them. */
  async #derivedOverview(now: number): Promise<SystemSnapshot> {
    const tables = this.#tables as CoordinatorTables;
    const [totals, newest, tasks, queues] = await Promise.all([
      tables.readItemTotals(),
      tables.readItemPage({ limit: 10 }),
      this.#derivedTasks(),
      this.queues(),
    ]);
    const byState = Object.fromEntries(TASK_STATES.map((s) => [s, 0])) as Record<TaskState, number>;
    for (const task of tasks) byState[task.state] += 1;
    const rows = [...newest].sort((a, b) => Number(a.finishedAt !== null) - Number(b.finishedAt !== null));
    return {
      at: now,
      tasks: {
        total: tasks.length,
        byState,
        live: tasks
          .filter((t) => !TERMINAL_TASK_STATES.includes(t.state))
          .sort((a, b) => a.updatedAt - b.updatedAt)
          .slice(0, 10)
          .map((t) => ({
            taskId: t.id,
            state: t.state,
            worker: t.worker,
            requester: t.requester,
            idleMs: Math.max(0, now - t.updatedAt),
          })),
      },
      queues,
      items: {
        byState: totals.byState,
        costUsd: totals.costUsd,
        inputTokens: totals.inputTokens,
        outputTokens: totals.outputTokens,
        rows: rows.map((item) => itemRowOf(item, now)),
      },
    };
  }

  /** Every known role's queue: the workflows' roles and the bus's control roles. */
  async queues(): Promise<QueueView[]> {
    if (this.#bus === undefined) return this.#db === undefined ? [] : (readSystemSnapshot(this.#db).queues ?? []);
    return this.#queueViews(await this.roles());
  }

  async #queueViews(roles: readonly string[]): Promise<QueueView[]> {
    const bus = this.#bus as WorkQueue;
    return Promise.all(roles.map(async (role) => queueViewOf(await bus.stats(role))));
  }

  /** Roles the workflows of this store name, the roles hops went to, and the control roles. */
  async roles(): Promise<string[]> {
    const roles = new Set<string>(CONTROL_ROLES);
    if (this.#db === undefined || this.#has('coord_definitions')) {
      for (const role of (await this.#tables?.readRoles()) ?? []) roles.add(role);
    }
    if (this.#db !== undefined && this.#has('bus_jobs')) {
      for (const { role } of this.#db.prepare('SELECT DISTINCT role FROM bus_jobs').all() as { role: string }[]) {
        roles.add(role);
      }
    }
    return [...roles].sort();
  }

  /** One page of items, newest first, filtered by state and workflow. */
  async items(filter: ItemPageFilter = {}, now = Date.now()): Promise<ConsoleItem[]> {
    if (this.#tables === undefined) return [];
    return (await this.#tables.readItemPage(filter)).map((item) => consoleItem(item, now));
  }

  /** Workflow ids with items (for the filter). */
  async workflows(): Promise<string[]> {
    return (await this.#tables?.readWorkflowIds()) ?? [];
  }

  async item(id: string, now = Date.now()): Promise<ConsoleItemDetail | undefined> {
    const tables = this.#tables;
    const item = await tables?.readItem(id);
    if (item === undefined || tables === undefined) return undefined;
    const [records, rows, chain, definition, all] = await Promise.all([
      tables.readHops(id),
      this.#audit?.list({ itemId: id }) ?? [],
      this.chain(),
      tables.loadDefinition(item.workflow).catch(() => undefined),
      tables.readItems({ limit: MAX_TREE_ITEMS }),
    ]);
    const diagram = definition === undefined ? null : workflowDiagram(definition);
    const tree = childTree(id, all, () => []);
    const childHops = tree.length === 0 ? new Map() : await tables.readHopsOfItems(tree.map((c) => c.id));
    const children = childTree(id, all, (child) => childHops.get(child) ?? []);
    const hops = records.map(consoleHop);
    const waiting = busWaitsOf(item, records, now, this.#busLookup(now));
    const secrets = records.flatMap((hop) => (hop.continuation === null ? [] : [hop.continuation]));
    const audit = rows.map((row) => ({
      seq: row.seq,
      at: row.at,
      kind: row.kind,
      hop: row.hop,
      actor: row.actor,
      data: redacted(row.data, secrets),
      hash: row.hash,
    }));
    const output = item.output;
    const streamed = this.#streamed(item.taskId);
    return {
      item: consoleItem(item, now),
      input: shownParts(item.input, MAX_SHOWN_TEXT),
      result:
        output?.state === 'completed'
          ? {
              parts: shownParts(output.parts, MAX_SHOWN_TEXT),
              artifacts: output.artifacts.map((a) => ({
                name: a.name ?? a.artifactId,
                parts: shownParts(a.parts, MAX_SHOWN_TEXT),
              })),
            }
          : null,
      workflow: diagram,
      path: itemPath(item, records, rows, diagram),
      children,
      hops,
      waiting,
      streamed,
      audit,
      chain,
    };
  }

  /** The artifacts streamed to an item's task (all but its output), from the broker's tables in this file. */
  #streamed(taskId: string | null): ConsoleItemDetail['streamed'] {
    if (taskId === null || this.#db === undefined || !this.#has('a2a_artifacts')) return [];
    const rows = this.#db
      .prepare(
        "SELECT artifact_id, body FROM a2a_artifacts WHERE task_id = ? AND artifact_id <> 'item-output' ORDER BY position",
      )
      .all(taskId) as { artifact_id: string; body: string }[];
    return rows.flatMap((row) => {
      try {
        const artifact = JSON.parse(row.body) as { name?: string; parts?: Part[] };
        return [
          {
            artifactId: row.artifact_id,
            name: artifact.name ?? row.artifact_id,
            parts: shownParts(joinedText(artifact.parts ?? []), MAX_SHOWN_TEXT),
          },
        ];
      } catch {
        return [];
      }
    });
  }

  /** What every running or suspended item waits for on the bus, oldest first (see `ConsoleItemDetail.waiting`). */
  async waiting(now = Date.now()): Promise<BusWait[]> {
    if (this.#tables === undefined) return [];
    return readBusWaits(this.#tables, now, this.#busLookup(now));
  }

  /** Where a hop's message is, read from the file's bus (the SQLite bus); none for another bus. */
  #busLookup(now: number): BusMessageLookup | undefined {
    if (this.#db === undefined || (this.#bus !== undefined && this.#bus.backend !== 'sqlite')) return undefined;
    return sqliteBusLookup(this.#db, now);
  }

  /** The last verification and the head it covered: the chain is verified again only once it has moved. */
  #verified: { seq: number; hash: string; chain: ConsoleItemDetail['chain'] } | undefined;

  /** The audit chain's verification (of the whole chain, cached until its head moves). */
  async chain(): Promise<ConsoleItemDetail['chain']> {
    if (this.#audit === undefined) return { ok: true, entries: 0, head: null, problem: null };
    const head = await this.#audit.head();
    if (this.#verified?.seq === head.seq && this.#verified.hash === head.hash) return this.#verified.chain;
    const verification = await this.#audit.verifyChain();
    const chain: ConsoleItemDetail['chain'] = verification.ok
      ? { ok: true, entries: verification.entries, head: verification.head.hash, problem: null }
      : {
          ok: false,
          entries: head.seq,
          head: null,
          problem: `${verification.reason} at row ${verification.seq}: ${verification.detail}`,
        };
    this.#verified = { seq: head.seq, hash: head.hash, chain };
    return chain;
  }

  /** Items waiting at an approval gate (or for a governance approval), oldest first. */
  async approvals(now = Date.now()): Promise<ConsoleItem[]> {
    if (this.#tables === undefined) return [];
    return (await this.#tables.readItems({ state: 'awaiting-approval', limit: 100_000 }))
      .sort((a, b) => a.updatedAt - b.updatedAt)
      .map((item) => consoleItem(item, now));
  }

  /** A role's dead letters (oldest first), without their envelopes' bodies. */
  async deadLetters(role: string, limit = 100): Promise<ConsoleDeadLetter[]> {
    if (this.#bus === undefined) return [];
    return (await this.#bus.deadLetters.list(role, { limit })).map(consoleDeadLetter);
  }

  /** The broker's agents (none where there is no broker file: PostgreSQL). */
  agents(): ConsoleAgent[] {
    if (this.#db === undefined || !this.#has('a2a_agents')) return [];
    const rows = this.#db
      .prepare(
        'SELECT agent_id, name, context_id, kind, registered_at, ended_at FROM a2a_agents ORDER BY ended_at IS NOT NULL, context_id, name',
      )
      .all() as {
      agent_id: string;
      name: string;
      context_id: string;
      kind: string;
      registered_at: string;
      ended_at: string | null;
    }[];
    return rows.map((r) => ({
      agentId: r.agent_id,
      name: r.name,
      contextId: r.context_id,
      kind: r.kind,
      live: r.ended_at === null,
      registeredAt: r.registered_at,
    }));
  }

  /**
   * Where the tasks come from, when not from a broker's table: on PostgreSQL
   * there is no broker file, so the tasks are derived from the newest items'
   * rows (`taskViewsOfItems`), as the broker mirror would have moved them.
   */
  get tasksNote(): string | null {
    return this.#db === undefined
      ? `No broker beside PostgreSQL: these tasks are derived from the rows of the newest ${DERIVED_TASK_ITEMS} work items (each item a task, each hop a child task of it), in the states the broker mirror gives them.`
      : null;
  }

  async tasks(filter: { state?: string; limit?: number } = {}): Promise<ConsoleTask[]> {
    const limit = filter.limit ?? 200;
    if (this.#db === undefined) {
      return (await this.#derivedTasks())
        .filter((t) => filter.state === undefined || t.state === filter.state)
        .slice(0, limit)
        .map((t) => ({
          taskId: t.id,
          state: t.state,
          contextId: t.itemId,
          worker: t.worker,
          requester: t.requester,
          updatedAt: new Date(t.updatedAt).toISOString(),
        }));
    }
    if (!this.#has('a2a_tasks')) return [];
    const rows = (
      filter.state === undefined
        ? this.#db
            .prepare(
              'SELECT task_id, state, context_id, agent_name, requester_name, updated_at FROM a2a_tasks ORDER BY updated_at DESC LIMIT ?',
            )
            .all(limit)
        : this.#db
            .prepare(
              'SELECT task_id, state, context_id, agent_name, requester_name, updated_at FROM a2a_tasks WHERE state = ? ORDER BY updated_at DESC LIMIT ?',
            )
            .all(filter.state, limit)
    ) as {
      task_id: string;
      state: string;
      context_id: string;
      agent_name: string;
      requester_name: string;
      updated_at: string;
    }[];
    return rows.map((r) => ({
      taskId: r.task_id,
      state: r.state,
      contextId: r.context_id,
      worker: r.agent_name,
      requester: r.requester_name,
      updatedAt: r.updated_at,
    }));
  }

  /** The task view of the newest `DERIVED_TASK_ITEMS` items, from their rows. */
  async #derivedTasks(): Promise<TaskView[]> {
    const tables = this.#tables;
    if (tables === undefined) return [];
    const items = await tables.readItemPage({ limit: DERIVED_TASK_ITEMS });
    // One read for the hops of all of them (on PostgreSQL, one query instead of one an item).
    const hops = await tables.readHopsOfItems(items.map((item) => item.id));
    return taskViewsOfItems(items, (id) => hops.get(id) ?? []);
  }

  #has(table: string): boolean {
    return this.#db?.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table) !== undefined;
  }
}

/** The task machine and the workflow-run machine, drawn from their transition tables. */
export function machineGraphs(): MachineGraph[] {
  return [
    graphOf(
      'task',
      [...TASK_STATES],
      'submitted',
      ['completed', 'canceled', 'failed', 'rejected'],
      TASK_TRANSITIONS.map((t) => ({ from: t.from, to: t.to, label: `${t.by}: ${t.via}` })),
    ),
    graphOf(
      'workflow-run',
      [...WORKFLOW_RUN_STATES],
      'pending',
      ['completed', 'failed', 'canceled'],
      WORKFLOW_RUN_TRANSITIONS.map((t) => ({ from: t.from, to: t.to, label: t.event })),
    ),
  ];
}

function graphOf(
  id: MachineGraph['id'],
  states: string[],
  initial: string,
  final: string[],
  transitions: { from: string; to: string; label: string }[],
): MachineGraph {
  const edges = new Map<string, { from: string; to: string; labels: string[] }>();
  for (const t of transitions) {
    const key = `${t.from}\u0000${t.to}`;
    const edge = edges.get(key) ?? { from: t.from, to: t.to, labels: [] };
    if (!edge.labels.includes(t.label)) edge.labels.push(t.label);
    edges.set(key, edge);
  }
  return { id, states, initial, final, edges: [...edges.values()] };
}

function consoleItem(item: ItemRecord, now: number): ConsoleItem {
  return {
    id: item.id,
    workflow: `${item.workflow.id}@${item.workflow.version}`,
    state: item.state,
    stage: item.stage,
    hop: item.hop,
    hops: item.hops,
    costUsd: item.usage.costUsd,
    inputTokens: item.usage.inputTokens,
    outputTokens: item.usage.outputTokens,
    createdAt: item.createdAt,
    updatedAt: item.updatedAt,
    finishedAt: item.finishedAt,
    elapsedMs: Math.max(0, (item.finishedAt ?? now) - item.createdAt),
    failure: item.failure === null ? null : { code: item.failure.code, reason: clip(item.failure.reason) },
    approval: item.approval,
    output:
      item.output === null
        ? null
        : {
            state: item.output.state,
            summary: clip(outputSummary(item.output)),
            artifacts:
              item.output.state === 'completed' ? item.output.artifacts.map((a) => a.name ?? a.artifactId) : [],
          },
  };
}

function consoleHop(hop: HopRecord): ConsoleHop {
  return {
    seq: hop.seq,
    hop: hop.hop,
    attempt: hop.attempt,
    kind: hop.kind,
    stage: hop.stage,
    role: hop.role,
    state: hop.state,
    model: hop.model,
    inputTokens: hop.usage.inputTokens,
    outputTokens: hop.usage.outputTokens,
    costUsd: hop.usage.costUsd,
    elapsedMs: hop.usage.elapsedMs,
    error:
      hop.error === null
        ? null
        : {
            type: hop.error.type,
            message: clip(hop.error.message),
            // A handler's thrown error keeps its stack (bounded when kept): shown under the hop.
            ...(hop.error.stack === undefined ? {} : { stack: hop.error.stack }),
          },
    dispatchedAt: hop.dispatchedAt,
    finishedAt: hop.finishedAt,
    answer: hop.kind === 'query' ? answerText(hop.reply) : null,
  };
}

/** The text parts of a query's reply envelope, clipped. */
function answerText(reply: unknown): string | null {
  const parts = findParts(reply);
  if (parts === undefined) return null;
  const text = parts
    .filter((p): p is Extract<Part, { kind: 'text' }> => p.kind === 'text')
    .map((p) => p.text)
    .join('\n');
  return text === '' ? null : clip(text);
}

function findParts(value: unknown, depth = 0): Part[] | undefined {
  if (depth > 4 || value === null || typeof value !== 'object') return undefined;
  const record = value as Record<string, unknown>;
  if (Array.isArray(record.parts)) return record.parts as Part[];
  for (const key of ['result', 'output', 'message', 'reply']) {
    const found = findParts(record[key], depth + 1);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * The work item a dead letter belongs to. A hop's or a result's envelope
 * names it as its run; an approval carries it in its data; a creation
 * request has none yet (its run id is the request's key, not an item).
 */
function deadLetterItem(letter: DeadLetter): string | null {
  const envelope = letter.envelope as { headers?: { runId?: unknown }; message?: { parts?: unknown[] } };
  if (letter.role === ITEMS_ROLE) return null;
  if (letter.role === APPROVALS_ROLE) {
    const data = (envelope.message?.parts?.[0] as { data?: { itemId?: unknown } } | undefined)?.data;
    return typeof data?.itemId === 'string' ? data.itemId : null;
  }
  return typeof envelope.headers?.runId === 'string' ? envelope.headers.runId : null;
}

function consoleDeadLetter(letter: DeadLetter): ConsoleDeadLetter {
  const headers = (letter.envelope as { headers?: { hop?: unknown } }).headers;
  return {
    id: letter.id,
    role: letter.role,
    itemId: deadLetterItem(letter),
    hop: typeof headers?.hop === 'number' ? headers.hop : null,
    deliveries: letter.deliveries,
    error: { type: letter.lastError.type, message: clip(letter.lastError.message) },
    publishedAt: letter.publishedAt,
    deadAt: letter.deadAt,
  };
}

/** Fields of audit data that carry a secret a hop's worker holds (a continuation resumes a suspended hop). */
const SECRET_FIELDS = new Set(['continuation', 'continuationToken', 'token']);

/**
 * Audit data as the console shows it: secret fields replaced, and the item's
 * continuation tokens cut out of any string that embeds one (a query's
 * idempotency key does). The chain is verified on the stored rows.
 */
function redacted(value: unknown, secrets: readonly string[]): unknown {
  if (typeof value === 'string') {
    return secrets.reduce((text, secret) => text.split(secret).join('[redacted]'), value);
  }
  if (Array.isArray(value)) return value.map((v) => redacted(v, secrets));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([key, v]) => [
      key,
      SECRET_FIELDS.has(key) ? '[redacted]' : redacted(v, secrets),
    ]),
  );
}

function clip(text: string): string {
  return text.length <= MAX_SHOWN_TEXT ? text : `${text.slice(0, MAX_SHOWN_TEXT)}…`;
}

/** Streamed text parts joined into one (a chunk is a part), other parts as they are. */
function joinedText(parts: readonly Part[]): Part[] {
  const texts = parts.filter((p) => p.kind === 'text');
  const text = texts.map((p) => (p.kind === 'text' ? p.text : '')).join('');
  const others = parts.filter((p) => p.kind !== 'text');
  return texts.length === 0 ? others : [{ kind: 'text', text }, ...others];
}
