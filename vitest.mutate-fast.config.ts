import { defineConfig } from 'vitest/config';

/**
 * The quick mutation run (`npm run mutate -- stryker.fast.config.mjs --mutate
 * FILE`): only the tests written for the pure modules themselves, not the
 * decisions', the workflow run machine's or the composition tests that also
 * reach them. Fewer tests can only detect fewer mutants, so its score is a
 * lower bound of the full run's (vitest.mutate.config.ts), in a fraction of
 * the time on a loaded machine.
 */
export default defineConfig({
  test: {
    include: [
      'test/governance/**/*.test.ts',
      'test/workflow/*-rules.property.test.ts',
      'test/workflow/item-output.test.ts',
      'test/workflow/task-view.test.ts',
      'test/workflow/branching-definitions.test.ts',
      'test/machines/workflow-run-join.property.test.ts',
      'test/machines/workflow-run-join-index.property.test.ts',
      'test/decisions/*-rules.property.test.ts',
      // The deployment's default hop timeout, decided purely (timer.ts's `hopTimeoutMs > 0`).
      'test/decisions/hop-timeout-default.test.ts',
      'test/coordinator/cost-ledger.test.ts',
      // The model agents' pure modules.
      'test/agents/pricing.test.ts',
      'test/agents/mcp-tool-result.test.ts',
      'test/agents/*-rules.property.test.ts',
      'test/machines/*-rules.property.test.ts',
      'test/machines/agent-machine.test.ts',
      'test/machines/task-machine.test.ts',
      'test/bus/delivery-machine.test.ts',
      'test/worker/pool-machine.test.ts',
    ],
    setupFiles: ['test/mutation-seed.ts'],
    testTimeout: 60_000,
  },
});
