import { z } from 'zod';
import {
  A2A_TOOL_DEFAULT_ARTIFACT,
  A2A_TOOL_DEFAULT_HISTORY,
  type A2AToolAction,
  type A2AToolInput,
  A2AToolInputSchema,
} from '../protocol/a2a-tool.js';
import { A2A_DEFAULT_STREAM_WAIT_SECONDS, A2A_MAX_STREAM_WAIT_SECONDS } from '../protocol/bounds.js';
import { BrokerError } from '../protocol/broker-error.js';
import type { AgentPresence, DurableEvent } from '../protocol/events.js';
import type { Part } from '../protocol/parts.js';
import type { Artifact, Message, Task } from '../protocol/task.js';
import { type AgentCard, foldAgentName } from '../protocol/agent.js';
import type { SwitchboardClient } from './client.js';
import { TransportError } from './transport-error.js';

/** What the tool needs of a client. */
export type A2AToolClient = Pick<
  SwitchboardClient,
  'listAgents' | 'send' | 'getTask' | 'setStatus' | 'addArtifact' | 'cancel' | 'wait'
>;

/** A part as the model reads it: text as text, data as data, files described (never their bytes). */
export interface PartView {
  text?: string;
  data?: Record<string, unknown>;
  file?: { name?: string; mimeType?: string; uri?: string; bytes?: number };
}

/** A message as the model reads it: who sent it, in which role, and its text, data and files. */
export interface MessageView {
  from: string;
  role: 'user' | 'agent';
  text?: string;
  data?: Record<string, unknown>[];
  files?: NonNullable<PartView['file']>[];
}

/** An artifact as the model reads it: its id and name, and its text, data and files. */
export interface ArtifactView extends Omit<MessageView, 'from' | 'role'> {
  artifactId: string;
  name?: string;
}

/** A task as the model reads it: its state, worker and requester, status message, artifacts and history. */
export interface TaskView {
  taskId: string;
  state: Task['status']['state'];
  /** The agent serving the task. */
  worker: string;
  /** The agent that asked for it. */
  requester: string;
  statusMessage?: MessageView;
  artifacts: ArtifactView[];
  history?: MessageView[];
  updatedAt: string;
}

/**
 * An event on the caller's tasks as the model reads it from `wait`: status,
 * artifact, push or agent. An artifact event is one chunk: `append` when it
 * adds to the artifact of that id, `lastChunk` when the artifact is whole. An
 * agent event says the agent serving the task (`agent`) left the broker or is
 * back (`presence`): the task waits for it meanwhile.
 */
export interface EventView {
  seq: number;
  taskId: string;
  type: 'status' | 'artifact' | 'push' | 'agent';
  agent?: string;
  presence?: AgentPresence;
  state?: Task['status']['state'];
  final?: boolean;
  message?: MessageView;
  artifact?: ArtifactView;
  append?: boolean;
  lastChunk?: boolean;
}

/** A call of the `A2A` tool that succeeded, as the model reads it, by action. */
export type A2AToolSuccess =
  | { ok: true; action: 'discover'; agents: AgentView[] }
  | { ok: true; action: 'send' | 'get' | 'ask' | 'stream' | 'complete' | 'cancel'; task: TaskView }
  | { ok: true; action: 'wait'; events: EventView[]; note?: string };

/** An agent as the model reads it from `discover`: its name, ids, kind, description and skills. */
export interface AgentView {
  name: string;
  agentId: string;
  contextId: string;
  kind: AgentCard['kind'];
  description: string;
  skills: { id: string; name: string; description?: string }[];
}

/** An agent a name could mean, as an ambiguous `to` lists it: send again with its `agentId`. */
export interface CandidateView {
  name: string;
  contextId: string;
  agentId: string;
}

/** A failed call, as the model reads it: the code and one sentence saying what to do next. */
export interface A2AToolFailure {
  ok: false;
  errorCode: string;
  message: string;
  /** When `to` named several agents: the ones it could mean. */
  candidates?: CandidateView[];
}

/** What one call of the `A2A` tool returns to the model: a success or a failure that says what to do. */
export type A2AToolResult = A2AToolSuccess | A2AToolFailure;

