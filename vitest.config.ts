import { connect } from 'node:net';
import { defineConfig } from 'vitest/config';

/**
 * Two projects: `default`, every test; and `coordinator-postgres`, the
 * Coordinator's own suite (test/coordinator) again with its store in
 * PostgreSQL and its bus and Context Engine in Redis
 * (`SWITCHBOARD_TEST_STORE=postgres`; see test/coordinator/helpers.ts). The
 * second needs a PostgreSQL and a Redis: without CI=true it runs only when
 * both answer (and says so when they do not); with CI=true it always runs,
 * so that a missing one fails it.
 */
function answers(url: string | undefined, fallback: string): Promise<boolean> {
  const { hostname, port } = new URL(url ?? fallback);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    socket.setTimeout(1000, () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('connect', () => {
      socket.end();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

const [postgresUp, redisUp] = await Promise.all([
  answers(process.env.SWITCHBOARD_TEST_POSTGRES_URL, 'postgres://127.0.0.1:5432'),
  answers(process.env.SWITCHBOARD_TEST_REDIS_URL, 'redis://127.0.0.1:6379'),
]);
const onPostgres = process.env.CI === 'true' || (postgresUp && redisUp);
if (!onPostgres) {
  process.stderr.write(
    'vitest: no PostgreSQL or Redis on 127.0.0.1: the Coordinator suite runs on SQLite only (project coordinator-postgres left out)\n',
  );
}

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores here: keep the pool small so that process-spawning tests do
    // not starve each other.
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default'],
    projects: [
      { extends: true, test: { name: 'default', include: ['test/**/*.test.ts'] } },
      ...(onPostgres
        ? [
            {
              extends: true,
              test: {
                name: 'coordinator-postgres',
                include: ['test/coordinator/**/*.test.ts'],
                exclude: [
                  // It runs on both stores by itself.
                  'test/coordinator/stores.test.ts',
                  // What only the embedded file has: its ownership, a crash and a restart
                  // on it, the demo's file, the embedded Context Engine's retention, and
                  // the cost ledger's pure arithmetic. PostgreSQL's restart, failover and
                  // fencing have tests of their own (stores, test/scaleout/postgres-*).
                  'test/coordinator/crash.test.ts',
                  'test/coordinator/ownership.test.ts',
                  'test/coordinator/restart.test.ts',
                  'test/coordinator/demo-cli.test.ts',
                  'test/coordinator/context-retention.test.ts',
                  'test/coordinator/cost-ledger.test.ts',
                  // It runs on the SQLite bus and on Redis by itself.
                  'test/coordinator/takeover-reclaim.test.ts',
                  // The results loop over a store of its own, and real errors of both stores.
                  'test/coordinator/result-retry.test.ts',
                ],
                env: { SWITCHBOARD_TEST_STORE: 'postgres' },
              },
            },
          ]
        : []),
    ],
  },
});
