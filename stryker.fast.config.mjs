// @ts-check
/**
 * The quick mutation run: stryker.config.mjs with the module tests only
 * (vitest.mutate-fast.config.ts), a lower bound of the full run's score.
 * `npm run mutate -- stryker.fast.config.mjs --mutate src/workflow/governance.ts --concurrency 1`.
 */
import config from './stryker.config.mjs';

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default { ...config, vitest: { configFile: 'vitest.mutate-fast.config.ts' } };
