import type { AgentCard, AgentKind, Skill } from '../../protocol/agent.js';
import type { DurableEvent, NotificationMethod, PushConfig } from '../../protocol/events.js';
import type { Artifact, Message, Task, TaskState, TaskStatus } from '../../protocol/task.js';
import type { SqliteDatabase } from '../kernel/database.js';
import { COMPACT_BODY_MAX_BYTES, MESSAGE_BYTES, type MessageRow } from './message-rows.js';
import { type HistoryTail, RecentHistories } from './recent-histories.js';

/**
 * The JSON text of an event's params exactly as `appendEvent` serialized it
 * for the wire: a non-enumerable property of the event object (invisible to
 * `JSON.stringify` and to deep equality). The row keeps the same text with
 * the status's message (a row of `a2a_messages`) as a reference
 * (`MESSAGE_REF`), rebuilt on read.
 */
export const LOGGED_PARAMS_TEXT: unique symbol = Symbol('switchboard.loggedParamsText');

/** The params of `event` as JSON text: the logged text when it has one, else serialized now. */
export function paramsText(event: DurableEvent): string {
  return (event as { [LOGGED_PARAMS_TEXT]?: string })[LOGGED_PARAMS_TEXT] ?? JSON.stringify(event.params);
}

/**
 * The key that stands for a status's message in a stored status or event:
 * `"message":{"$m":"<messageId>"}`, the message being a row of
 * `a2a_messages` of the same task. A message on the wire always has `kind`,
 * so the reference is never taken for one. Rows written before (schema 13)
 * hold the message whole and are read as they are.
 */
export const MESSAGE_REF = '$m';
/**
 * The key that stands for a status's message by its position in its task's
 * history (`"message":{"$p":2}`, a row of `a2a_messages` found by its
 * primary key): what the broker writes since schema 15, when the message's
 * row is there. `$m` is written otherwise, and read as before.
 */
export const MESSAGE_POSITION_REF = '$p';

/** A stored reference to a message of the same task: its id (`$m`) or its position (`$p`). */
type MessageRef = string | number;

/** The object a reference is stored as, in the message's place. */
function refObject(ref: MessageRef): Record<string, unknown> {
  return typeof ref === 'number' ? { [MESSAGE_POSITION_REF]: ref } : { [MESSAGE_REF]: ref };
}

/**
 * The stored JSON text of a status: its message (a row of `a2a_messages`) as
 * a reference, in the key's place. Serialized from a copy with the reference
 * in it, never by searching the whole text for the message's: a message may
 * be tens of MiB.
 */
function storedStatus(
  status: TaskStatus,
  refOf: (message: Message) => MessageRef,
): TaskStatus | Record<string, unknown> {
  const message = status.message;
  return message === undefined ? status : { ...status, message: refObject(refOf(message)) };
}

/** An event's params with the status it carries holding its message as a reference. */
function withStatusRef(event: DurableEvent, refOf: (message: Message) => MessageRef): unknown {
  if (event.method === 'a2a.push') {
    const status = event.params.status;
    return status.message === undefined ? event.params : { ...event.params, status: storedStatus(status, refOf) };
  }
  const inner = event.params.event;
  if (inner.kind !== 'status-update' || inner.status.message === undefined) return event.params;
  return { ...event.params, event: { ...inner, status: storedStatus(inner.status, refOf) } };
}

/** A task event's keys in their wire order; the row's columns hold `recipientName` and `seq`. */
const TASK_EVENT_KEYS = ['recipient', 'recipientName', 'contextId', 'seq', 'event'] as const;
/** A status-update's keys in their wire order (`statusEvent`). */
const STATUS_UPDATE_KEYS = ['kind', 'taskId', 'contextId', 'status', 'final'] as const;

/** Whether `keys` are `expected`, in that order. */
function keysAre(keys: readonly string[], expected: readonly string[]): boolean {
  return keys.length === expected.length && keys.every((key, i) => key === expected[i]);
}

/**
 * A status's state, timestamp and message reference, when its keys are
 * those and in the wire order (`state`, `timestamp`, then `message` when it
 * has one, held as a reference): else undefined.
 */
function plainStatus(status: unknown): { state: string; timestamp: string; ref: MessageRef | undefined } | undefined {
  if (status === null || typeof status !== 'object') return undefined;
  const s = status as Record<string, unknown>;
  const keys = Object.keys(s);
  if (typeof s.state !== 'string' || typeof s.timestamp !== 'string') return undefined;
  if (keysAre(keys, ['state', 'timestamp'])) return { state: s.state, timestamp: s.timestamp, ref: undefined };
  if (!keysAre(keys, ['state', 'timestamp', 'message'])) return undefined;
  const ref = messageRefOf(s.message);
  return ref === undefined ? undefined : { state: s.state, timestamp: s.timestamp, ref };
}

/**
 * An event's params as stored: the status's message as a reference and, for
 * a task event whose keys are in their wire order, without what the row's
 * columns hold (`recipientName`, `seq`, the event's `taskId`):
 * `{recipient, contextId, event: {kind, ...}}`, rebuilt on read in the same order
 * (`paramsOfRow`). A status-update of the task's own context whose status
 * holds only its state, timestamp and message (`statusEvent`'s) is stored as
 * the array of its values, `[recipient, contextId, state, timestamp, final,
 * message?]` (0 or 1 for `final`; the message's position, or its id):
 * a third of the bytes. Since schema 16 the array holds, where it can, the
 * recipient as its registration's integer key (`a2a_agents.agent`, a
 * number), the contextId as 0 when it is the task's, and the timestamp as
 * milliseconds when it is the canonical ISO form of that instant
 * (`compactValues`). The same object when nothing changes.
 */
