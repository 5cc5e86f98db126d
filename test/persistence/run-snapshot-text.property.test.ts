import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { settleBranch, spawnJoin, startBranches } from '../../src/machines/workflow-run-join.js';
import type { RunJoin } from '../../src/machines/workflow-run-join-shapes.js';
import type { JsonValue } from '../../src/protocol/audit.js';
import { runSnapshotText } from '../../src/persistence/coordinator/run-snapshot-text.js';

/**
 * A run snapshot's text, its join's branches written from a cache, is the
 * text `JSON.stringify` writes, byte for byte: whatever the snapshot holds
 * beside the join, after any sequence of the join functions (each sharing
 * the branches it does not change), and for shapes that are no join at all.
 */

const json = fc.jsonValue({ maxDepth: 2 });
const snapshotOf = (join: unknown, around: Record<string, unknown>, before: Record<string, unknown>) => ({
  status: 'active',
  value: 'fanning',
  ...before,
  context: { hop: 3, output: around.output ?? null, join, ...around },
  historyValue: {},
});

describe('runSnapshotText', () => {
  test.prop([
    fc.integer({ min: 0, max: 60 }),
    fc.array(fc.record({ at: fc.nat(80), outcome: fc.constantFrom('completed', 'failed', 'canceled'), out: json }), {
      maxLength: 40,
    }),
    fc.dictionary(fc.string({ maxLength: 6 }), json, { maxKeys: 4 }),
    fc.dictionary(fc.string({ maxLength: 6 }), json, { maxKeys: 3 }),
  ])('equals JSON.stringify after any settles and starts of a join', (n, steps, around, before) => {
    let join: RunJoin = spawnJoin(
      'fan',
      2,
      Array.from({ length: n }, (_, i) => ({ key: `k${i}` })),
      null,
      { inputTokens: 0, outputTokens: 0, costUsd: 0 },
    );
    join = { ...join, maxConcurrency: Math.max(1, Math.floor(n / 2)) };
    const check = () => {
      const snapshot = snapshotOf(join, around, before);
      expect(runSnapshotText(snapshot)).toBe(JSON.stringify(snapshot));
    };
    check();
    for (const step of steps) {
      if (n === 0) break;
      const key = `k${step.at % n}`;
      join = settleBranch(join, key, {
        outcome: step.outcome as 'completed' | 'failed' | 'canceled',
        ...(step.outcome === 'completed' ? { output: step.out as JsonValue } : {}),
      });
      join = startBranches(join).join;
      check();
    }
  });

  test.prop([json, json])('equals JSON.stringify for any value (a join or not)', (a, b) => {
    for (const value of [a, { context: a }, { context: { join: a } }, { context: { join: { branches: a }, b } }]) {
      expect(runSnapshotText(value)).toBe(JSON.stringify(value));
    }
  });

  it('equals JSON.stringify when a branch holds the text of another snapshot, or branches are not objects', () => {
    const inner = JSON.stringify({ branches: Array.from({ length: 20 }, (_, i) => ({ key: i })) });
    const branches = Array.from({ length: 20 }, (_, i) => ({ key: `k${i}`, output: inner }));
    const snapshot = { context: { join: { stage: 's', branches }, note: inner } };
    expect(runSnapshotText(snapshot)).toBe(JSON.stringify(snapshot));
    const odd = { context: { join: { branches: [...Array.from({ length: 20 }, () => 1), null] } } };
    expect(runSnapshotText(odd)).toBe(JSON.stringify(odd));
    // Written twice (the second time from the cache): the same text.
    expect(runSnapshotText(snapshot)).toBe(JSON.stringify(snapshot));
  });
});