/** The model-facing `A2A` tool: its name, description, input schema (zod and JSON Schema) and `execute`. */
export interface A2ATool {
  /** The tool's name as the model sees it. */
  name: 'A2A';
  /** The tool's description for the model (`A2A_TOOL_DESCRIPTION`). */
  description: string;
  /** The zod schema of the tool's input (one action per call). */
  inputSchema: typeof A2AToolInputSchema;
  /** The input schema as JSON Schema, for LLM tool calling. */
  jsonSchema: Record<string, unknown>;
  /**
   * Runs one call. Never throws: every failure is a result with `ok: false`.
   * A field given as `null` counts as absent (as strict-mode models send them).
   */
  execute(input: unknown): Promise<A2AToolResult>;
}

/** Options of `createA2ATool`: the client, the agent's token, and the longest one `wait` may last. */
export interface A2AToolOptions {
  /** The broker connection the tool calls through, registered as the calling agent. */
  client: A2AToolClient;
  /** The token of the agent the tool acts as: in no schema, result or error text. */
  token: string;
  /**
   * The longest one `wait` lasts, in seconds, whatever the model asks
   * (default: `A2A_MAX_STREAM_WAIT_SECONDS`). A host whose calls time out
   * (an MCP client's request timeout) sets it below that timeout; a longer
   * wait returns empty with a note telling the model to wait again.
   */
  maxWaitSeconds?: number;
}

/** The `A2A` tool's description for the model: what it is for and how each action is used. */
export const A2A_TOOL_DESCRIPTION = [
  'Work with other agents through the A2A broker: ask them for help, answer what they ask of you, and follow tasks.',
  'Actions:',
  '- discover: list the agents you can address (name, agentId, description, skills).',
  '- send with `to` and `text`: ask an agent to do something; this creates a task and returns its taskId.',
  '- send with `taskId` and `text`: add a message to a task you are part of (a reply, a follow-up, the answer to ' +
    'a question you were asked).',
  '- wait (optionally with `taskId`): block until something happens on your tasks (a reply, a question, a partial ' +
    'or final result, a new task for you); returns the events, or none after `timeoutSeconds`.',
  '- get with `taskId`: read a task: its state, latest messages and results. Reading a task you serve marks it working.',
  '- ask with `taskId` and `text`: when you serve a task and cannot go on without something from the agent that ' +
    'asked (a choice, a missing detail), ask it; the task shows input-required until it answers, then wait for the answer.',
  '- stream with `taskId` and `artifact`: when you serve a long task, send part of your result as soon as you have ' +
    'it; chunks with the same artifact name add up to one result.',
  '- complete with `taskId`: finish a task you serve, with your answer in `text` and/or `artifact`; this wakes the ' +
    'agent that asked. Set `outcome` to failed or rejected when you could not or will not do it.',
  '- cancel with `taskId`: stop a task you asked for (or serve) that is no longer needed.',
  'Delegating: discover, send, then wait until the task ends (completed, failed, rejected, canceled); answer with ' +
    'send when it is input-required. Serving: get the task, do the work (ask if you must, stream long results), ' +
    'then complete it.',
].join('\n');

/**
 * The single `A2A` tool a model uses, closed over one agent's token: the
 * token is in no schema, result or error text.
 */