function storedParams(
  event: DurableEvent,
  party: Party,
  task: { taskId: string; contextId: string },
  refOf: (message: Message) => MessageRef,
  agentKeyOf: (agentId: string) => number | undefined,
): unknown {
  const taskId = task.taskId;
  const params = withStatusRef(event, refOf);
  if (event.method !== 'a2a.task.event') return params;
  const p = params as DurableEvent['params'] & { event: Record<string, unknown> };
  const eventKeys = Object.keys(p.event);
  const compact =
    keysAre(Object.keys(p), TASK_EVENT_KEYS) &&
    'recipientName' in p &&
    p.recipientName === party.name &&
    p.seq === event.seq &&
    eventKeys[0] === 'kind' &&
    eventKeys[1] === 'taskId' &&
    p.event.taskId === taskId;
  if (!compact) return params;
  const status = plainStatus(p.event.status);
  if (
    p.event.kind === 'status-update' &&
    keysAre(eventKeys, STATUS_UPDATE_KEYS) &&
    p.event.contextId === p.contextId &&
    typeof p.event.final === 'boolean' &&
    status !== undefined
  ) {
    const values = [
      agentKeyOf(p.recipient) ?? p.recipient,
      p.contextId === task.contextId ? 0 : p.contextId,
      status.state,
      millisOf(status.timestamp) ?? status.timestamp,
      p.event.final ? 1 : 0,
    ];
    return status.ref === undefined ? values : [...values, status.ref];
  }
  const { kind, taskId: _taskId, ...rest } = p.event;
  return { recipient: p.recipient, contextId: p.contextId, event: { kind, ...rest } };
}

/** The params of a stored event, as on the wire (a compact task event rebuilt; any other as it is). */
function paramsOfRow(
  row: { seq: number; method: NotificationMethod; task_id: string; context_id: string; params: string },
  party: Party,
  agentIdOf: (key: number) => string | undefined,
) {
  const stored = JSON.parse(row.params) as Record<string, unknown> | unknown[];
  if (Array.isArray(stored)) {
    const [recipientValue, contextValue, state, time, final, ref] = stored;
    const recipient = typeof recipientValue === 'number' ? agentIdOf(recipientValue) : recipientValue;
    const contextId = contextValue === 0 ? row.context_id : contextValue;
    const timestamp = typeof time === 'number' ? new Date(time).toISOString() : time;
    const status: Record<string, unknown> = { state, timestamp };
    if (typeof ref === 'number' || typeof ref === 'string') status.message = refObject(ref);
    return {
      recipient,
      recipientName: party.name,
      contextId,
      seq: row.seq,
      event: { kind: 'status-update', taskId: row.task_id, contextId, status, final: final === 1 },
    };
  }
  if (row.method !== 'a2a.task.event' || 'seq' in stored) return stored;
  const { kind, ...rest } = stored.event as Record<string, unknown>;
  return {
    recipient: stored.recipient,
    recipientName: party.name,
    contextId: stored.contextId,
    seq: row.seq,
    event: { kind, taskId: row.task_id, ...rest },
  };
}

/** The milliseconds of an instant written in its canonical ISO form (`toISOString`'s), else undefined. */
function millisOf(timestamp: string): number | undefined {
  const ms = Date.parse(timestamp);
  return Number.isFinite(ms) && new Date(ms).toISOString() === timestamp ? ms : undefined;
}

/** The message a stored status's `message` refers to (its id or its position), when it is a reference. */
function messageRefOf(message: unknown): MessageRef | undefined {
  if (message === null || typeof message !== 'object' || 'kind' in message) return undefined;
  const ref = (message as Record<string, unknown>)[MESSAGE_REF];
  if (typeof ref === 'string') return ref;
  const position = (message as Record<string, unknown>)[MESSAGE_POSITION_REF];
  return typeof position === 'number' ? position : undefined;
}

/** Registrations whose integer keys the store remembers at most (it forgets them all past this). */
const AGENT_KEYS_KEPT = 4096;

/** A UUID in its canonical (lowercase) text form: stored as its 16 bytes. */
const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * A message id as its column holds it (since schema 16, `a2a_messages.message_id`
 * and `a2a_tasks.creation_message_id`): the 16 bytes of a UUID in its
 * canonical form (what the broker makes), any other id as its text. One id
 * has one stored form, so that a row is found by it.
 */
export function idKey(id: string): string | Buffer {
  return CANONICAL_UUID.test(id) ? Buffer.from(id.replaceAll('-', ''), 'hex') : id;
}

