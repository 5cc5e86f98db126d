import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { type V1TaskPushNotificationConfig, V1TaskPushNotificationConfigSchema } from '../protocol/a2a-v1/schemas.js';
import { GatewayRefusal } from './gateway-errors.js';
import { GatewayError } from './gateway-keys.js';

/**
 * The push notification configs of the gateway's tasks, by key: each one a
 * webhook the gateway POSTs the task's updates to. Kept in a JSON file
 * beside the keys file (written whole to a temporary file and renamed), so
 * that they outlive a restart. Bounded: a task holds at most
 * `MAX_PUSH_CONFIGS_PER_TASK` configs, a key at most `MAX_PUSH_CONFIGS_PER_KEY`.
 */

export const MAX_PUSH_CONFIGS_PER_TASK = 10;
export const MAX_PUSH_CONFIGS_PER_KEY = 1000;
const MAX_URL = 2048;
const MAX_ID = 128;
const MAX_TOKEN = 1024;
const MAX_SCHEME = 64;
const MAX_CREDENTIALS = 4096;

/** The push file of a keys file: `X.gateway-push.json` beside `X.gateway-keys.json`. */
export function pushFileOf(keysFile: string): string {
  return keysFile.endsWith('.gateway-keys.json')
    ? `${keysFile.slice(0, -'.gateway-keys.json'.length)}.gateway-push.json`
    : `${keysFile}.push.json`;
}

interface StoredConfig {
  readonly key: string;
  readonly config: V1TaskPushNotificationConfig & { id: string; url: string };
}

function invalid(message: string): GatewayRefusal {
  return new GatewayRefusal(-32602, 200, message);
}

/**
 * A config as a client sent it, checked: an http(s) URL, bounded strings;
 * an id of the client's or a new one. Anything else is refused with what to send.
 */
export function checkPushConfig(
  raw: unknown,
  taskId: string,
): V1TaskPushNotificationConfig & { id: string; url: string } {
  const parsed = V1TaskPushNotificationConfigSchema.safeParse({ ...(raw as object), taskId });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw invalid(
      `the push notification config is not one A2A v1.0 takes (${issue?.path.join('.') || 'config'}: ${issue?.message}): send {url, token?, id?, authentication?: {scheme, credentials}}`,
    );
  }
  const p = parsed.data;
  if (p.url === undefined || p.url === '')
    throw invalid('a push notification config needs a url: the http(s) webhook to POST updates to');
  if (p.url.length > MAX_URL) throw invalid(`the url is longer than ${MAX_URL} characters: send a shorter webhook url`);
  let url: URL;
  try {
    url = new URL(p.url);
  } catch {
    throw invalid(`the url '${p.url.slice(0, 80)}' is not a URL: send an absolute http(s) webhook url`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw invalid(`the url's scheme '${url.protocol}' is not http or https: send an http(s) webhook url`);
  }
  const id = p.id === undefined || p.id === '' ? randomUUID() : p.id;
  if (id.length > MAX_ID)
    throw invalid(`the config id is longer than ${MAX_ID} characters: send a shorter id, or none`);
  if (p.token !== undefined && p.token.length > MAX_TOKEN) {
    throw invalid(`the token is longer than ${MAX_TOKEN} characters: send a shorter token`);
  }
  const auth = p.authentication;
  if (auth !== undefined) {
    if (auth.scheme === '' || auth.scheme.length > MAX_SCHEME || !/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(auth.scheme)) {
      throw invalid(
        `authentication.scheme must be an HTTP auth scheme name (as Bearer or Basic) of at most ${MAX_SCHEME} characters`,
      );
    }
    if ((auth.credentials ?? '').length > MAX_CREDENTIALS || /[\r\n]/.test(auth.credentials ?? '')) {
      throw invalid(`authentication.credentials must be one line of at most ${MAX_CREDENTIALS} characters`);
    }
  }
  if (p.token !== undefined && /[\r\n]/.test(p.token))
    throw invalid('the token must be one line: send it without line breaks');
  return {
    id,
    taskId,
    url: p.url,
    ...(p.token === undefined || p.token === '' ? {} : { token: p.token }),
    ...(auth === undefined ? {} : { authentication: auth }),
  };
}

/**
 * The configs, held in memory and written through to the file on every
 * change; and, per key, the seq of the last event of its agent the gateway
 * has handed to the webhooks (its cursor), written with the next change or
 * `flush()`: a restarted gateway replays the key's events after it.
 */
export class PushStore {
  private readonly file: string | undefined;
  private configs: StoredConfig[];
  private cursors: Record<string, number>;
  private cursorsDirty = false;

  /** `file` undefined: held in memory only. */
  constructor(file: string | undefined) {
    this.file = file;
    const read = file === undefined ? { configs: [], cursors: {} } : PushStore.read(file);
    this.configs = read.configs;
    this.cursors = read.cursors;
  }