export function createA2ATool(options: A2AToolOptions): A2ATool {
  const { client, token } = options;
  const asked = options.maxWaitSeconds ?? A2A_MAX_STREAM_WAIT_SECONDS;
  if (!Number.isFinite(asked) || asked < 0) {
    throw new RangeError(`maxWaitSeconds must be a number of seconds from 0 (got ${String(asked)})`);
  }
  const maxWait = Math.min(asked, A2A_MAX_STREAM_WAIT_SECONDS);
  const jsonSchema = z.toJSONSchema(A2AToolInputSchema) as Record<string, unknown>;
  /** Tasks this agent asked for (it is their requester), and tasks it serves that are known to be under way. */
  const requested = new Set<string>();
  const started = new Set<string>();

  /**
   * A task the model acts on as its worker shows `working`: a submitted task
   * is moved there once. The requester's own calls move nothing (the broker
   * refuses them as worker-only, and the tool remembers it).
   */
  async function markWorking(task: Task): Promise<Task> {
    if (task.status.state !== 'submitted' || requested.has(task.id) || started.has(task.id)) return task;
    try {
      const moved = await client.setStatus({ token, id: task.id, state: 'working', historyLength: 0 });
      started.add(task.id);
      return { ...moved.task, history: task.history };
    } catch (error) {
      if (
        error instanceof BrokerError &&
        error.code === 'A2A_INVALID_TRANSITION' &&
        error.details?.reason === 'worker-only'
      ) {
        requested.add(task.id);
        return task;
      }
      throw error;
    }
  }

  async function startServing(id: string): Promise<void> {
    if (started.has(id)) return;
    const { task } = await client.getTask({ token, id, historyLength: 0 });
    await markWorking(task);
  }

  function addChunk(id: string, artifact: NonNullable<A2AToolInput['artifact']>, lastChunk: boolean) {
    const name = artifact.name ?? A2A_TOOL_DEFAULT_ARTIFACT;
    return client.addArtifact({
      token,
      id,
      artifact: { artifactId: name, name, parts: partsOf(artifact.text, artifact.data) },
      append: true,
      lastChunk,
    });
  }

  /**
   * When `to` named no agent the broker could pick: the addressable agents
   * it could mean (those the broker lists in `details.agentIds`, else those
   * whose name folds to it), when there are several.
   */
  async function candidatesFor(to: string, error: BrokerError): Promise<CandidateView[]> {
    const ids = error.details?.agentIds;
    const listed = Array.isArray(ids) ? new Set(ids) : undefined;
    const folded = foldAgentName(to);
    let agents: AgentCard[];
    try {
      ({ agents } = await client.listAgents({ token }));
    } catch {
      return [];
    }
    const matches = agents.filter((a) => (listed ? listed.has(a.agentId) : foldAgentName(a.name) === folded));
    if (matches.length < 2) return [];
    return matches.map((a) => ({ name: a.name, contextId: a.contextId, agentId: a.agentId }));
  }

  async function run(input: A2AToolInput): Promise<A2AToolResult> {
    switch (input.action) {
      case 'discover': {
        const { agents } = await client.listAgents({ token });
        return { ok: true, action: 'discover', agents: agents.map(agentView) };
      }
      case 'send': {
        const message = { parts: partsOf(input.text, input.data) };
        if (input.taskId === undefined) {
          const to = input.to as string;
          try {
            const { task } = await client.send({ token, to, message, historyLength: 1 });
            requested.add(task.id);
            return { ok: true, action: 'send', task: taskView(task) };
          } catch (error) {
            if (!(error instanceof BrokerError && error.code === 'A2A_UNKNOWN_AGENT')) throw error;
            const candidates = await candidatesFor(to, error);
            if (candidates.length === 0) throw error;
            return {
              ok: false,
              errorCode: error.code,
              message: `Several agents are named ${JSON.stringify(to)} (listed in candidates); send again with \`to\` set to the agentId of the one you mean.`,
              candidates,
            };
          }
        }
        const { task } = await client.send({ token, taskId: input.taskId, message, historyLength: 1 });
        // The message just sent is the newest: its role says which side of the task the caller is on.
        const role = task.history.at(-1)?.role;
        if (role === 'user') requested.add(task.id);
        return { ok: true, action: 'send', task: taskView(role === 'agent' ? await markWorking(task) : task) };
      }
      case 'get': {
        const historyLength = input.historyLength ?? A2A_TOOL_DEFAULT_HISTORY;
        const { task } = await client.getTask({ token, id: input.taskId as string, historyLength });
        return { ok: true, action: 'get', task: taskView(await markWorking(task), true) };
      }
      case 'wait': {
        const asked = input.timeoutSeconds ?? A2A_DEFAULT_STREAM_WAIT_SECONDS;
        const timeoutSeconds = Math.min(asked, maxWait);
        const waitOptions =
          input.taskId === undefined ? { token, timeoutSeconds } : { token, taskId: input.taskId, timeoutSeconds };
        const events = (await client.wait(waitOptions)).map(eventView);
        if (events.length > 0) return { ok: true, action: 'wait', events };
        return {
          ok: true,
          action: 'wait',
          events,
          note:
            timeoutSeconds < asked
              ? `Nothing happened within ${timeoutSeconds} seconds (the longest one wait lasts here); wait again, or get the task to check on it.`
              : `Nothing happened within ${timeoutSeconds} seconds; wait again, or get the task to check on it.`,
        };
      }
      case 'ask': {
        const { task } = await client.setStatus({
          token,
          id: input.taskId as string,
          state: 'input-required',
          message: { parts: partsOf(input.text, input.data) },
          historyLength: 0,
        });
        started.add(task.id);
        return { ok: true, action: 'ask', task: taskView(task) };
      }
      case 'stream': {
        const id = input.taskId as string;
        await startServing(id);
        const { task } = await addChunk(id, input.artifact as NonNullable<A2AToolInput['artifact']>, false);
        return { ok: true, action: 'stream', task: taskView(task) };
      }
      case 'complete': {
        const id = input.taskId as string;
        if (input.artifact !== undefined) await addChunk(id, input.artifact, true);
        const state = input.outcome ?? 'completed';
        const hasMessage = input.text !== undefined || input.data !== undefined;
        const { task } = await client.setStatus(
          hasMessage ? { token, id, state, message: { parts: partsOf(input.text, input.data) } } : { token, id, state },
        );
        return { ok: true, action: 'complete', task: taskView(task) };
      }
      case 'cancel': {
        const { task } = await client.cancel({ token, id: input.taskId as string });
        return { ok: true, action: 'cancel', task: taskView(task) };
      }
    }
  }

  return {
    name: 'A2A',
    description: A2A_TOOL_DESCRIPTION,
    inputSchema: A2AToolInputSchema,
    jsonSchema,
    async execute(raw: unknown): Promise<A2AToolResult> {
      const parsed = A2AToolInputSchema.safeParse(withoutNulls(raw));
      if (!parsed.success) {
        const issues = parsed.error.issues.map((i) => `${i.path.join('.') || 'input'}: ${i.message}`).join('; ');
        return scrub(
          {
            ok: false,
            errorCode: 'INVALID_INPUT',
            message: `The input was not accepted (${issues}); fix it and call A2A again.`,
          },
          token,
        );
      }
      try {
        return scrub(await run(parsed.data), token);
      } catch (error) {
        return scrub(failure(parsed.data.action, error), token);
      }
    },
  };
}

