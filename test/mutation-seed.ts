import { fc } from '@fast-check/vitest';

/**
 * Setup of the mutation run (vitest.mutate.config.ts): one fixed seed for
 * every property. `@fast-check/vitest` names each property test with its
 * seed, and Stryker runs a mutant's tests by the names it recorded, so a new
 * seed each run would name tests Stryker cannot find (no test would run, and
 * every mutant would survive). A fixed seed also makes the score repeatable;
 * `MUTATE_SEED` picks another. A mutant needs only to fail a property, not
 * its smallest counterexample: no shrinking (`endOnFailure`), which would
 * cost more than the run that found the failure.
 */
fc.configureGlobal({ seed: Number(process.env.MUTATE_SEED ?? 20_261_204), endOnFailure: true });
