import { describe, expect, it } from 'vitest';
import { type ContextStore, ContextStoreError } from '../../src/persistence/context/sqlite-store.js';
import { hop, completionRecord as record } from '../worker/helpers.js';

/**
 * The Context Engine contract: what every `ContextStore` (SQLite, Redis)
 * does, run against each by `runContextStoreContract`. `open()` returns a
 * store on the same data each time (a second call is a reopen, as another
 * process would see it); `unique()` returns a fresh run id namespace.
 */
export interface ContextStoreFactory {
  open(): Promise<ContextStore>;
}

export function runContextStoreContract(name: string, factory: () => ContextStoreFactory): void {
  describe(`the Context Engine contract: ${name}`, () => {
    it('hydrates an unknown run as empty', async () => {
      const store = await factory().open();
      expect(await store.hydrate('nobody')).toEqual({ runId: 'nobody', outputs: [], memory: {} });
      expect(await store.completion('nope')).toBeUndefined();
      expect(await store.checkpoint('nope')).toBeUndefined();
      expect(await store.effect('s', 'k')).toBeUndefined();
      await store.close();
    });

    it('records a completion whole and once; another process reads it', async () => {
      const f = factory();
      const store = await f.open();
      await store.updateMemory('run-1', { plan: ['a', 'b'], scratch: 1 });
      const first = await store.complete(
        record('k1', {
          memory: { scratch: null, decided: 'postgres' },
          checkpoint: { token: 'tok-1', state: { step: 2 }, headers: hop('k1').headers },
        }),
      );
      expect(first.first).toBe(true);
      const again = await store.complete(
        record('k1', { memory: { decided: 'mysql' }, outcome: 'failed', publishes: [] }),
      );
      expect(again.first).toBe(false);
      expect(again.completion.outcome).toBe('completed');
      expect(again.completion.publishes).toHaveLength(1);
      await store.complete(record('k2', { hop: 1, output: { parts: [{ kind: 'text', text: 'two' }], artifacts: [] } }));
      await store.close();

      const other = await f.open();
      const ctx = await other.hydrate('run-1');
      expect(ctx.memory).toEqual({ plan: ['a', 'b'], decided: 'postgres' });
      expect(ctx.outputs.map((o) => [o.idempotencyKey, o.hop, o.role, o.taskId])).toEqual([
        ['k1', 0, 'coder', 't1'],
        ['k2', 1, 'coder', 't1'],
      ]);
      expect(ctx.outputs[1]!.parts).toEqual([{ kind: 'text', text: 'two' }]);
      expect(await other.checkpoint('tok-1')).toMatchObject({
        token: 'tok-1',
        runId: 'run-1',
        state: { step: 2 },
        role: 'coder',
        headers: hop('k1').headers,
        resumedAt: undefined,
      });
      expect((await other.completion('k1'))!.publishes[0]!.idempotencyKey).toBe('k1:result');
      await other.close();
    });

    it('marks a checkpoint resumed by the completion that consumes it, once', async () => {
      const store = await factory().open();
      await store.complete(record('s1', { checkpoint: { token: 'tok-2', state: null, headers: hop('s1').headers } }));
      await store.complete(record('r1', { resumedToken: 'tok-2' }));
      const resumedAt = (await store.checkpoint('tok-2'))!.resumedAt;
      expect(resumedAt).toBeTypeOf('number');
      await store.complete(record('r2', { resumedToken: 'tok-2' }));
      expect((await store.checkpoint('tok-2'))!.resumedAt).toBe(resumedAt);
      // A resumed token that has no checkpoint creates none.
      await store.complete(record('r3', { resumedToken: 'ghost' }));
      expect(await store.checkpoint('ghost')).toBeUndefined();
      await store.close();
    });

    it('lets one of several concurrent completions of a key win', async () => {
      const store = await factory().open();
      const results = await Promise.all(
        [1, 2, 3, 4, 5].map((n) => store.complete(record('race', { hop: n, memory: { winner: n } }))),
      );
      expect(results.filter((r) => r.first)).toHaveLength(1);
      const ctx = await store.hydrate('run-1');
      expect(ctx.outputs.filter((o) => o.idempotencyKey === 'race')).toHaveLength(1);
      const winner = ctx.outputs.find((o) => o.idempotencyKey === 'race')!.hop;
      expect(ctx.memory.winner).toBe(winner);
      await store.close();
    });

    it('records effects once: the first value stays', async () => {
      const store = await factory().open();
      expect(await store.recordEffect('scope', 'k', { id: 1 })).toBe(true);
      expect(await store.recordEffect('scope', 'k', { id: 2 })).toBe(false);
      expect(await store.effect('scope', 'k')).toEqual({ value: { id: 1 } });
      expect(await store.effect('scope', 'other')).toBeUndefined();
      await store.close();
    });

    it("forgets a run's outputs, memory and checkpoints, and nothing else", async () => {
      const f = factory();
      const store = await f.open();
      await store.updateMemory('ended', { plan: 'a' });
      await store.complete(
        record('e1', { runId: 'ended', checkpoint: { token: 'tok-e1', state: 1, headers: hop('e1').headers } }),
      );
      await store.complete(record('e2', { runId: 'ended', resumedToken: 'tok-e1' }));
      await store.complete(
        record('e3', { runId: 'ended', checkpoint: { token: 'tok-e3', state: 3, headers: hop('e3').headers } }),
      );
      expect(await store.recordEffect('e2', 'charge', 1)).toBe(true);
      await store.updateMemory('live', { plan: 'b' });
      await store.complete(
        record('l1', { runId: 'live', checkpoint: { token: 'tok-l1', state: 4, headers: hop('l1').headers } }),
      );
      expect((await store.hydrate('ended')).outputs).toHaveLength(3);

      await store.forgetRun('ended');
      expect(await store.hydrate('ended')).toEqual({ runId: 'ended', outputs: [], memory: {} });
      // Its checkpoints, the resumed one and the one never resumed (the run ended while suspended).
      expect(await store.checkpoint('tok-e1')).toBeUndefined();
      expect(await store.checkpoint('tok-e3')).toBeUndefined();
      // Its idempotency records live out their own retention.
      expect(await store.completion('e2')).toMatchObject({ outcome: 'completed' });
      expect(await store.effect('e2', 'charge')).toEqual({ value: 1 });
      // Another run keeps everything.
      const live = await store.hydrate('live');
      expect(live.outputs.map((o) => o.idempotencyKey)).toEqual(['l1']);
      expect(live.memory).toEqual({ plan: 'b' });
      expect(await store.checkpoint('tok-l1')).toMatchObject({ runId: 'live', state: 4 });
      await store.close();

      // Seen from another process; forgetting again, or a run never seen, does nothing.
      const other = await f.open();
      expect((await other.hydrate('ended')).outputs).toEqual([]);
      await other.forgetRun('ended');
      await other.forgetRun('never-seen');
      expect((await other.hydrate('live')).outputs).toHaveLength(1);
      await expect(other.forgetRun('')).rejects.toMatchObject({ code: 'CONTEXT_INVALID_ARGUMENT' });
      await other.close();
      await expect(other.forgetRun('live')).rejects.toMatchObject({ code: 'CONTEXT_CLOSED' });
    });

    it('refuses bad input and writes nothing; a closed store refuses calls', async () => {
      const store = await factory().open();
      await expect(store.hydrate('')).rejects.toBeInstanceOf(ContextStoreError);
      await expect(
        store.complete(record('bad', { checkpoint: { token: 't', state: { n: 10n }, headers: hop(1).headers } })),
      ).rejects.toMatchObject({ code: 'CONTEXT_NOT_JSON' });
      await expect(store.complete(record('bad', { memory: { big: 10n } }))).rejects.toMatchObject({
        code: 'CONTEXT_NOT_JSON',
      });
      expect(await store.completion('bad')).toBeUndefined();
      expect(await store.checkpoint('t')).toBeUndefined();
      expect((await store.hydrate('run-1')).outputs).toEqual([]);
      await expect(store.updateMemory('run-1', [] as never)).rejects.toMatchObject({
        code: 'CONTEXT_INVALID_ARGUMENT',
      });
      await expect(store.recordEffect('', 'k', 1)).rejects.toMatchObject({ code: 'CONTEXT_INVALID_ARGUMENT' });
      await store.close();
      await expect(store.hydrate('run-1')).rejects.toMatchObject({ code: 'CONTEXT_CLOSED' });
      await expect(store.complete(record('late'))).rejects.toMatchObject({ code: 'CONTEXT_CLOSED' });
    });
  });
}
