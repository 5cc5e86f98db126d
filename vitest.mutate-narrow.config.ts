import { defineConfig } from 'vitest/config';

/**
 * The narrow mutation runs (`MUTATE_SELECTION=NAME npm run mutate --
 * stryker.narrow.config.mjs --mutate FILE`), for modules whose mutants are
 * mostly static: a table or a schema built as the module loads, which
 * Stryker cannot tie to single tests, so that each such mutant reruns every
 * test of the selection. The quick selection (vitest.mutate-fast.config.ts)
 * then takes hours; a selection of the tests written for the module and the
 * model tests over it takes minutes. Fewer tests can only detect fewer
 * mutants: a narrow score is a lower bound of the full run's.
 */
const SELECTIONS: Record<string, string[]> = {
  // The workflow run machine: its table, context, effects and the machine built from them.
  'run-machine': [
    'test/machines/workflow-run-*.test.ts',
    'test/machines/step-run.test.ts',
    // A table row that makes the machine throw as it is built fails a test here, not only a file's loading.
    'test/machines/machine-names-rules.property.test.ts',
    'test/decisions/decide.property.test.ts',
    'test/decisions/tree-budget.model.test.ts',
    'test/decisions/work-rules.property.test.ts',
    'test/decisions/route-audit-rules.property.test.ts',
    'test/decisions/hop-timeout-default.test.ts',
    'test/workflow/composition.test.ts',
  ],
  // The model agents' pure modules (their schemas are built as the modules load).
  agents: [
    'test/agents/*-rules.property.test.ts',
    'test/agents/pricing.test.ts',
    'test/agents/mcp-tool-result.test.ts',
  ],
  // The definition's own checks (its schema's problems, its graph's, its JSON) without the stages' rules.
  definition: [
    'test/workflow/definition-rules.property.test.ts',
    'test/workflow/definition-graph-rules.property.test.ts',
    'test/workflow/branching-definitions.test.ts',
    'test/workflow/workflow-definition.test.ts',
  ],
  // The checks a workflow definition passes as it loads (its stages' and its graph's).
  'stage-checks': [
    'test/workflow/stage-checks-rules.property.test.ts',
    'test/workflow/definition-graph-rules.property.test.ts',
    'test/workflow/branching-definitions.test.ts',
    'test/workflow/workflow-definition.test.ts',
  ],
};

const name = process.env.MUTATE_SELECTION ?? '';
const include = SELECTIONS[name];
if (include === undefined) {
  throw new Error(
    `MUTATE_SELECTION must name a narrow selection (${Object.keys(SELECTIONS).join(', ')}); got ${JSON.stringify(name)}`,
  );
}

export default defineConfig({
  test: {
    include,
    setupFiles: ['test/mutation-seed.ts'],
    testTimeout: 60_000,
  },
});
