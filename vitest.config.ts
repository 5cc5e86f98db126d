import { defineConfig } from 'vitest/config';

/**
 * Two projects: `default`, every test; and `coordinator-postgres`, the
 * Coordinator's own suite (test/coordinator) again with its store in
 * PostgreSQL and its bus and Context Engine in Redis
 * (`SWITCHBOARD_TEST_STORE=postgres`; see test/coordinator/helpers.ts). The
 * second needs a PostgreSQL and a Redis: they are probed by the tests that
 * use them, and with CI=true a missing one fails them.
 */
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
      {
        extends: true,
        test: {
          name: 'coordinator-postgres',
          include: ['test/coordinator/**/*.test.ts'],
          // It runs on both stores by itself.
          exclude: ['test/coordinator/stores.test.ts'],
          env: { SWITCHBOARD_TEST_STORE: 'postgres' },
        },
      },
    ],
  },
});
