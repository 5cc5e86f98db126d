import { randomUUID } from 'node:crypto';
import { PostgresCoordinatorStore } from '../../src/persistence/coordinator/postgres-store.js';
import { openPgPool } from '../../src/persistence/kernel/postgres.js';
import { createTestDatabase, withPassword } from '../postgres-availability.js';
import { REDIS_URL, deleteRedisPrefix } from '../redis-availability.js';
import { isLog, runCli, startCli, terminate } from '../scaleout/processes.js';

/**
 * A Coordinator's PostgreSQL database with finished work in it, for the
 * read commands' tests: a real `switchboard coordinator --db postgres://...
 * --bus redis://...` with its local workers runs `count` dev-sdlc items
 * submitted by `switchboard submit` to completion (or, with `approve:
 * false`, until each waits for the release manager's approval), then stops. The URL
 * carries a password (trust auth ignores it) that no output may show.
 */
export interface PostgresWithItems {
  /** The database URL with `secret` as its password. */
  url: string;
  secret: string;
  /** The Redis bus flags of the deployment. */
  bus: string[];
  itemIds: string[];
  cleanup(): Promise<void>;
}

export async function postgresWithItems(
  count: number,
  options: { approve?: boolean } = {},
): Promise<PostgresWithItems> {
  const approve = options.approve ?? true;
  const until = approve ? 'completed' : 'awaiting-approval';
  const database = await createTestDatabase('sb_cliurl');
  const prefix = `cliurl-${randomUUID().slice(0, 8)}`;
  const secret = `pw-${randomUUID().slice(0, 12)}`;
  const url = withPassword(database.url, secret);
  const bus = ['--bus', REDIS_URL, '--bus-prefix', prefix];
  const cleanup = async () => {
    await deleteRedisPrefix(prefix);
    await database.drop();
  };
  const coordinator = startCli('coordinator', [
    'coordinator',
    '--db',
    url,
    ...bus,
    '--local-workers',
    ...(approve ? ['--auto-approve', 'release-manager'] : []),
  ]);
  try {
    await coordinator.waitForLine(isLog('coordinator ready'), 30_000, { seen: true });
    const submitted = await runCli([
      'submit',
      ...bus,
      '--workflow',
      'dev-sdlc',
      '--input',
      'Add rate limiting',
      '--id',
      'pg',
      '--count',
      String(count),
    ]);
    if (submitted.code !== 0) throw new Error(`submit: ${submitted.stderr}`);
    const deadline = Date.now() + 90_000;
    for (;;) {
      const r = await runCli(['items', 'list', '--db', url, '--json']);
      const items = (JSON.parse(r.stdout) as { items: { id: string; state: string }[] }).items;
      if (items.length === count && items.every((i) => i.state === until)) {
        const stopped = await terminate(coordinator);
        if (stopped.code !== 0) throw new Error(`the coordinator exited ${stopped.code}`);
        return { url, secret, bus, itemIds: items.map((i) => i.id), cleanup };
      }
      if (Date.now() > deadline) throw new Error(`items did not reach ${until}: ${JSON.stringify(items)}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  } catch (error) {
    await terminate(coordinator);
    await cleanup();
    throw error;
  }
}

/** A fresh database whose Coordinator tables claim a schema one version newer than this switchboard's. */
export async function postgresOfNewerSchema(): Promise<{ url: string; drop(): Promise<void> }> {
  const database = await createTestDatabase('sb_cliurl_new');
  const pool = await openPgPool(database.url, { max: 1 });
  try {
    await PostgresCoordinatorStore.open(pool);
    await pool.query("UPDATE schema_version SET version = version + 1 WHERE component = 'coordinator'");
  } finally {
    await pool.end();
  }
  return { url: database.url, drop: () => database.drop() };
}
