import type { Observable } from 'rxjs';
import type { DurableEvent } from '../../protocol/events.js';
import type { MethodName, MethodParams, MethodResult } from '../../protocol/methods.js';

/** The A2A methods a broker serves (every method of the table but the handshake). */
export type BrokerMethod = Exclude<MethodName, 'app.handshake'>;

/** Options of one call. */
export interface CallOptions {
  /**
   * A blocking send (`blocking: true`) whose signal aborts before its task
   * settles is answered at once, with its task as it is then (as a send that
   * does not block). A transport aborts it when its peer sends no more calls.
   */
  signal?: AbortSignal;
  /**
   * Called once a blocking send is committed and waits for its task (a
   * transport that bounds its calls in flight stops counting it).
   */
  onWaiting?: () => void;
}

/**
 * The broker's public face, one method per row of the method table in docs/protocol.md.
 * Params and results are exactly the wire shapes (already parsed: use
 * `dispatch` for untrusted input). Every method resolves after its writes are
 * committed; calls made in the same tick share one SQLite transaction (group
 * commit) but each is atomic on its own: a refused call changes nothing.
 */
export interface BrokerApi {
  /** Registers an agent (name, context, optional kind, description and skills): resolves with its id, its capability token and its card. */
  register(params: MethodParams<'a2a.agents.register'>): Promise<MethodResult<'a2a.agents.register'>>;
  /** Ends the caller's registration (`{deregistered: true}`): its token stops working and its event stream completes. */
  deregister(params: MethodParams<'a2a.agents.deregister'>): Promise<MethodResult<'a2a.agents.deregister'>>;
  /** The cards of the peers the caller may address (not its own). */
  listAgents(params: MethodParams<'a2a.agents.list'>): Promise<MethodResult<'a2a.agents.list'>>;
  /**
   * Sends a message to a named agent (a new task) or into an existing task,
   * never both; resolves with the task, or with `blocking: true` once the
   * task settles (it ends, or needs its requester).
   */
  send(params: MethodParams<'a2a.message.send'>, options?: CallOptions): Promise<MethodResult<'a2a.message.send'>>;
  /** A task of the caller's, with at most `historyLength` of its newest history messages. */
  getTask(params: MethodParams<'a2a.tasks.get'>): Promise<MethodResult<'a2a.tasks.get'>>;
  /** The caller's tasks, filtered by its role in them and by state. */
  listTasks(params: MethodParams<'a2a.tasks.list'>): Promise<MethodResult<'a2a.tasks.list'>>;
  /** Moves a task through the task state machine (its worker only; an illegal move is refused and changes nothing). */
  setStatus(params: MethodParams<'a2a.tasks.status'>): Promise<MethodResult<'a2a.tasks.status'>>;
  /** Adds an artifact to a task, whole or as a chunk (its worker only; the broker assigns `artifactId` when absent). */
  addArtifact(params: MethodParams<'a2a.tasks.artifact'>): Promise<MethodResult<'a2a.tasks.artifact'>>;
  /** Cancels a task of the caller's; resolves with the task. */
  cancel(params: MethodParams<'a2a.tasks.cancel'>): Promise<MethodResult<'a2a.tasks.cancel'>>;
  /** Re-emits the task's current status to the caller as an event, and resolves with the task. */
  resubscribe(params: MethodParams<'a2a.tasks.resubscribe'>): Promise<MethodResult<'a2a.tasks.resubscribe'>>;
  /** Sets the push config of one task; resolves with the config now in force. */
  setPushConfig(
    params: MethodParams<'a2a.tasks.pushNotificationConfig.set'>,
  ): Promise<MethodResult<'a2a.tasks.pushNotificationConfig.set'>>;
  /** The task's push config, or null when none is set. */
  getPushConfig(
    params: MethodParams<'a2a.tasks.pushNotificationConfig.get'>,
  ): Promise<MethodResult<'a2a.tasks.pushNotificationConfig.get'>>;
  /** One page of the caller's durable events after a seq (at most `limit`), in seq order: how a restarted runtime catches up. */
  eventsSince(params: MethodParams<'a2a.events.since'>): Promise<MethodResult<'a2a.events.since'>>;

  /**
   * Validates untrusted params against the method's schema (-32602 or
   * A2A_PAYLOAD_TOO_LARGE) and calls the method; `app.handshake` is answered
   * with `answerHandshake`. Unknown methods are -32601.
   */
  dispatch(method: string, params: unknown, options?: CallOptions): Promise<unknown>;

  /**
   * The live notifications (`a2a.task.event`, `a2a.push`) addressed to one
   * registration, in `seq` order, as `{seq, method, params}`. Completes when
   * the agent deregisters or the broker closes. Events committed while nobody
   * listens wait in the durable log (`eventsSince`).
   */
  events(agentId: string): Observable<DurableEvent>;

  /**
   * Ends the registrations of these tokens as a restart would, without a
   * call of theirs: the tokens stop working and the agents are no longer
   * live, but their tasks stay as they are and their events wait in the log
   * (registering again under the same `(contextId, name)` regains them). A
   * transport calls it when the connection that registered them closes
   * (connection-scoped agents). Unknown or revoked tokens are skipped;
   * resolves with how many ended.
   */
  endRegistrations(tokens: readonly string[]): Promise<number>;

  /** Stops every actor and closes the database. Idempotent. */
  close(): Promise<void>;
}
