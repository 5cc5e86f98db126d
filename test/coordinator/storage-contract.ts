import { generateKeyPairSync } from 'node:crypto';
import { firstValueFrom, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import type { CoordinatorStorage, LiveItems } from '../../src/actors/coordinator/storage/coordinator-storage.js';
import type { ItemRecord } from '../../src/workflow/records.js';
import { created, item } from '../persistence/coordinator-store-contract.js';

/**
 * The contract of the Coordinator's storage seam (`CoordinatorStorage`),
 * kept alike by the SQLite and the PostgreSQL implementation: the audit
 * chain (asynchronous on both), the reads a stream makes synchronously
 * (`liveNow`, `itemNow`) and the read that completes them (`itemNotNow`),
 * the item traces' store, and closing. Nothing here asks which backend runs.
 */

export interface OpenedStorage {
  storage: CoordinatorStorage;
  /** Closes the storage (if the test did not) and removes its data. */
  cleanup(): Promise<void>;
}

/** The engine's memory as the seam sees it: the live items it holds. */
function liveOf(items: ItemRecord[]): LiveItems {
  return {
    liveItems: () => items.filter((i) => i.finishedAt === null),
    liveItem: (id) => items.find((i) => i.id === id && i.finishedAt === null),
  };
}

/** What a stream reads of an item: synchronously where it can, else from the tables. */
async function itemAsStreamed(storage: CoordinatorStorage, id: string, live: LiveItems) {
  return storage.itemNow(id, live) ?? (await firstValueFrom(storage.itemNotNow(id)));
}

export function runCoordinatorStorageContract(name: string, run: boolean, open: () => Promise<OpenedStorage>): void {
  describe.runIf(run)(`CoordinatorStorage contract: ${name}`, () => {
    let opened: OpenedStorage | undefined;
    afterEach(async () => {
      await opened?.cleanup();
      opened = undefined;
    });

    it('keeps the audit chain behind the one asynchronous AuditChain: appends, lists, heads, signs and verifies', async () => {
      opened = await open();
      const { audit } = opened.storage;
      const before = await audit.head();
      const appended = await audit.appendMany([
        { kind: 'item-created', itemId: 'a', actor: 'coordinator', data: { n: 1 } },
        { kind: 'dispatch', itemId: 'a', actor: 'coordinator', data: { n: 2 } },
      ]);
      expect(appended.map((a) => a.seq)).toEqual([before.seq + 1, before.seq + 2]);
      expect(await audit.head()).toEqual({ seq: before.seq + 2, hash: appended[1]!.hash });
      expect((await audit.list({ itemId: 'a' })).map((r) => r.kind)).toEqual(['item-created', 'dispatch']);
      const { privateKey, publicKey } = generateKeyPairSync('ed25519');
      expect(await audit.checkpoint(privateKey)).toMatchObject({ seq: before.seq + 2 });
      expect((await audit.checkpoints()).map((c) => c.seq)).toEqual([before.seq + 2]);
      const verified = await audit.verifyChain({ publicKey });
      expect(verified.ok).toBe(true);
      // A bad append rejects (it does not throw synchronously), on either backend.
      const refused = audit.appendMany([{ kind: 'no-such-kind' } as never]);
      await expect(refused).rejects.toThrow();
    });

    it('gives a stream the live items and an item synchronously, and an ended or unknown one through itemNotNow', async () => {
      opened = await open();
      const { storage } = opened;
      await storage.store.commit({ changes: [created('a'), created('b')], deleteOutbox: [] });
      // `b` ended: still in the tables, no longer in the engine's memory.
      const ended = { ...item('b'), state: 'completed' as const, finishedAt: 2000, updatedAt: 2000 };
      await storage.store.commit({
        changes: [{ ...created('b'), item: ended, created: false, hops: [], outbox: [], audit: [], ended: true }],
        deleteOutbox: [],
      });
      const live = liveOf([item('a')]);
      expect(storage.liveNow(live).map((i) => i.id)).toEqual(['a']);
      expect(storage.itemNow('a', live)).toMatchObject({ id: 'a', state: 'running' });
      expect(await itemAsStreamed(storage, 'b', live)).toMatchObject({ id: 'b', state: 'completed', finishedAt: 2000 });
      expect(storage.itemNow('nope', live)).toBeUndefined();
      expect(await firstValueFrom(storage.itemNotNow('nope').pipe(toArray()))).toEqual([undefined]);
      expect(await storage.tables.readItem('a')).toMatchObject({ id: 'a', state: 'running' });
    });

    it("keeps an item's trace fields where its spans find them again", async () => {
      opened = await open();
      const { storage } = opened;
      await storage.store.commit({ changes: [created('a')], deleteOutbox: [] });
      const fields = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
      storage.traceStore.setItemTrace('a', fields);
      expect(storage.traceStore.itemTrace('a')).toEqual(fields);
    });

    it('takes a callback for a lost ownership and closes, once', async () => {
      opened = await open();
      const { storage } = opened;
      storage.onLost(() => {
        throw new Error('not lost');
      });
      await expect(storage.close()).resolves.toBeUndefined();
    });
  });
}
