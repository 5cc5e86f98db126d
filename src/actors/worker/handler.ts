import type { ReplyInfo } from '../../bus/reply-routing.js';
import type { Checkpoint, WorkItemContext } from '../../persistence/context/sqlite-store.js';
import type { SqliteDatabase } from '../../persistence/kernel/database.js';
import type { Part } from '../../protocol/parts.js';
import type { Artifact } from '../../protocol/task.js';
import type { Usage, WorkEnvelope, WorkHeaders, WorkMessage } from '../../protocol/work-envelope.js';

/**
 * A role's handler as the worker harness calls it: what it is given for one
 * hop (`HopInput`) and what it hands back (a completion or a suspension).
 */

export interface Completion {
  /** Marks a completion (optional in a handler's result: `complete()` sets it). */
  kind: 'complete';
  /** The hop's output: its parts, kept in the Context Engine for the stages after it. */
  parts?: Part[];
  /** Artifacts the hop produced, kept with its output. */
  artifacts?: Artifact[];
  /** What the hop cost (tokens, money), accrued to the work item. */
  usage?: Usage;
  /** Updates of the work item's memory: a key set to `null` is deleted. */
  memory?: Record<string, unknown>;
  /** Carried with the result as it is (JSON). */
  metadata?: Record<string, unknown>;
}

/** A child work item a handler starts (`spawn`): the workflow it runs (`"id@version"`), its input, what it may spend. */
export interface ChildSpawn {
  workflow: string;
  /** Text, or A2A parts. */
  input: string | Part[];
  /** What the child may spend (default: an equal share of what the work item has left). */
  budget?: { maxTokens?: number; maxCostUsd?: number; maxHops?: number; deadline?: number | string };
}

/**
 * A handler's suspension: the question to ask another role (`ask`), or the
 * child work items to run (`spawn`), and the state to resume with when the
 * reply comes (the answer, or the children's outcomes).
 */
export interface Suspension {
  /** Marks a suspension. */
  kind: 'suspend';
  /** The role to ask and the question; its reply resumes this hop. Exactly one of `ask` and `spawn`. */
  ask?: { role: string; message: WorkMessage };
  /**
   * Child work items to run; the hop stands down and resumes once they have
   * all ended, its reply one data part `{ children: [{ workflow, outcome,
   * output, error }] }` in the order given.
   */
  spawn?: ChildSpawn[];
  /** What the handler needs back when the reply comes: JSON. */
  state: unknown;
  /** What the hop cost up to the suspension. */
  usage?: Usage;
  /** Updates of the work item's memory: a key set to `null` is deleted. */
  memory?: Record<string, unknown>;
}

/** What a handler returns: a completion (with or without `kind`) or a suspension. */
export type HandlerResult = Completion | Suspension | Omit<Completion, 'kind'>;

/** Builds a handler's completion (`kind: 'complete'`) from its output, usage and memory updates. */
export function complete(result: Omit<Completion, 'kind'> = {}): Completion {
  return { kind: 'complete', ...result };
}

/** Builds a handler's suspension (`kind: 'suspend'`): the question to ask and the state to resume with. */
export function suspend(suspension: Omit<Suspension, 'kind'>): Suspension {
  return { kind: 'suspend', ...suspension };
}

/**
 * Builds a suspension that runs child work items (`kind: 'suspend'` with
 * `spawn`): the hop stands down until they have all ended, then resumes with
 * their outcomes and outputs as the reply (`resume.reply`).
 */
export function spawn(
  children: ChildSpawn[],
  rest: Omit<Suspension, 'kind' | 'ask' | 'spawn' | 'state'> & { state?: unknown } = {},
): Suspension {
  return { kind: 'suspend', spawn: children, state: rest.state ?? null, ...rest };
}

/** Side effects applied once per hop, whatever the redeliveries. */
export interface Effects {
  /**
   * Runs `fn` unless an effect of this key already completed for this hop, in
   * which case its recorded value is returned. A crash between `fn` and its
   * record re-runs it: give external systems `effects.key(key)` as their own
   * idempotency key.
   */
  once<T>(key: string, fn: () => T | Promise<T>): Promise<T>;
  /**
   * Exactly once: `fn` writes to the Context Engine's own database, inside the
   * transaction that records the effect. Needs a store with `applyOnce`.
   */
  atomic<T>(key: string, fn: (db: SqliteDatabase) => T): T;
  /** A stable key for this hop's effect `key`: pass it to external services. */
  key(key: string): string;
}

/** What a resumed hop's handler gets back: its saved state, the reply, who answered, and its checkpoint. */
export interface HopResume {
  /** The state the handler suspended with. */
  state: unknown;
  /** The answer to its question. */
  reply: WorkMessage;
  /** Who answered and how (`failed` when the query was dead-lettered). */
  from: ReplyInfo | undefined;
  /** The checkpoint kept while the hop waited. */
  checkpoint: Checkpoint;
}

/**
 * Artifact chunks a hop sends while it runs (a model's answer as it is
 * written): each artifact's text goes to the work item's watchers and to its
 * A2A task as it grows. Writing never waits and never throws; chunks are
 * previews (some may be lost in a crash), the hop's result is what counts.
 */
export interface HopStream {
  /** Adds `text` to the artifact `artifactId` (`name` is read on its first write). */
  write(artifactId: string, text: string, options?: { name?: string }): void;
  /** The artifact's text is whole: its last chunk goes out. */
  end(artifactId: string): void;
}

/** What a handler receives for one hop: the role, the envelope, the item's context, effects and an abort signal. */
export interface HopInput {
  /** The role this hop is for (the queue it came from). */
  role: string;
  /** The hop's envelope as it came off the bus: headers and message. */
  envelope: WorkEnvelope;
  /** The hop's headers (on a resume: the headers of the hop that suspended). */
  headers: WorkHeaders;
  /** The hop's message (its input). */
  message: WorkMessage;
  /** The work item's context from the Context Engine: earlier hops' outputs and its memory. */
  context: WorkItemContext;
  /** Present when this call resumes a suspended hop. */
  resume: HopResume | undefined;
  /** Side effects applied once per hop, whatever the redeliveries. */
  effects: Effects;
  /** The bus delivery: its id and how many times it has been delivered (1 the first time). */
  delivery: { id: string; deliveries: number };
  /** Aborted when the lease is lost or the worker stops without waiting. */
  signal: AbortSignal;
  /**
   * Artifact chunks to send while the hop runs (given by the worker harness;
   * absent where a hop is run without one, e.g. a handler called by a test).
   */
  stream?: HopStream;
}

/** A role's handler: runs one hop and completes or suspends it; a throw fails the attempt (retried per the retry policy). */
export type WorkHandler = (hop: HopInput) => HandlerResult | Promise<HandlerResult>;
