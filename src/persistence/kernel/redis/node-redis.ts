import type * as NodeRedis from 'redis';

/**
 * The Redis client of the stores that can live there (the work bus's Redis
 * Streams backend and the Context Engine's Redis store): the client library
 * (`redis`, node-redis, an optional peer dependency loaded on first use,
 * never on the embedded path), clients made alike, and connecting within a
 * deadline. Errors are the caller's: each passes the error it raises.
 */

/**
 * The `redis` package (node-redis) as loaded, as its callers hold it: only
 * `createRedisClient` looks inside. (The package's types are used in this
 * file's bodies only, so that no declaration of switchboard needs them: a
 * user without the optional peer type-checks.)
 */
export interface NodeRedisModule {
  createClient(options: object): unknown;
}

/**
 * What switchboard uses of a node-redis client, declared here (a client that
 * `createRedisClient` makes is one).
 */
export interface RedisClient {
  /** True while connected (or connecting). */
  readonly isOpen: boolean;
  /** True once connected and ready for commands. */
  readonly isReady: boolean;
  connect(): Promise<unknown>;
  /** Closes after the commands sent are answered. */
  close(): Promise<unknown>;
  /** Sends QUIT and closes. */
  quit(): Promise<unknown>;
  /** Closes at once; commands in flight fail. */
  destroy(): void;
  // biome-ignore lint/suspicious/noExplicitAny: node-redis's listeners take events of many shapes
  on(event: string, listener: (...args: any[]) => void): unknown;
  clientId(): Promise<number>;
  /** One command as its words; `options.timeout` 0 lifts the client's timeout. */
  sendCommand(args: readonly string[], options?: { timeout?: number }): Promise<unknown>;
  xLen(key: string): Promise<number>;
  sMembers(key: string): Promise<string[]>;
  hGetAll(key: string): Promise<Record<string, string>>;
  hGet(key: string, field: string): Promise<string | null>;
}

/** The versions of the optional peer dependency `redis` this code works with (package.json `peerDependencies`). */
export const NODE_REDIS_RANGE = '^6.3.1';

let loading: Promise<NodeRedisModule> | undefined;

/**
 * Loads `redis` on first use: the embedded (SQLite) path never loads it, and
 * it need not be installed for that. When it cannot be found, rejects with the
 * error `missing` makes of a message that says what to install.
 */
export async function loadNodeRedis(
  user: string,
  missing: (message: string, cause: unknown) => Error,
): Promise<NodeRedisModule> {
  loading ??= import('redis') as Promise<NodeRedisModule>;
  try {
    return await loading;
  } catch (error) {
    loading = undefined;
    if ((error as NodeJS.ErrnoException)?.code === 'ERR_MODULE_NOT_FOUND') {
      throw missing(
        `${user} needs the package 'redis' (node-redis ${NODE_REDIS_RANGE}), which cannot be found: ` +
          "run 'npm install redis@6' in the project that uses switchboard",
        error,
      );
    }
    throw error;
  }
}

/** What `createRedisClient` needs: the server, the client's name, how long connecting may take. */
export interface RedisClientOptions {
  /** `redis://host:port[/db]`. */
  url: string;
  /** The name `CLIENT LIST` shows. */
  name: string;
  connectTimeoutMs: number;
}

/**
 * A client of `url`, not yet connected, made as every Redis user of
 * switchboard makes it: RESP2 replies, no offline queue, reconnection with a
 * capped backoff. The caller listens to its `error` events.
 */
export function createRedisClient(redis: NodeRedisModule, options: RedisClientOptions): RedisClient {
  const client = (redis as typeof NodeRedis).createClient({
    url: options.url,
    name: options.name,
    RESP: 2,
    // While the connection is down, calls fail at once (with the caller's
    // backend error) instead of queueing without bound. node-redis reconnects
    // by itself.
    disableOfflineQueue: true,
    socket: {
      connectTimeout: options.connectTimeoutMs,
      reconnectStrategy: (retries: number) => Math.min(20 * 2 ** retries, 1000),
    },
  });
  // Checked here: a node-redis client is a `RedisClient`.
  return client satisfies RedisClient;
}

/**
 * Connects `client`, or fails once `timeoutMs` has passed with the error
 * `late` makes. A client that fails to connect is destroyed (nothing keeps
 * reconnecting behind the caller); an error of the client itself is thrown
 * as it came, for the caller to wrap in its own.
 */
export async function connectWithin(client: RedisClient, timeoutMs: number, late: () => Error): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), timeoutMs);
  });
  try {
    await Promise.race([client.connect(), timeout]);
  } catch (error) {
    client.destroy();
    throw error;
  } finally {
    clearTimeout(timer);
  }
}
