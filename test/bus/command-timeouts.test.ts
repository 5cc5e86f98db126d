import { describe, expect, it } from 'vitest';
import { CommandTimeouts, RedisCommandTimeoutError } from '../../src/persistence/kernel/redis/command-timeouts.js';

/**
 * The Redis clients' command timeout kept by one sweep: a call unanswered
 * for the timeout fails (as node-redis's own per-command timeout failed it);
 * a call answered in time, or failed by the server, settles as it did.
 */
describe('CommandTimeouts', () => {
  it('fails a call unanswered for timeoutMs, and only such calls (the oldest first)', async () => {
    let now = 1_000;
    const timeouts = new CommandTimeouts({ timeoutMs: 5_000, now: () => now });
    try {
      const never = () => new Promise<string>(() => undefined);
      const old = timeouts.watch(never);
      now += 3_000;
      const young = timeouts.watch(never);
      let answer!: (value: string) => void;
      const answered = timeouts.watch(() => new Promise<string>((resolve) => (answer = resolve)));
      const refused = timeouts.watch(() => Promise.reject(new Error('ERR wrong number of arguments')));
      await expect(refused).rejects.toThrow('ERR wrong number');
      answer('OK');
      await expect(answered).resolves.toBe('OK');

      now += 1_999;
      timeouts.sweep();
      let youngSettled = false;
      void young.then(
        () => (youngSettled = true),
        () => (youngSettled = true),
      );
      await expect(Promise.race([old.then(() => 'answered'), Promise.resolve('waiting')])).resolves.toBe('waiting');

      now += 1;
      timeouts.sweep();
      await expect(old).rejects.toBeInstanceOf(RedisCommandTimeoutError);
      await Promise.resolve();
      expect(youngSettled).toBe(false);

      now += 3_000;
      timeouts.sweep();
      await expect(young).rejects.toThrow('Command timed out (no answer within 5000 ms)');
    } finally {
      timeouts.close();
    }
  });

  it('sweeps by itself on a timer', async () => {
    const timeouts = new CommandTimeouts({ timeoutMs: 50 });
    try {
      const started = Date.now();
      await expect(timeouts.watch(() => new Promise(() => undefined))).rejects.toBeInstanceOf(RedisCommandTimeoutError);
      expect(Date.now() - started).toBeGreaterThanOrEqual(45);
      expect(Date.now() - started).toBeLessThan(1_000);
    } finally {
      timeouts.close();
    }
  });
});
