import { APPROVALS_ROLE, ITEMS_ROLE } from '../actors/coordinator/intake.js';
import type { DeadLetter, WorkQueue } from '../bus/work-queue.js';
import { type QueueView, type SystemSnapshot, queueViewOf, readSystemSnapshot } from '../inspect/system-snapshot.js';
import { TASK_TRANSITIONS } from '../machines/task-transitions.js';
import { WORKFLOW_RUN_TRANSITIONS } from '../machines/workflow-run-transitions.js';
import { AuditLog, type AuditVerification } from '../persistence/audit/chain.js';
import { SqliteCoordinatorStore } from '../persistence/coordinator/store.js';
import type { SqliteDatabase } from '../persistence/kernel/database.js';
import type { Part } from '../protocol/parts.js';
import { TASK_STATES } from '../protocol/task.js';
import { RESULTS_ROLE } from '../protocol/work-envelope.js';
import { WORKFLOW_RUN_STATES } from '../protocol/workflow.js';
import { outputSummary } from '../workflow/item-output.js';
import type { HopRecord, ItemRecord, ItemState } from '../workflow/records.js';

/**
 * What the console shows, read from a switchboard database opened read-only
 * (it reads while the broker, the bus and the Coordinator write) and from the
 * bus. Nothing here returns a capability token, a continuation token or an
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
  hops: ConsoleHop[];
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

export class ConsoleData {
  readonly #db: SqliteDatabase;
  readonly #bus: WorkQueue | undefined;
  readonly #store: SqliteCoordinatorStore | undefined;
  readonly #audit: AuditLog | undefined;

  constructor(db: SqliteDatabase, bus?: WorkQueue) {
    this.#db = db;
    this.#bus = bus;
    this.#store = this.#has('coord_items') ? new SqliteCoordinatorStore(db, { readOnly: true }) : undefined;
    this.#audit = this.#has('audit_log') ? new AuditLog(db, { readOnly: true }) : undefined;
  }

  /** Whether the file holds the Coordinator's tables (else only broker views have data). */
  get hasCoordinator(): boolean {
    return this.#store !== undefined;
  }

  /** A number that changes whenever another connection commits to the file (SQLite's `data_version`). */
  version(): number {
    return this.#db.pragma('data_version', { simple: true }) as number;
  }

  /** Counts of tasks, queues and items, as `switchboard top` shows them. */
  async overview(now = Date.now()): Promise<SystemSnapshot> {
    const snapshot = readSystemSnapshot(this.#db, { now, limit: 10 });
    if (this.#bus !== undefined && this.#bus.backend !== 'sqlite') snapshot.queues = await this.queues();
    return snapshot;
  }

  /** Every known role's queue: the workflows' roles and the bus's control roles. */
  async queues(): Promise<QueueView[]> {
    if (this.#bus === undefined) return readSystemSnapshot(this.#db).queues ?? [];
    const bus = this.#bus;
    return Promise.all(this.roles().map(async (role) => queueViewOf(await bus.stats(role))));
  }

  /** Roles the workflows of this file name, the roles hops went to, and the control roles. */
  roles(): string[] {
    const roles = new Set<string>(CONTROL_ROLES);
    if (this.#has('coord_definitions')) {
      for (const { body } of this.#db.prepare('SELECT body FROM coord_definitions').all() as { body: string }[]) {
        const definition = JSON.parse(body) as { stages?: Record<string, { role?: unknown }> };
        for (const stage of Object.values(definition.stages ?? {})) {
          if (typeof stage.role === 'string') roles.add(stage.role);
        }
      }
    }
    if (this.#has('coord_hops')) {
      for (const { role } of this.#db.prepare('SELECT DISTINCT role FROM coord_hops').all() as { role: string }[]) {
        roles.add(role);
      }
    }
    if (this.#has('bus_jobs')) {
      for (const { role } of this.#db.prepare('SELECT DISTINCT role FROM bus_jobs').all() as { role: string }[]) {
        roles.add(role);
      }
    }
    return [...roles].sort();
  }

  items(filter: { state?: ItemState; workflow?: string; limit?: number } = {}, now = Date.now()): ConsoleItem[] {
    if (this.#store === undefined) return [];
    const store = this.#store;
    const limit = Math.max(0, Math.min(filter.limit ?? 200, 1000));
    // Newest first, filtered and limited by SQLite: only the ids of the page are read, then each item.
    const where: string[] = [];
    const params: (string | number)[] = [];
    if (filter.state !== undefined) {
      where.push('state = ?');
      params.push(filter.state);
    }
    if (filter.workflow !== undefined) {
      where.push('workflow_id = ?');
      params.push(filter.workflow);
    }
    const ids = this.#db
      .prepare(
        `SELECT id FROM coord_items ${where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`}
         ORDER BY created_at DESC, id LIMIT ?`,
      )
      .all(...params, limit) as { id: string }[];
    return ids.flatMap(({ id }) => {
      const item = store.getItem(id);
      return item === undefined ? [] : [consoleItem(item, now)];
    });
  }

  /** Workflow ids with items (for the filter). */
  workflows(): string[] {
    if (!this.#has('coord_items')) return [];
    return (
      this.#db.prepare('SELECT DISTINCT workflow_id FROM coord_items ORDER BY workflow_id').all() as {
        workflow_id: string;
      }[]
    ).map((r) => r.workflow_id);
  }

  item(id: string, now = Date.now()): ConsoleItemDetail | undefined {
    const item = this.#store?.getItem(id);
    if (item === undefined || this.#store === undefined) return undefined;
    const records = this.#store.listHops(id);
    const hops = records.map(consoleHop);
    const secrets = records.flatMap((hop) => (hop.continuation === null ? [] : [hop.continuation]));
    const audit = (this.#audit?.list({ itemId: id }) ?? []).map((row) => ({
      seq: row.seq,
      at: row.at,
      kind: row.kind,
      hop: row.hop,
      actor: row.actor,
      data: redacted(row.data, secrets),
      hash: row.hash,
    }));
    return { item: consoleItem(item, now), hops, audit, chain: this.chain() };
  }

  /** The last verification and the head it covered: the chain is verified again only once it has moved. */
  #verified: { seq: number; hash: string; chain: ConsoleItemDetail['chain'] } | undefined;

  /** The audit chain's verification (of the whole chain, cached until its head moves). */
  chain(): ConsoleItemDetail['chain'] {
    if (this.#audit === undefined) return { ok: true, entries: 0, head: null, problem: null };
    const head = this.#audit.head();
    if (this.#verified?.seq === head.seq && this.#verified.hash === head.hash) return this.#verified.chain;
    const chain = this.#verify(this.#audit);
    this.#verified = { seq: head.seq, hash: head.hash, chain };
    return chain;
  }

  #verify(audit: AuditLog): ConsoleItemDetail['chain'] {
    const verification: AuditVerification = audit.verifyChain();
    if (verification.ok) {
      return { ok: true, entries: verification.entries, head: verification.head.hash, problem: null };
    }
    return {
      ok: false,
      entries: audit.head().seq,
      head: null,
      problem: `${verification.reason} at row ${verification.seq}: ${verification.detail}`,
    };
  }

  /** Items waiting at an approval gate (or for a governance approval), oldest first. */
  approvals(now = Date.now()): ConsoleItem[] {
    if (this.#store === undefined) return [];
    return this.#store
      .listItems({ state: 'awaiting-approval', limit: 100_000 })
      .sort((a, b) => a.updatedAt - b.updatedAt)
      .map((item) => consoleItem(item, now));
  }

  /** A role's dead letters (oldest first), without their envelopes' bodies. */
  async deadLetters(role: string, limit = 100): Promise<ConsoleDeadLetter[]> {
    if (this.#bus === undefined) return [];
    return (await this.#bus.deadLetters.list(role, { limit })).map(consoleDeadLetter);
  }

  agents(): ConsoleAgent[] {
    if (!this.#has('a2a_agents')) return [];
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

  tasks(filter: { state?: string; limit?: number } = {}): ConsoleTask[] {
    if (!this.#has('a2a_tasks')) return [];
    const limit = filter.limit ?? 200;
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

  /** The state of one broker task (for the task machine's diagram). */
  taskState(taskId: string): string | undefined {
    if (!this.#has('a2a_tasks')) return undefined;
    const row = this.#db.prepare('SELECT state FROM a2a_tasks WHERE task_id = ?').get(taskId) as
      | { state: string }
      | undefined;
    return row?.state;
  }

  #has(table: string): boolean {
    return this.#db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table) !== undefined;
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
    error: hop.error === null ? null : { type: hop.error.type, message: clip(hop.error.message) },
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
