import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores here: keep the pool small so that process-spawning tests do
    // not starve each other.
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default'],
  },
});
