import { describe, expect, it } from 'vitest';
import { TickBatch } from '../../src/bus/redis/tick-batch.js';

describe('TickBatch (one script call for the calls of one turn)', () => {
  it('sends the calls of one turn together, in order, each caller getting its own answer; a later turn is a new send', async () => {
    const sent: number[][] = [];
    const batch = new TickBatch<number, string>(async (inputs) => {
      sent.push(inputs);
      return inputs.map((n) => `answer ${n}`);
    });
    const first = await Promise.all([batch.add(1), batch.add(2), batch.add(3)]);
    expect(first).toEqual(['answer 1', 'answer 2', 'answer 3']);
    expect(await batch.add(4)).toBe('answer 4');
    expect(sent).toEqual([[1, 2, 3], [4]]);
  });

  it('a send that fails fails every call of its turn, and only those', async () => {
    let fail = true;
    const batch = new TickBatch<string, string>(async (inputs) => {
      if (fail) throw new Error('the server refused');
      return inputs;
    });
    const failed = await Promise.allSettled([batch.add('a'), batch.add('b')]);
    expect(failed.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect((failed[0] as PromiseRejectedResult).reason).toMatchObject({ message: 'the server refused' });
    fail = false;
    await expect(batch.add('c')).resolves.toBe('c');
  });
});