/** The id a stored message id stands for (`idKey`'s inverse). */
export function idOf(value: string | Uint8Array): string {
  if (typeof value === 'string') return value;
  const h = Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** The columns a message is rebuilt from (its task's id is the caller's). */
const MESSAGE_COLUMNS = 'message_id, role, from_name, body';
/** A task's integer key (`a2a_tasks.task`, what its messages and events hold), from its id. */
const TASK_KEY = '(SELECT task FROM a2a_tasks WHERE task_id = ?)';

/**
 * The body of a message row: the message without what the row's columns
 * hold (`kind`, `messageId`, `role`, `from`, `taskId`), in its order, and
 * (since schema 15) without its `contextId` when that is its task's and
 * comes first (as `stamp` makes it).
 */
function messageBody(message: Message, taskContextId: string | undefined): string {
  const { kind: _kind, messageId: _id, role: _role, from: _from, taskId: _task, ...rest } = message;
  if (taskContextId !== undefined && rest.contextId === taskContextId && Object.keys(rest)[0] === 'contextId') {
    const { contextId: _context, ...others } = rest;
    return compactBody(others) ?? JSON.stringify(others);
  }
  return JSON.stringify(rest);
}

/**
 * Since schema 16: the body of a message that holds only its timestamp
 * (the canonical ISO form of an instant) and one text part, in that order
 * (what most messages are), as `[milliseconds, text]`: a fourth of the bytes
 * of a 200-character text's body. Else undefined.
 */
function compactBody(rest: Record<string, unknown>): string | undefined {
  const keys = Object.keys(rest);
  if (keys.length !== 2 || keys[0] !== 'timestamp' || keys[1] !== 'parts') return undefined;
  const { timestamp, parts } = rest as { timestamp: unknown; parts: unknown };
  if (typeof timestamp !== 'string' || !Array.isArray(parts) || parts.length !== 1) return undefined;
  const ms = millisOf(timestamp);
  if (ms === undefined || ms < 1e12 || ms >= 1e13) return undefined;
  const part = parts[0] as Record<string, unknown>;
  if (part === null || typeof part !== 'object' || typeof part.text !== 'string' || part.kind !== 'text')
    return undefined;
  if (!keysAre(Object.keys(part), ['kind', 'text'])) return undefined;
  const body = JSON.stringify([ms, part.text]);
  return Buffer.byteLength(body) < COMPACT_BODY_MAX_BYTES ? body : undefined;
}

/**
 * The message of a row, as the wire has it (the same keys in the same
 * order as `stamp` made them); a body without `contextId` gets its task's
 * (`taskContextId`). A row of schema 13 holds the whole message (`kind`
 * first): it is read as it is.
 */
function messageOfRow(row: MessageRow, taskId: string, taskContextId: string): Message {
  const parsed = JSON.parse(row.body) as Partial<Message> | [number, string];
  const body = Array.isArray(parsed)
    ? { timestamp: new Date(parsed[0]).toISOString(), parts: [{ kind: 'text', text: parsed[1] }] }
    : parsed;
  if ('kind' in body && body.kind !== undefined) return body as Message;
  const head = {
    kind: 'message',
    messageId: idOf(row.message_id),
    role: row.role,
    from: row.from_name,
    taskId,
  };
  return ('contextId' in body ? { ...head, ...body } : { ...head, contextId: taskContextId, ...body }) as Message;
}

/** A party of a task: `(contextId, name)`. Survives re-registrations and restarts. */
export interface Party {
  contextId: string;
  name: string;
}

export interface AgentRow {
  agentId: string;
  contextId: string;
  name: string;
  kind: AgentKind;
  description: string;
  skills: Skill[];
  sends: number;
  registeredAt: string;
}

/** The scalar columns of a task: what the broker checks before touching history. */
export interface TaskHead {
  taskId: string;
  contextId: string;
  requesterName: string;
  agentContextId: string;
  agentName: string;
  state: TaskState;
  status: TaskStatus;
  historyCount: number;
  createdAt: string;
  updatedAt: string;
}

export interface TaskActorRow {
  taskId: string;
  machineVersion: number;
  snapshot: string;
  state: TaskState;
}

interface TaskHeadRaw {
  /** The task's integer key (`a2a_tasks.task`). */
  task: number;
  task_id: string;
  context_id: string;
  requester_name: string;
  agent_context_id: string;
  agent_name: string;
  state: TaskState;
  status: string;
  history_count: number;
  created_at: string;
  updated_at: string;
  metadata: string | null;
}

const TASK_HEAD_COLUMNS =
  'task, task_id, context_id, requester_name, agent_context_id, agent_name, state, status, history_count, created_at, updated_at, metadata';

/**
 * The stored JSON text of a task's status (`a2a_tasks.status`): its message
 * as a reference and, when it holds only its state, timestamp and message
 * in that order with the timestamp the row's `updated_at`, without the two
 * (the row's columns hold them): `{}`, `{"message":{"$m":...}}`, or (since
 * schema 16) the message's position alone, such as `2`. Rebuilt by
 * `statusOfRow`.
 */
function storedHeadStatus(head: TaskHead, refOf: (message: Message) => MessageRef): string {
  const stored = storedStatus(head.status, refOf);
  const plain = plainStatus(stored);
  if (plain === undefined || plain.timestamp !== head.updatedAt || plain.state !== head.status.state) {
    return JSON.stringify(stored);
  }
  if (plain.ref === undefined) return '{}';
  // Since schema 16, a message by its position is the number alone.
  return typeof plain.ref === 'number' ? String(plain.ref) : JSON.stringify({ message: refObject(plain.ref) });
}

/** A task row's status: a compact one (`storedHeadStatus`) rebuilt from the row's columns; any other as it is. */
function statusOfRow(raw: TaskHeadRaw): TaskStatus {
  const parsed = JSON.parse(raw.status) as Record<string, unknown> | number;
  const stored = typeof parsed === 'number' ? { message: refObject(parsed) } : parsed;
  if ('state' in stored) return stored as unknown as TaskStatus;
  return { state: raw.state, timestamp: raw.updated_at, ...stored } as TaskStatus;
}

function toHead(
  raw: TaskHeadRaw,
  messageOf: (taskId: string, contextId: string, ref: MessageRef) => Message | undefined,
): TaskHead {
  const status = statusOfRow(raw);
  const ref = messageRefOf(status.message);
  if (ref !== undefined) {
    const message = messageOf(raw.task_id, raw.context_id, ref);
    if (message !== undefined) status.message = message;
  }
  return {
    taskId: raw.task_id,
    contextId: raw.context_id,
    requesterName: raw.requester_name,
    agentContextId: raw.agent_context_id,
    agentName: raw.agent_name,
    state: raw.state,
    status,
    historyCount: raw.history_count,
    createdAt: raw.created_at,
    updatedAt: raw.updated_at,
  };
}

/**
 * The broker's rows, behind prepared statements. Every method is synchronous
 * and runs inside the caller's transaction; the store never opens one itself.
 * Row bodies are the wire shapes as JSON, written only by the broker after
 * schema validation, so they are read back without re-validation.
 */
export class A2AStore {
  private readonly s;

  constructor(db: SqliteDatabase) {
    this.s = {
      insertAgent: db.prepare(
        `INSERT INTO a2a_agents (agent_id, context_id, name, kind, description, skills, sends, registered_at)
         VALUES (@agentId, @contextId, @name, @kind, @description, @skills, @sends, @registeredAt)`,
      ),
      endAgent: db.prepare(
        'UPDATE a2a_agents SET ended_at = ?, end_reason = ? WHERE agent_id = ? AND ended_at IS NULL',
      ),
      endAllAgents: db.prepare("UPDATE a2a_agents SET ended_at = ?, end_reason = 'restart' WHERE ended_at IS NULL"),
      setAgentSends: db.prepare('UPDATE a2a_agents SET sends = ? WHERE agent_id = ?'),
      latestAgentOfParty: db.prepare(
        'SELECT agent_id FROM a2a_agents WHERE context_id = ? AND name = ? ORDER BY registered_at DESC, agent_id DESC LIMIT 1',
      ),
      insertTask: db.prepare(
        `INSERT INTO a2a_tasks (task_id, context_id, requester_name, agent_context_id, agent_name, state, status,
           creation_message_id, history_count, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      taskHead: db.prepare(`SELECT ${TASK_HEAD_COLUMNS} FROM a2a_tasks WHERE task_id = ?`),
      taskKey: db.prepare('SELECT task, context_id FROM a2a_tasks WHERE task_id = ?'),
      agentKey: db.prepare('SELECT agent FROM a2a_agents WHERE agent_id = ?'),
      agentIdOfKey: db.prepare('SELECT agent_id FROM a2a_agents WHERE agent = ?'),
      createdTask: db.prepare(
        'SELECT task_id FROM a2a_tasks WHERE context_id = ? AND requester_name = ? AND creation_message_id = ? LIMIT 1',
      ),
      countTasksInContext: db.prepare('SELECT COUNT(*) AS n FROM a2a_tasks WHERE context_id = ?'),
      writeHead: db.prepare(
        'UPDATE a2a_tasks SET state = ?, status = ?, history_count = ?, updated_at = ? WHERE task_id = ?',
      ),
      insertMessage: db.prepare(
        `INSERT INTO a2a_messages (task, message_id, position, role, from_name, body, parent_task_id)
         VALUES (${TASK_KEY}, ?, ?, ?, ?, ?, ?)`,
      ),
      hasMessage: db.prepare(`SELECT 1 FROM a2a_messages WHERE task = ${TASK_KEY} AND message_id = ?`),
      message: db.prepare(`SELECT ${MESSAGE_COLUMNS} FROM a2a_messages WHERE task = ${TASK_KEY} AND message_id = ?`),
      messageAt: db.prepare(`SELECT ${MESSAGE_COLUMNS} FROM a2a_messages WHERE task = ${TASK_KEY} AND position = ?`),
      positionOf: db.prepare(`SELECT position FROM a2a_messages WHERE task = ${TASK_KEY} AND message_id = ?`),
      history: db.prepare(`SELECT ${MESSAGE_COLUMNS} FROM a2a_messages WHERE task = ${TASK_KEY} ORDER BY position`),
      historyTail: db.prepare(
        `SELECT ${MESSAGE_COLUMNS} FROM (SELECT ${MESSAGE_COLUMNS}, position FROM a2a_messages WHERE task = ${TASK_KEY} ORDER BY position DESC LIMIT ?) ORDER BY position`,
      ),
      artifacts: db.prepare('SELECT body FROM a2a_artifacts WHERE task_id = ? ORDER BY position'),
      // octet_length reads a value's size from its record header, not the value itself.
      historyTailBytes: db.prepare(
        `SELECT COALESCE(SUM(n), 0) AS n FROM (SELECT ${MESSAGE_BYTES} AS n FROM a2a_messages WHERE task = ${TASK_KEY} ORDER BY position DESC LIMIT ?)`,
      ),
      artifactSizes: db.prepare(
        'SELECT COALESCE(SUM(octet_length(body)), 0) AS n, COUNT(*) AS count FROM a2a_artifacts WHERE task_id = ?',
      ),
      historyAndArtifactSizes: db.prepare(
        `SELECT (SELECT COALESCE(SUM(${MESSAGE_BYTES}), 0) FROM a2a_messages WHERE task = ${TASK_KEY}) AS history,
           COALESCE(SUM(octet_length(body)), 0) AS n, COUNT(*) AS count FROM a2a_artifacts WHERE task_id = ?`,
      ),
      artifact: db.prepare('SELECT body FROM a2a_artifacts WHERE task_id = ? AND artifact_id = ?'),
      insertArtifact: db.prepare(
        `INSERT INTO a2a_artifacts (task_id, artifact_id, position, body, updated_at)
         VALUES (?, ?, (SELECT COUNT(*) + 1 FROM a2a_artifacts WHERE task_id = ?), ?, ?)`,
      ),
      updateArtifact: db.prepare(
        'UPDATE a2a_artifacts SET body = ?, updated_at = ? WHERE task_id = ? AND artifact_id = ?',
      ),
      tasksAsRequester: db.prepare(
        `SELECT ${TASK_HEAD_COLUMNS} FROM a2a_tasks WHERE context_id = ? AND requester_name = ? ORDER BY rowid`,
      ),
      tasksAsWorker: db.prepare(
        `SELECT ${TASK_HEAD_COLUMNS} FROM a2a_tasks WHERE agent_context_id = ? AND agent_name = ? ORDER BY rowid`,
      ),
      tasksAsEither: db.prepare(
        `SELECT ${TASK_HEAD_COLUMNS} FROM a2a_tasks
         WHERE (context_id = @contextId AND requester_name = @name) OR (agent_context_id = @contextId AND agent_name = @name)
         ORDER BY rowid`,
      ),
      openAsRequester: db.prepare(
        `SELECT ${TASK_HEAD_COLUMNS} FROM a2a_tasks WHERE context_id = ? AND requester_name = ?
         AND state IN ('submitted', 'working', 'input-required', 'auth-required') ORDER BY rowid`,
      ),
      openAsWorker: db.prepare(
        `SELECT ${TASK_HEAD_COLUMNS} FROM a2a_tasks WHERE agent_context_id = ? AND agent_name = ?
         AND state IN ('submitted', 'working', 'input-required', 'auth-required') ORDER BY rowid`,
      ),
      pushConfig: db.prepare('SELECT config FROM a2a_push_configs WHERE task_id = ?'),
      setPushConfig: db.prepare(
        `INSERT INTO a2a_push_configs (task_id, config, set_by_context_id, set_by_name, updated_at)
         VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (task_id) DO UPDATE SET config = excluded.config, set_by_context_id = excluded.set_by_context_id,
           set_by_name = excluded.set_by_name, updated_at = excluded.updated_at`,
      ),
      // The log's last seq, or the seq it was cut through when a prune took every event of it: never reused.
      lastSeq: db.prepare(
        `SELECT MAX(
           COALESCE((SELECT MAX(seq) FROM a2a_events WHERE party_context_id = @contextId AND party_name = @name), 0),
           COALESCE((SELECT floor FROM a2a_event_floors WHERE party_context_id = @contextId AND party_name = @name), 0)
         ) AS seq`,
      ),
      insertEvent: db.prepare(
        `INSERT INTO a2a_events (party_context_id, party_name, seq, method, task, params, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ),
      eventsSince: db.prepare(
        `SELECT e.seq, e.method, t.task_id, t.context_id, e.params
         FROM a2a_events e JOIN a2a_tasks t ON t.task = e.task
         WHERE e.party_context_id = ? AND e.party_name = ? AND e.seq > ?
         ORDER BY e.seq LIMIT ?`,
      ),
      putActor: db.prepare(
        `INSERT INTO a2a_task_actors (task_id, machine_version, snapshot) VALUES (?, ?, ?)
         ON CONFLICT (task_id) DO UPDATE SET machine_version = excluded.machine_version, snapshot = excluded.snapshot`,
      ),
      deleteActor: db.prepare('DELETE FROM a2a_task_actors WHERE task_id = ?'),
      allActors: db.prepare(
        `SELECT a.task_id, a.machine_version, a.snapshot, t.state
         FROM a2a_task_actors a JOIN a2a_tasks t ON t.task_id = a.task_id`,
      ),
      liveTasksWithoutActor: db.prepare(
        `SELECT task_id, state FROM a2a_tasks t
         WHERE state IN ('submitted', 'working', 'input-required', 'auth-required')
         AND NOT EXISTS (SELECT 1 FROM a2a_task_actors a WHERE a.task_id = t.task_id)`,
      ),
    };
    this.mayHavePushConfigs = db.prepare('SELECT 1 FROM a2a_push_configs LIMIT 1').get() !== undefined;
  }

  /** A message of a task's history, by id or position (what a stored reference names). */
  private readonly messageOf = (taskId: string, contextId: string, ref: MessageRef): Message | undefined => {
    const row = (
      typeof ref === 'number' ? this.s.messageAt.get(taskId, ref) : this.s.message.get(taskId, idKey(ref))
    ) as MessageRow | undefined;
    return row === undefined ? undefined : messageOfRow(row, taskId, contextId);
  };

  /**
   * What the store remembers of rows it wrote or read, so as not to read
   * them again: the last message appended (the one the status written next
   * usually carries), the integer key of the last task written or read (its
   * events are written next), and registrations' integer keys. Each is a
   * row of the database as the current transaction sees it: the broker
   * forgets them all (`forgetHints`) whenever a call's writes are rolled
   * back and whenever rows are deleted.
   */
  private lastAppended: { taskId: string; messageId: string; position: number } | undefined;
  private lastTask: { taskId: string; key: number; contextId: string } | undefined;
  private readonly agentKeys = new Map<string, number>();
  /** The histories of the tasks this store created, while they are whole (see `RecentHistories`). */
  private readonly histories = new RecentHistories();

  /**
   * False while the file has never held a push config since the store was
   * made: a task's is then not looked for (most brokers never have one).
   * Set by the first one written, rolled back or not, and kept.
   */
  private mayHavePushConfigs: boolean;

  /** Forgets every row remembered (see `lastAppended`): after a rollback, after a delete. */
  forgetHints(): void {
    this.lastAppended = undefined;
    this.lastTask = undefined;
    this.agentKeys.clear();
    this.histories.forget();
  }

  /**
   * How a status of the task stores its message: by position when its row is
   * there (the one just appended, else looked for among the task's rows), by
   * id when it is not (yet).
   */
  private refOf(taskId: string): (message: Message) => MessageRef {
    return (message) => {
      const last = this.lastAppended;
      if (last !== undefined && last.taskId === taskId && last.messageId === message.messageId) return last.position;
      const row = this.s.positionOf.get(taskId, idKey(message.messageId)) as { position: number } | undefined;
      return row?.position ?? message.messageId;
    };
  }

  /** A registration's integer key (`a2a_agents.agent`), from its agentId. */
  private readonly agentKeyOf = (agentId: string): number | undefined => {
    const known = this.agentKeys.get(agentId);
    if (known !== undefined) return known;
    const key = (this.s.agentKey.get(agentId) as { agent: number } | undefined)?.agent;
    if (key !== undefined) {
      if (this.agentKeys.size >= AGENT_KEYS_KEPT) this.agentKeys.clear();
      this.agentKeys.set(agentId, key);
    }
    return key;
  };

  /** A task's integer key and contextId: the last task written or read, else its row. */
  private taskKeyOf(taskId: string): { key: number; contextId: string } | undefined {
    if (this.lastTask?.taskId === taskId) return this.lastTask;
    const row = this.s.taskKey.get(taskId) as { task: number; context_id: string } | undefined;
    if (row === undefined) return undefined;
    this.lastTask = { taskId, key: row.task, contextId: row.context_id };
    return this.lastTask;
  }

  private head(raw: TaskHeadRaw): TaskHead {
    this.lastTask = { taskId: raw.task_id, key: raw.task, contextId: raw.context_id };
    return toHead(raw, this.messageOf);
  }

  // ---- agents ----

  insertAgent(row: AgentRow): void {
    this.s.insertAgent.run({ ...row, skills: JSON.stringify(row.skills) });
  }

  endAgent(agentId: string, at: string, reason: 'deregistered' | 'restart' | 'disconnected'): void {
    this.s.endAgent.run(at, reason, agentId);
  }

  /** Ends every registration left open by a previous run (tokens died with it). */
  endAllAgents(at: string): number {
    return this.s.endAllAgents.run(at).changes;
  }

  setAgentSends(agentId: string, sends: number): void {
    this.s.setAgentSends.run(sends, agentId);
  }

  /** The agentId of the party's most recent registration, live or not. */
  latestAgentIdOfParty(party: Party): string | undefined {
    const row = this.s.latestAgentOfParty.get(party.contextId, party.name) as { agent_id: string } | undefined;
    return row?.agent_id;
  }

  // ---- tasks ----

  /** A new task row; its messages follow with `appendMessage`. */
  insertTask(head: TaskHead, creationMessageId: string): void {
    // Positional parameters: binding by name looks each one up in an object, per call.
    const { lastInsertRowid } = this.s.insertTask.run(
      head.taskId,
      head.contextId,
      head.requesterName,
      head.agentContextId,
      head.agentName,
      head.status.state,
      storedHeadStatus(head, this.refOf(head.taskId)),
      idKey(creationMessageId),
      head.historyCount,
      head.createdAt,
      head.updatedAt,
    );
    this.lastTask = { taskId: head.taskId, key: Number(lastInsertRowid), contextId: head.contextId };
  }

  taskHead(taskId: string): TaskHead | undefined {
    const raw = this.s.taskHead.get(taskId) as TaskHeadRaw | undefined;
    return raw === undefined ? undefined : this.head(raw);
  }

  /** The task a requester created with this message id, if any. */
  createdTaskId(requester: Party, messageId: string): string | undefined {
    const row = this.s.createdTask.get(requester.contextId, requester.name, idKey(messageId)) as
      | { task_id: string }
      | undefined;
    return row?.task_id;
  }

  countTasksInContext(contextId: string): number {
    return (this.s.countTasksInContext.get(contextId) as { n: number }).n;
  }

  /** Writes a task's mutable columns (state, status, history count, updatedAt) in one statement. */
  writeHead(head: TaskHead): void {
    this.s.writeHead.run(
      head.status.state,
      storedHeadStatus(head, this.refOf(head.taskId)),
      head.historyCount,
      head.updatedAt,
      head.taskId,
    );
  }

  /**
   * Adds a message at `position` (1-based); the caller writes the new
   * `historyCount` with the head. `taskContextId`, the task's contextId: the
   * row leaves the message's out when it is the same.
   */
  appendMessage(message: Message, position: number, taskContextId?: string): void {
    const row: MessageRow = {
      message_id: idKey(message.messageId),
      role: message.role,
      from_name: message.from,
      body: messageBody(message, taskContextId),
    };
    this.s.insertMessage.run(
      message.taskId,
      row.message_id,
      position,
      row.role,
      row.from_name,
      row.body,
      parentTaskOf(message),
    );
    this.lastAppended = { taskId: message.taskId, messageId: message.messageId, position };
    this.histories.appended(message.taskId, position, row);
  }

  hasMessage(taskId: string, messageId: string): boolean {
    return this.s.hasMessage.get(taskId, idKey(messageId)) !== undefined;
  }

  /**
   * Bytes of the stored messages and artifacts `loadTask(head, historyLength)`
   * would return, read from the rows' sizes without loading them: what an
   * answer carrying the task weighs, before it is built.
   */
  taskBytes(head: TaskHead, historyLength?: number): number {
    return this.sizes(head, historyLength).bytes;
  }

  /**
   * The task as `loadTask` returns it when its answer weighs at most
   * `maxBytes` (`taskBytes`), else that weight, and nothing is loaded.
   */
  taskWithin(head: TaskHead, historyLength: number | undefined, maxBytes: number): Task | number {
    const { bytes, artifacts, kept } = this.sizes(head, historyLength);
    return bytes > maxBytes ? bytes : this.taskOf(head, historyLength, artifacts, kept);
  }

  /**
   * `taskBytes`, how many artifacts the task has, and the kept tail of its
   * history (if any): one statement when the whole history counts, none when kept.
   */
  private sizes(
    head: TaskHead,
    historyLength: number | undefined,
  ): { bytes: number; artifacts: number; kept: HistoryTail | undefined } {
    // A history kept whole (a task this store created, without artifacts): its rows' sizes are in hand.
    const kept = this.histories.tail(head.taskId, head.historyCount, historyLength);
    let history: number;
    let artifacts: { n: number; count: number };
    if (kept !== undefined) {
      history = kept.bytes;
      artifacts = { n: 0, count: 0 };
    } else if (historyLength === undefined) {
      const row = this.s.historyAndArtifactSizes.get(head.taskId, head.taskId) as {
        history: number;
        n: number;
        count: number;
      };
      history = row.history;
      artifacts = row;
    } else {
      history = historyLength === 0 ? 0 : (this.s.historyTailBytes.get(head.taskId, historyLength) as { n: number }).n;
      artifacts = this.s.artifactSizes.get(head.taskId) as { n: number; count: number };
    }
    // A body may leave its task's contextId out (`messageBody`): counted for every message.
    const messages = historyLength === undefined ? head.historyCount : Math.min(historyLength, head.historyCount);
    const contexts = messages * (Buffer.byteLength(head.contextId) + Buffer.byteLength(head.taskId));
    return { bytes: history + contexts + artifacts.n, artifacts: artifacts.count, kept };
  }

  /**
   * The whole task as the wire shows it; `historyLength` keeps the last N
   * messages. `artifacts`: how many the task has, when the caller has just
   * read it (none are read when it is 0).
   */
  loadTask(head: TaskHead, historyLength?: number, artifacts?: number): Task {
    return this.taskOf(
      head,
      historyLength,
      artifacts,
      this.histories.tail(head.taskId, head.historyCount, historyLength),
    );
  }

  /** `loadTask` given the kept tail of the history (`RecentHistories.tail`), if any. */
  private taskOf(
    head: TaskHead,
    historyLength: number | undefined,
    artifacts: number | undefined,
    kept: HistoryTail | undefined,
  ): Task {
    const historyRows = (
      kept !== undefined
        ? kept.rows
        : historyLength === undefined
          ? this.s.history.all(head.taskId)
          : historyLength === 0
            ? []
            : this.s.historyTail.all(head.taskId, historyLength)
    ) as MessageRow[];
    const artifactRows =
      artifacts === 0 || kept !== undefined ? [] : (this.s.artifacts.all(head.taskId) as { body: string }[]);
    return {
      kind: 'task',
      id: head.taskId,
      contextId: head.contextId,
      agentName: head.agentName,
      agentContextId: head.agentContextId,
      requesterName: head.requesterName,
      status: head.status,
      history: historyRows.map((row) => messageOfRow(row, head.taskId, head.contextId)),
      artifacts: artifactRows.map((r) => JSON.parse(r.body) as Artifact),
      createdAt: head.createdAt,
      updatedAt: head.updatedAt,
    };
  }

  /** Tasks the party is a party to, oldest first. */
  tasksOfParty(party: Party, role: 'requester' | 'worker' | undefined): TaskHead[] {
    const raws = (
      role === 'requester'
        ? this.s.tasksAsRequester.all(party.contextId, party.name)
        : role === 'worker'
          ? this.s.tasksAsWorker.all(party.contextId, party.name)
          : this.s.tasksAsEither.all({ contextId: party.contextId, name: party.name })
    ) as TaskHeadRaw[];
    return raws.map((raw) => this.head(raw));
  }

  /** Non-terminal tasks where the party is the requester (`role: requester`) or the worker. */
  openTasksOfParty(party: Party, role: 'requester' | 'worker'): TaskHead[] {
    const stmt = role === 'requester' ? this.s.openAsRequester : this.s.openAsWorker;
    return (stmt.all(party.contextId, party.name) as TaskHeadRaw[]).map((raw) => this.head(raw));
  }

  // ---- artifacts ----

  artifact(taskId: string, artifactId: string): Artifact | undefined {
    const row = this.s.artifact.get(taskId, artifactId) as { body: string } | undefined;
    return row === undefined ? undefined : (JSON.parse(row.body) as Artifact);
  }

  putArtifact(taskId: string, artifact: Artifact, exists: boolean, at: string): void {
    this.histories.artifactWritten(taskId);
    const body = JSON.stringify(artifact);
    if (exists) this.s.updateArtifact.run(body, at, taskId, artifact.artifactId);
    else this.s.insertArtifact.run(taskId, artifact.artifactId, taskId, body, at);
  }

  // ---- push configs ----

  pushConfig(taskId: string): PushConfig | null {
    if (!this.mayHavePushConfigs) return null;
    const row = this.s.pushConfig.get(taskId) as { config: string } | undefined;
    return row === undefined ? null : (JSON.parse(row.config) as PushConfig);
  }

  setPushConfig(taskId: string, config: PushConfig, by: Party, at: string): void {
    this.mayHavePushConfigs = true;
    this.s.setPushConfig.run(taskId, JSON.stringify(config), by.contextId, by.name, at);
  }

  // ---- the durable event log ----

  /** The next `seq` of a party: one more than the last ever written (never reused, even once pruned). */
  nextSeq(party: Party): number {
    return (this.s.lastSeq.get({ contextId: party.contextId, name: party.name }) as { seq: number }).seq + 1;
  }

  /**
   * Writes an event to the party's log and attaches the JSON text of its
   * params as written (`LOGGED_PARAMS_TEXT`, not enumerable), so that a
   * connection relaying the event writes that text instead of serializing
   * the params again.
   */
  appendEvent(party: Party, event: DurableEvent, taskId: string, at: string): void {
    const text = JSON.stringify(event.params);
    const task = this.taskKeyOf(taskId);
    if (task === undefined) throw new Error(`appendEvent: no task ${taskId} (an event is written after its task)`);
    const params = storedParams(
      event,
      party,
      { taskId, contextId: task.contextId },
      this.refOf(taskId),
      this.agentKeyOf,
    );
    const stored = params === event.params ? text : JSON.stringify(params);
    this.s.insertEvent.run(
      party.contextId,
      party.name,
      event.seq,
      event.method === 'a2a.push' ? 1 : 0,
      task.key,
      stored,
      Date.parse(at),
    );
    Object.defineProperty(event, LOGGED_PARAMS_TEXT, { value: text });
  }

  eventsSince(party: Party, after: number, limit: number): DurableEvent[] {
    const rows = this.s.eventsSince.all(party.contextId, party.name, after, limit) as {
      seq: number;
      method: 0 | 1;
      task_id: string;
      context_id: string;
      params: string;
    }[];
    const agents = new Map<number, string | undefined>();
    const agentIdOf = (key: number) => {
      if (!agents.has(key)) {
        agents.set(key, (this.s.agentIdOfKey.get(key) as { agent_id: string } | undefined)?.agent_id);
      }
      return agents.get(key);
    };
    return rows.map((raw) => {
      const r = { ...raw, method: (raw.method === 1 ? 'a2a.push' : 'a2a.task.event') as NotificationMethod };
      const event = { seq: r.seq, method: r.method, params: paramsOfRow(r, party, agentIdOf) } as DurableEvent;
      const status = statusOf(event);
      const ref = messageRefOf(status?.message);
      if (status !== undefined && ref !== undefined) {
        // Both kinds of event carry their task's contextId.
        const message = this.messageOf(r.task_id, (event.params as { contextId: string }).contextId, ref);
        if (message !== undefined) status.message = message;
      }
      return event;
    });
  }

  // ---- task actor snapshots ----

  putActorSnapshot(taskId: string, machineVersion: number, snapshot: unknown): void {
    this.s.putActor.run(taskId, machineVersion, JSON.stringify(snapshot));
  }

  deleteActorSnapshot(taskId: string): void {
    this.s.deleteActor.run(taskId);
  }

  /** Every persisted live task actor, with the state its task row holds. */
  actorSnapshots(): TaskActorRow[] {
    return (
      this.s.allActors.all() as { task_id: string; machine_version: number; snapshot: string; state: TaskState }[]
    ).map((r) => ({ taskId: r.task_id, machineVersion: r.machine_version, snapshot: r.snapshot, state: r.state }));
  }

  /**
   * Non-terminal tasks that have no snapshot row: those still submitted
   * (a task's snapshot is written from its first move on: before, it is the
   * machine's initial one) and, never expected, others (repaired on open).
   */
  liveTasksWithoutActor(): { taskId: string; state: TaskState }[] {
    return (this.s.liveTasksWithoutActor.all() as { task_id: string; state: TaskState }[]).map((r) => ({
      taskId: r.task_id,
      state: r.state,
    }));
  }
}

/** The wire card of a registration. */
export function agentCard(row: AgentRow): AgentCard {
  return {
    agentId: row.agentId,
    name: row.name,
    contextId: row.contextId,
    kind: row.kind,
    description: row.description,
    skills: row.skills,
  };
}

/** The status an event carries: a status-update's, or a push's. */
function statusOf(event: DurableEvent): TaskStatus | undefined {
  if (event.method === 'a2a.push') return event.params.status;
  const inner = event.params.event;
  return inner.kind === 'status-update' ? inner.status : undefined;
}

/** The parent task a message's metadata names (`metadata.switchboard.parentTaskId`: the Coordinator's hop tasks). */
function parentTaskOf(message: Message): string | null {
  const switchboard = (message.metadata as { switchboard?: unknown } | undefined)?.switchboard;
  if (switchboard === null || typeof switchboard !== 'object') return null;
  const parent = (switchboard as { parentTaskId?: unknown }).parentTaskId;
  return typeof parent === 'string' ? parent : null;
}
