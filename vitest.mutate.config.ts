import { defineConfig } from 'vitest/config';

/**
 * The tests a mutation run (`npm run mutate`) runs against each mutant: the
 * fast unit and property tests of the pure rooms only (no process, socket,
 * database or service), so that every mutant of `src/machines`,
 * `src/decisions`, `src/workflow` and the model agents' pure modules is
 * judged in milliseconds.
 */
export default defineConfig({
  test: {
    include: [
      'test/machines/**/*.test.ts',
      'test/decisions/**/*.test.ts',
      'test/governance/**/*.test.ts',
      'test/workflow/**/*.test.ts',
      'test/coordinator/cost-ledger.test.ts',
      // The model agents' pure modules.
      'test/agents/pricing.test.ts',
      'test/agents/mcp-tool-result.test.ts',
      'test/agents/*-rules.property.test.ts',
      // The bus's delivery rules and the worker pool's plan: pure, though filed by their users.
      'test/bus/delivery-machine.test.ts',
      'test/worker/pool-machine.test.ts',
    ],
    setupFiles: ['test/mutation-seed.ts'],
    testTimeout: 60_000,
  },
});
