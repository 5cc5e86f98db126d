import { describe, expect, it } from 'vitest';
import { createSequentialIdSource, createUuidV7Source } from '../../src/persistence/kernel/ids.js';

describe('ids', () => {
  it('UUIDv7 ids are well formed and sort in creation order, even within one millisecond', () => {
    let t = 1_700_000_000_000;
    const source = createUuidV7Source(() => t);
    const ids: string[] = [];
    for (let i = 0; i < 5000; i++) {
      if (i % 1000 === 0) t += 1;
      ids.push(source.next());
    }
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('stays ordered when the clock steps back', () => {
    const times = [10_000, 10_005, 9_000, 9_000, 10_006];
    let i = 0;
    const source = createUuidV7Source(() => times[i++] ?? 0);
    const ids = times.map(() => source.next());
    expect([...ids].sort()).toEqual(ids);
  });

  it('sequential ids are predictable for tests', () => {
    const s = createSequentialIdSource('task');
    expect([s.next(), s.next()]).toEqual(['task-000001', 'task-000002']);
  });
});
