import type * as NodeRedis from 'redis';

/** The `redis` package (node-redis) as loaded: only the types are imported statically. */
export type NodeRedisModule = typeof NodeRedis;

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
  loading ??= import('redis');
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
