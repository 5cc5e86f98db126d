// @ts-check
/**
 * A narrow mutation run: stryker.config.mjs with one named selection of
 * tests (vitest.mutate-narrow.config.ts), for modules whose mutants are
 * mostly static. `MUTATE_SELECTION=run-machine npm run mutate --
 * stryker.narrow.config.mjs --mutate src/machines/workflow-run-transitions.ts`.
 */
import config from './stryker.config.mjs';

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default { ...config, vitest: { configFile: 'vitest.mutate-narrow.config.ts' } };