  private static read(file: string): { configs: StoredConfig[]; cursors: Record<string, number> } {
    if (!existsSync(file)) return { configs: [], cursors: {} };
    let raw: { gatewayPush?: unknown; configs?: unknown } | null;
    try {
      raw = JSON.parse(readFileSync(file, 'utf8'));
    } catch (error) {
      throw new GatewayError(
        'GATEWAY_PUSH_FILE',
        `cannot read the push configs file ${file}: ${(error as Error).message}`,
        {
          details: { file },
          cause: error,
        },
      );
    }
    if (raw === null || typeof raw !== 'object' || raw.gatewayPush !== 1 || !Array.isArray(raw.configs)) {
      throw new GatewayError(
        'GATEWAY_PUSH_FILE',
        `${file} is not a gateway push configs file: move it away (the gateway writes it; its configs are then lost)`,
        { details: { file } },
      );
    }
    // Cursors are an addition: a file without them (or with a bad one) replays as a new gateway does.
    const cursors: Record<string, number> = {};
    const given = (raw as { cursors?: unknown }).cursors;
    if (given !== null && typeof given === 'object' && !Array.isArray(given)) {
      for (const [key, seq] of Object.entries(given))
        if (Number.isSafeInteger(seq) && (seq as number) >= 0) cursors[key] = seq as number;
    }
    return { configs: raw.configs as StoredConfig[], cursors };
  }

  /** The seq of the last event of the key's agent handed to the webhooks, if any was. */
  cursor(key: string): number | undefined {
    return this.cursors[key];
  }

  /**
   * Moves the key's cursor forward to `seq` (kept in memory until the next
   * write or `flush()`). A key keeps a cursor while it holds configs: one
   * that holds none (all deleted, or revoked) has none, and its next first
   * config starts one anew.
   */
  advance(key: string, seq: number): void {
    if (seq <= (this.cursors[key] ?? -1) || !this.configs.some((c) => c.key === key)) return;
    this.cursors = { ...this.cursors, [key]: seq };
    this.cursorsDirty = true;
  }

  /** Writes the cursors moved since the last write. */
  flush(): void {
    if (this.cursorsDirty) this.write(this.configs);
  }

  /** The keys that hold at least one config. */
  keys(): string[] {
    return [...new Set(this.configs.map((c) => c.key))];
  }

  /** Adds (or replaces, by id) a config of the key's task; refused past the bounds. */
  put(key: string, config: StoredConfig['config']): StoredConfig['config'] {
    const others = this.configs.filter(
      (c) => !(c.key === key && c.config.taskId === config.taskId && c.config.id === config.id),
    );
    const replacing = others.length < this.configs.length;
    if (!replacing) {
      if (this.list(key, config.taskId).length >= MAX_PUSH_CONFIGS_PER_TASK) {
        throw invalid(
          `the task holds ${MAX_PUSH_CONFIGS_PER_TASK} push notification configs, the most it may: delete one first (DeleteTaskPushNotificationConfig), or send the id of one to replace it`,
        );
      }
      if (this.configs.filter((c) => c.key === key).length >= MAX_PUSH_CONFIGS_PER_KEY) {
        throw invalid(
          `the key holds ${MAX_PUSH_CONFIGS_PER_KEY} push notification configs of open tasks, the most it may: delete some (DeleteTaskPushNotificationConfig) or wait for their tasks to end`,
        );
      }
    }
    this.write([...others, { key, config }]);
    return config;
  }

  list(key: string, taskId: string): StoredConfig['config'][] {
    return this.configs.filter((c) => c.key === key && c.config.taskId === taskId).map((c) => c.config);
  }

  get(key: string, taskId: string, id: string): StoredConfig['config'] | undefined {
    return this.list(key, taskId).find((c) => c.id === id);
  }

  /** Whether a new config of the key (not a replacement) would pass the key's bound. */
  keyHasRoom(key: string): boolean {
    return this.configs.filter((c) => c.key === key).length < MAX_PUSH_CONFIGS_PER_KEY;
  }

  /** The tasks the key holds configs of. */
  tasksOf(key: string): string[] {
    return [...new Set(this.configs.filter((c) => c.key === key).map((c) => c.config.taskId))];
  }

  /** Deletes every config of these tasks of the key; how many there were. */
  deleteTasks(key: string, taskIds: ReadonlySet<string>): number {
    const kept = this.configs.filter((c) => !(c.key === key && taskIds.has(c.config.taskId)));
    const removed = this.configs.length - kept.length;
    if (removed > 0) this.write(kept);
    return removed;
  }

  /** Deletes every config of a key (a revoked key's), and so its cursor; how many configs there were. */
  deleteKey(key: string): number {
    const kept = this.configs.filter((c) => c.key !== key);
    const removed = this.configs.length - kept.length;
    if (removed > 0 || Object.hasOwn(this.cursors, key)) this.write(kept);
    return removed;
  }

  /** Deletes a config; whether there was one. */
  delete(key: string, taskId: string, id: string): boolean {
    const kept = this.configs.filter((c) => !(c.key === key && c.config.taskId === taskId && c.config.id === id));
    if (kept.length === this.configs.length) return false;
    this.write(kept);
    return true;
  }

  private write(configs: StoredConfig[]): void {
    // A cursor is kept while its key holds configs.
    const holding = new Set(configs.map((c) => c.key));
    const cursors = Object.fromEntries(Object.entries(this.cursors).filter(([key]) => holding.has(key)));
    if (this.file === undefined) {
      this.configs = configs;
      this.cursors = cursors;
      this.cursorsDirty = false;
      return;
    }
    const temporary = `${this.file}.${process.pid}.tmp`;
    try {
      const body = { gatewayPush: 1, configs, cursors };
      writeFileSync(temporary, `${JSON.stringify(body, null, 2)}\n`, { mode: 0o600 });
      renameSync(temporary, this.file);
    } catch (error) {
      throw new GatewayError(
        'GATEWAY_PUSH_FILE',
        `cannot write the push configs file ${this.file}: ${(error as Error).message}`,
        {
          details: { file: this.file },
          cause: error,
        },
      );
    }
    this.configs = configs;
    this.cursors = cursors;
    this.cursorsDirty = false;
  }
}
