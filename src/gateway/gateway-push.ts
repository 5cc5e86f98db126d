import type { Logger } from '../log/logger.js';
import { notificationToV1 } from '../protocol/a2a-v1/methods.js';
import type { V1StreamResponse, V1TaskPushNotificationConfig } from '../protocol/a2a-v1/schemas.js';
import { BrokerError } from '../protocol/broker-error.js';
import type { DurableEvent } from '../protocol/events.js';
import { isTerminalState } from '../protocol/task.js';
import type { SwitchboardClient } from '../transport/client.js';
import { A2A_TASK_NOT_FOUND, GatewayRefusal } from './gateway-errors.js';
import { ANY_TASK, type GatewayParties } from './gateway-parties.js';
import type { PushSender } from './gateway-push-sender.js';
import { type PushStore, checkPushConfig } from './gateway-push-store.js';

/**
 * The push notification config methods of the gateway (v1.0's four and
 * v0.3's `tasks/pushNotificationConfig/*`), on the key's own tasks only, and
 * the watch that hands each update of a task with configs to the sender.
 */

const V1_PUSH = new Set([
  'CreateTaskPushNotificationConfig',
  'GetTaskPushNotificationConfig',
  'ListTaskPushNotificationConfigs',
  'DeleteTaskPushNotificationConfig',
]);
const V03_PUSH = new Set([
  'tasks/pushNotificationConfig/set',
  'tasks/pushNotificationConfig/get',
  'tasks/pushNotificationConfig/list',
  'tasks/pushNotificationConfig/delete',
]);

/** The sends that may carry a push config for the task they make. */
const SENDS = new Set(['SendMessage', 'SendStreamingMessage', 'message/send', 'message/stream']);

/** Whether a method is one of the push config methods (v1.0's or v0.3's). */
export function isPushMethod(method: string): boolean {
  return V1_PUSH.has(method) || V03_PUSH.has(method);
}

/** Whether a method is one of v1.0's push config methods. */
export function isV1PushMethod(method: string): boolean {
  return V1_PUSH.has(method);
}

function record(value: unknown): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new GatewayRefusal(-32602, 200, 'params must be an object: the A2A request of the method');
  }
  return value as Record<string, unknown>;
}

function idOf(value: unknown, what: string): string {
  if (typeof value !== 'string' || value === '' || value.length > 256) {
    throw new GatewayRefusal(-32602, 200, `${what} must be a non-empty string id of at most 256 characters`);
  }
  return value;
}

type Config = V1TaskPushNotificationConfig & { id: string; url: string };

/** A v1.0 config as v0.3 writes it: `{taskId, pushNotificationConfig: {id, url, token, authentication}}`. */
function toV03(config: Config): unknown {
  const { taskId, tenant: _tenant, authentication, ...rest } = config;
  return {
    taskId,
    pushNotificationConfig: {
      ...rest,
      ...(authentication === undefined
        ? {}
        : {
            authentication: {
              schemes: [authentication.scheme],
              ...(authentication.credentials === undefined ? {} : { credentials: authentication.credentials }),
            },
          }),
    },
  };
}

/** A v0.3 config as v1.0 writes it. */
function fromV03(raw: Record<string, unknown>): Record<string, unknown> {
  const inner = record(raw.pushNotificationConfig ?? {});
  const auth = inner.authentication as { schemes?: unknown; credentials?: unknown } | undefined;
  let authentication: unknown;
  if (auth !== undefined) {
    const schemes = Array.isArray(auth.schemes) ? auth.schemes : [];
    authentication = { scheme: schemes[0] ?? '', credentials: auth.credentials };
  }
  return {
    id: inner.id,
    url: inner.url,
    token: inner.token ?? undefined,
    ...(authentication === undefined ? {} : { authentication }),
  };
}

/** How long a moved cursor waits before it is written (a crash sends at most this much again). */
const CURSOR_FLUSH_MS = 1000;

/**
 * One page of a task's configs (v1.0's `ListTaskPushNotificationConfigs`):
 * `pageSize` of them (0 or none: all) after the config `pageToken` names
 * (the `nextPageToken` of the page before), in the order they were made.
 */
function pageOf(
  configs: Config[],
  pageSize: unknown,
  pageToken: unknown,
): { configs: Config[]; nextPageToken: string } {
  if (pageSize !== undefined && (!Number.isSafeInteger(pageSize) || (pageSize as number) < 0)) {
    throw new GatewayRefusal(-32602, 200, 'pageSize must be a whole number of configs, 0 or more (0: all of them)');
  }
  let start = 0;
  if (pageToken !== undefined && pageToken !== '') {
    const after = typeof pageToken === 'string' ? Buffer.from(pageToken, 'base64url').toString('utf8') : undefined;
    const at = configs.findIndex((c) => c.id === after);
    if (at === -1) {
      throw new GatewayRefusal(
        -32602,
        200,
        'pageToken is not a token of this list (or its config was deleted): pass the nextPageToken of the page before, or none',
      );
    }
    start = at + 1;
  }
  const size = pageSize === undefined || pageSize === 0 ? configs.length : (pageSize as number);
  const page = configs.slice(start, start + size);
  const more = start + size < configs.length && page.length > 0;
  return { configs: page, nextPageToken: more ? Buffer.from(page.at(-1)!.id, 'utf8').toString('base64url') : '' };
}