/** A field given as `null` is absent: at the top of the input and in its artifact. */
function withoutNulls(raw: unknown): unknown {
  if (!isPlainObject(raw)) return raw;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (value === null) continue;
    out[key] = key === 'artifact' && isPlainObject(value) ? withoutNulls(value) : value;
  }
  return out;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function partsOf(text: string | undefined, data: Record<string, unknown> | undefined): Part[] {
  const parts: Part[] = [];
  if (text !== undefined) parts.push({ kind: 'text', text });
  if (data !== undefined) parts.push({ kind: 'data', data });
  if (parts.length === 0) parts.push({ kind: 'text', text: '' });
  return parts;
}

function partsView(parts: Part[]): Omit<MessageView, 'from' | 'role'> {
  const texts: string[] = [];
  const data: Record<string, unknown>[] = [];
  const files: NonNullable<PartView['file']>[] = [];
  for (const part of parts) {
    if (part.kind === 'text') texts.push(part.text);
    else if (part.kind === 'data') data.push(part.data);
    else {
      const { name, mimeType, uri, bytes } = part.file;
      const file: NonNullable<PartView['file']> = {};
      if (name !== undefined) file.name = name;
      if (mimeType !== undefined) file.mimeType = mimeType;
      if (uri !== undefined) file.uri = uri;
      if (bytes !== undefined) file.bytes = Math.floor((bytes.length * 3) / 4);
      files.push(file);
    }
  }
  const view: Omit<MessageView, 'from' | 'role'> = {};
  if (texts.length > 0) view.text = texts.join('\n');
  if (data.length > 0) view.data = data;
  if (files.length > 0) view.files = files;
  return view;
}

function messageView(message: Message): MessageView {
  return { from: message.from, role: message.role, ...partsView(message.parts) };
}

function artifactView(artifact: Artifact): ArtifactView {
  const view: ArtifactView = { artifactId: artifact.artifactId, ...partsView(artifact.parts) };
  if (artifact.name !== undefined) view.name = artifact.name;
  return view;
}

function taskView(task: Task, withHistory = false): TaskView {
  const view: TaskView = {
    taskId: task.id,
    state: task.status.state,
    worker: task.agentName,
    requester: task.requesterName,
    artifacts: task.artifacts.map(artifactView),
    updatedAt: task.updatedAt,
  };
  if (task.status.message !== undefined) view.statusMessage = messageView(task.status.message);
  if (withHistory) view.history = task.history.map(messageView);
  return view;
}

function agentView(card: AgentCard): AgentView {
  return {
    name: card.name,
    agentId: card.agentId,
    contextId: card.contextId,
    kind: card.kind,
    description: card.description,
    skills: card.skills.map((s) =>
      s.description === undefined ? { id: s.id, name: s.name } : { id: s.id, name: s.name, description: s.description },
    ),
  };
}

