// @ts-check
/**
 * The mutation run of the pure core (`npm run mutate`; docs/testing.md):
 * StrykerJS mutates every module of the pure rooms and runs the fast unit and
 * property tests (vitest.mutate.config.ts) against each mutant. Reports go
 * to .mutation/ (git-ignored). One module: `npm run mutate -- --mutate
 * src/decisions/lease-decision.ts`.
 *
 * Per-module thresholds are `moduleThresholds` below, checked by
 * scripts/mutate.mjs after the run (Stryker's own thresholds are global).
 * stryker.fast.config.mjs is the quick run (module tests only).
 *
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
const config = {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutate.config.ts' },
  plugins: ['@stryker-mutator/vitest-runner'],
  mutate: ['src/machines/**/*.ts', 'src/decisions/**/*.ts', 'src/workflow/**/*.ts'],
  coverageAnalysis: 'perTest',
  concurrency: 2,
  timeoutMS: 20_000,
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: '.mutation/report.html' },
  jsonReporter: { fileName: '.mutation/report.json' },
  tempDirName: '.mutation/tmp',
  cleanTempDir: 'always',
  ignorePatterns: ['dist', '.tmp', '.mutation', 'bench', 'coverage'],
  thresholds: { high: 90, low: 80, break: null },
};
export default config;

/**
 * Each module's mutation score (detected over detected plus undetected) must
 * reach its threshold, in percent: its own path's entry, else the longest
 * folder entry holding it, else `default`. The pure core's bar is 90; a
 * module below it today is held to the score it has (a ratchet: raise it as
 * its tests improve, never lower it).
 *
 * Equivalent mutants left alive, by module (a survivor that behaves exactly
 * as the original; every other survivor is a missing test):
 * - src/decisions/lease-decision.ts: none (191 mutants, all detected).
 * - src/workflow/governance.ts (320 mutants, 312 detected in the quick run):
 *   equivalent: the four `budget.maxX !== undefined` guards of
 *   `budgetStatus` made `true` (a comparison with undefined is false anyway).
 *   Not yet analysed: `typeof entry === 'function'` made true in
 *   `policyName`, the `!Array.isArray(a)` approvers check made true, the
 *   'budget spent' reason made "", `CASCADE_POLICY_NAME` made "" (static).
 */
export const moduleThresholds = {
  default: 90,
  'src/decisions/lease-decision.ts': 90,
  'src/machines/task-transitions.ts': 97,
  'src/workflow/cost-ledger.ts': 95,
  // 87.2% when first measured; 97.5% with its rules as properties (quick run).
  'src/workflow/governance.ts': 97,
};