export class GatewayPush {
  private readonly watched = new Set<string>();
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly client: SwitchboardClient,
    private readonly parties: GatewayParties,
    private readonly store: PushStore,
    private readonly sender: PushSender,
    private readonly logger: Logger,
    /** Whether a key is live (not revoked): a revoked key's configs are dropped, never sent to. */
    private readonly isLive: (keyName: string) => boolean = () => true,
  ) {}

  /**
   * Watches the keys that hold configs. A key with a cursor replays its
   * events after it: what came while the gateway was down is sent now.
   */
  async start(): Promise<void> {
    for (const key of this.store.keys()) {
      if (this.droppedRevoked(key)) continue;
      const cursor = this.store.cursor(key);
      if (cursor !== undefined) this.parties.resumeAfter(key, cursor);
      await this.watch(key);
      // A file from before cursors: the key's starts where its agent's events are now.
      if (cursor === undefined) await this.startCursor(key);
    }
  }

  /** Starts a key's cursor where its agent's events are now (its first config, or a file without cursors). */
  private async startCursor(keyName: string): Promise<void> {
    if (this.store.cursor(keyName) !== undefined) return;
    const seq = await this.parties.lastSeq(keyName);
    if (seq !== undefined) this.store.advance(keyName, seq);
  }

  /** Writes the cursors (at stop). */
  close(): void {
    if (this.flushTimer !== undefined) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    this.flushCursors();
  }

  private flushCursors(): void {
    try {
      this.store.flush();
    } catch (error) {
      this.logger.warn({ err: error }, 'gateway: cannot write the push cursors; written again with the next change');
    }
  }

  /** Drops the configs of a key that was revoked (true), or answers false for a live key. */
  private droppedRevoked(keyName: string): boolean {
    if (this.isLive(keyName)) return false;
    const dropped = this.store.deleteKey(keyName);
    if (dropped > 0) {
      this.logger.warn(
        { key: keyName, configs: dropped },
        'gateway: the key was revoked: its push notification configs are dropped and nothing more is sent to them',
      );
    }
    return true;
  }

  /** Serves one push config method as the key; answers its result (v1.0's or v0.3's shape). */
  async handle(keyName: string, method: string, raw: unknown): Promise<unknown> {
    const params = record(raw ?? {});
    const v03 = V03_PUSH.has(method);
    const taskId = idOf(
      v03 && method !== 'tasks/pushNotificationConfig/set' ? params.id : params.taskId,
      v03 && method !== 'tasks/pushNotificationConfig/set' ? 'params.id (the task id)' : 'taskId',
    );
    const configId = (value: unknown) => idOf(value, v03 ? 'pushNotificationConfigId' : 'id (the config id)');
    switch (method) {
      case 'CreateTaskPushNotificationConfig':
      case 'tasks/pushNotificationConfig/set': {
        const { taskId: _t, tenant: _tenant, ...input } = v03 ? fromV03(params) : params;
        const config = checkPushConfig(input, taskId);
        await this.own(keyName, taskId);
        const saved = await this.put(keyName, config);
        await this.watch(keyName);
        return v03 ? toV03(saved) : saved;
      }
      case 'GetTaskPushNotificationConfig':
      case 'tasks/pushNotificationConfig/get': {
        await this.own(keyName, taskId);
        const wanted = v03 ? params.pushNotificationConfigId : params.id;
        const config =
          v03 && (wanted === undefined || wanted === '')
            ? this.store.list(keyName, taskId)[0]
            : this.store.get(keyName, taskId, configId(wanted));
        if (config === undefined) throw this.noConfig(taskId);
        return v03 ? toV03(config as Config) : config;
      }
      case 'ListTaskPushNotificationConfigs':
      case 'tasks/pushNotificationConfig/list': {
        await this.own(keyName, taskId);
        const configs = this.store.list(keyName, taskId) as Config[];
        return v03 ? configs.map(toV03) : pageOf(configs, params.pageSize, params.pageToken);
      }
      default: {
        const id = configId(v03 ? params.pushNotificationConfigId : params.id);
        await this.own(keyName, taskId);
        if (!this.store.delete(keyName, taskId, id)) throw this.noConfig(taskId);
        return v03 ? null : {};
      }
    }
  }

  /**
   * A send's push config (v1.0: `configuration.taskPushNotificationConfig`,
   * v0.3: `configuration.pushNotificationConfig`), checked before anything is
   * called and taken out of the params; `created` keeps it for the task the
   * send answers (its updates from then on reach the webhook).
   */
  takeFromSend(
    keyName: string,
    method: string,
    raw: unknown,
  ): { params: unknown; created: ((taskId: string) => Promise<void>) | undefined } {
    if (!SENDS.has(method)) return { params: raw, created: undefined };
    const field =
      method === 'SendMessage' || method === 'SendStreamingMessage'
        ? 'taskPushNotificationConfig'
        : 'pushNotificationConfig';
    const configuration = (raw as { configuration?: unknown } | undefined)?.configuration;
    if (configuration === null || typeof configuration !== 'object' || !Object.hasOwn(configuration, field)) {
      return { params: raw, created: undefined };
    }
    const { [field]: given, ...rest } = configuration as Record<string, unknown>;
    const params = { ...(raw as Record<string, unknown>), configuration: rest };
    if (given === undefined || given === null) return { params, created: undefined };
    const input = field === 'pushNotificationConfig' ? fromV03({ pushNotificationConfig: given }) : record(given);
    const { taskId: _t, tenant: _tenant, ...fields } = input;
    // Checked now (with a stand-in task id): a bad config refuses the send before it is made.
    checkPushConfig(fields, 'pending');
    return {
      params,
      created: async (taskId) => {
        await this.put(keyName, checkPushConfig(fields, taskId));
        await this.watch(keyName);
      },
    };
  }

  /**
   * Keeps a config. A key at its bound first gives up the configs of its
   * tasks that have ended or are gone (pruned): they are sent nothing more.
   */
  private async put(keyName: string, config: Config): Promise<Config> {
    const replacing = this.store.get(keyName, config.taskId, config.id) !== undefined;
    if (!replacing && !this.store.keyHasRoom(keyName)) await this.dropEnded(keyName);
    const saved = this.store.put(keyName, config) as Config;
    // A key's first config starts its cursor where its agent's events are now: a restart replays from there.
    await this.startCursor(keyName);
    return saved;
  }

  /** Deletes the configs of the key's tasks that have ended or no longer exist; how many. */
  private async dropEnded(keyName: string): Promise<number> {
    const ended = new Set<string>();
    for (const taskId of this.store.tasksOf(keyName)) {
      try {
        const { task } = await this.parties.call(keyName, (token) =>
          this.client.call('a2a.tasks.get', { token, id: taskId, historyLength: 0 }),
        );
        if (isTerminalState(task.status.state)) ended.add(taskId);
      } catch (error) {
        if (error instanceof BrokerError && error.code === 'A2A_UNKNOWN_TASK') ended.add(taskId);
        else throw error;
      }
    }
    const dropped = this.store.deleteTasks(keyName, ended);
    if (dropped > 0) {
      this.logger.info(
        { key: keyName, configs: dropped, tasks: ended.size },
        'gateway: the key reached its bound of push notification configs: those of its ended tasks are dropped',
      );
    }
    return dropped;
  }

  private noConfig(taskId: string): GatewayRefusal {
    return new GatewayRefusal(
      A2A_TASK_NOT_FOUND,
      200,
      `the task ${taskId} holds no push notification config of this id: list them with ListTaskPushNotificationConfigs`,
    );
  }

  /** Refuses (TASK_NOT_FOUND) a task that is not the key's: the broker answers only its party. */
  private async own(keyName: string, taskId: string): Promise<void> {
    await this.parties.call(keyName, (token) =>
      this.client.call('a2a.tasks.get', { token, id: taskId, historyLength: 0 }),
    );
  }

  private async watch(keyName: string): Promise<void> {
    if (this.watched.has(keyName)) return;
    this.watched.add(keyName);
    try {
      await this.parties.listen(keyName, ANY_TASK, (event) => this.updated(keyName, event));
    } catch (error) {
      this.watched.delete(keyName);
      this.logger.warn({ err: error, key: keyName }, 'gateway: cannot watch the tasks of a key for push notifications');
    }
  }

  private updated(keyName: string, event: DurableEvent): void {
    this.pushed(keyName, event);
    // Every event of the key's agent read here moves its cursor while the key holds configs (a gateway's own
    // end-of-task notice has no seq of the log).
    if (event.seq < Number.MAX_SAFE_INTEGER && this.store.cursor(keyName) !== undefined) {
      this.store.advance(keyName, event.seq);
      this.flushTimer ??= setTimeout(() => {
        this.flushTimer = undefined;
        this.flushCursors();
      }, CURSOR_FLUSH_MS).unref();
    }
  }

  private pushed(keyName: string, event: DurableEvent): void {
    if (event.method !== 'a2a.task.event') return;
    const e = event.params.event;
    if (e.kind !== 'status-update' && e.kind !== 'artifact-update') return;
    const configs = this.store.list(keyName, e.taskId);
    if (configs.length === 0) return;
    if (this.droppedRevoked(keyName)) return;
    let response: V1StreamResponse;
    try {
      response = (notificationToV1(event.method, event.params) as { event: V1StreamResponse }).event;
    } catch (error) {
      this.logger.warn(
        { err: error, taskId: e.taskId },
        'gateway: an update could not be written as A2A v1.0; not pushed',
      );
      return;
    }
    this.sender.send(e.taskId, configs, response);
  }
}