function eventView(event: DurableEvent): EventView {
  if (event.method === 'a2a.push') {
    // The push config's own token is the configurer's secret: not shown.
    const { taskId, status, seq } = event.params;
    return { seq, taskId, type: 'push', state: status.state };
  }
  const inner = event.params.event;
  if (inner.kind === 'status-update') {
    const view: EventView = {
      seq: event.seq,
      taskId: inner.taskId,
      type: 'status',
      state: inner.status.state,
      final: inner.final,
    };
    if (inner.status.message !== undefined) view.message = messageView(inner.status.message);
    return view;
  }
  if (inner.kind === 'agent-update') {
    return { seq: event.seq, taskId: inner.taskId, type: 'agent', agent: inner.agentName, presence: inner.presence };
  }
  return {
    seq: event.seq,
    taskId: inner.taskId,
    type: 'artifact',
    artifact: artifactView(inner.artifact),
    append: inner.append,
    lastChunk: inner.lastChunk,
  };
}

/** One sentence per error: what happened and what the model should do next. */
function failure(action: A2AToolAction, error: unknown): A2AToolFailure {
  if (error instanceof TransportError) {
    return {
      ok: false,
      errorCode: error.code,
      message: 'The A2A broker is not reachable right now; wait a moment and try again, or carry on without it.',
    };
  }
  if (!(error instanceof BrokerError)) {
    return {
      ok: false,
      errorCode: 'INTERNAL_ERROR',
      message: 'The A2A broker failed on this call; try once more, and if it fails again carry on without it.',
    };
  }
  const data = error.details ?? {};
  switch (error.code) {
    case 'A2A_UNKNOWN_TOKEN':
      return fail(
        error.code,
        'Your A2A registration has ended; stop using the A2A tool and finish with what you have.',
      );
    case 'A2A_UNKNOWN_AGENT':
      return fail(
        error.code,
        'No agent you can address has that name; call A2A with action "discover" and send to one of the names it lists.',
      );
    case 'A2A_UNKNOWN_TASK':
      return fail(error.code, 'There is no task with that taskId; use a taskId returned by send or wait.');
    case 'A2A_CROSS_CONTEXT_DENIED':
      return fail(error.code, 'You are not part of that task; use only taskIds returned to you by send or wait.');
    case 'A2A_INVALID_TRANSITION':
      if (data.reason === 'worker-only') {
        return fail(
          error.code,
          `Only the agent serving this task can use ${action} on it; as the one who asked, send it a message, wait for its answer or cancel it.`,
        );
      }
      if (action === 'ask' && data.from === 'input-required') {
        return fail(
          error.code,
          'You already asked on this task and the answer has not come yet; wait for it (the task goes back to working when it arrives).',
        );
      }
      return fail(
        error.code,
        `The task cannot go from ${String(data.from ?? 'its state')} to ${String(data.to ?? 'that state')}; call get to see where it stands.`,
      );
    case 'A2A_TASK_TERMINAL':
      return fail(
        error.code,
        'That task has already ended; call get to read its outcome, or send with `to` to start a new task.',
      );
    case 'A2A_SEND_CAP':
      return fail(
        error.code,
        `You reached the limit ${String(data.limit ?? 'on sends')} (${String(data.max ?? '')}); stop sending and finish with what you have.`,
      );
    case 'A2A_NO_PEERS':
      return fail(error.code, 'No other agent is available to address right now; do the work yourself.');
    case 'A2A_PAYLOAD_TOO_LARGE':
      return fail(
        error.code,
        `The ${action} was too large (${String(data.limit ?? 'a bound')} is ${String(data.max ?? '')}); shorten it or split it over several sends.`,
      );
    default:
      break;
  }
  if (error.code === 'INVALID_PARAMS') {
    const issues = Array.isArray(data.issues)
      ? (data.issues as { path?: unknown[]; message?: unknown }[])
          .map((i) => `${(i.path ?? []).join('.') || 'input'}: ${String(i.message)}`)
          .join('; ')
      : error.message;
    return fail('INVALID_INPUT', `The broker did not accept the ${action} (${issues}); fix it and call A2A again.`);
  }
  return fail(
    'INTERNAL_ERROR',
    'The A2A broker failed on this call; try once more, and if it fails again carry on without it.',
  );
}

function fail(errorCode: string, message: string): A2AToolFailure {
  return { ok: false, errorCode, message };
}

/** Belt and braces: the token never leaves the tool, whatever a message echoes. */
function scrub<T extends A2AToolResult>(result: T, token: string): T {
  const text = JSON.stringify(result);
  if (!text.includes(token)) return result;
  return JSON.parse(text.split(token).join('[redacted]')) as T;
}
