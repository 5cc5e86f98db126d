import { describe, expect, it } from 'vitest';
import * as root from '../../src/index.js';

// The package root is what an embedder reads first: its runtime values stay
// few (the rest is under the subpaths). Types do not count.
const MAX_ROOT_VALUES = 120;

describe('the package root', () => {
  it(`has at most ${MAX_ROOT_VALUES} runtime values`, () => {
    const names = Object.keys(root);
    expect(names.length).toBeGreaterThan(0);
    expect(names.length, names.sort().join(' ')).toBeLessThanOrEqual(MAX_ROOT_VALUES);
  });

  it('exports few schemas and few constants: the rest are in a2a-switchboard/protocol', () => {
    const names = Object.keys(root);
    expect(names.filter((name) => name.endsWith('Schema')).length).toBeLessThanOrEqual(25);
    expect(names.filter((name) => /^[A-Z][A-Z0-9_]+$/.test(name)).length).toBeLessThanOrEqual(15);
  });
});
