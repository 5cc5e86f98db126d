import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { WalCheckpointer } from '../../src/persistence/a2a/wal-checkpointer.js';
import { type SqliteDatabase, openDatabase } from '../../src/persistence/kernel/database.js';
import { harness, register, text, tempDir } from './helpers.js';

let cleanup: () => void = () => {};
let db: SqliteDatabase | undefined;
afterEach(() => {
  if (db?.open) db.close();
  db = undefined;
  cleanup();
});

async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not reached');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('the WAL checkpoint thread', () => {
  it('copies committed pages into the database file off the committing thread', async () => {
    const t = tempDir();
    cleanup = t.cleanup;
    const path = join(t.dir, 'c.db');
    db = openDatabase(path);
    const checkpointer = new WalCheckpointer(db, { path, synchronous: 'NORMAL', everyCommits: 4 });
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(8192);
    db.exec('CREATE TABLE blob (v BLOB)');
    const insert = db.prepare('INSERT INTO blob (v) VALUES (?)');
    const sizeBefore = statSync(path).size;
    for (let i = 0; i < 4; i++) {
      insert.run(Buffer.alloc(256 * 1024, i));
      checkpointer.committed();
    }
    // Far below SQLite's own threshold (1,000 pages): only the thread copies these pages.
    await until(() => statSync(path).size > sizeBefore + 1024 * 1024);
    await checkpointer.close();
    const count = db.prepare('SELECT COUNT(*) AS n FROM blob').get() as { n: number };
    expect(count.n).toBe(4);
  });

  it('a broker starts the thread after enough commits and closes it with itself; nothing is lost', async () => {
    const h = harness();
    try {
      const requesters = [await register(h.broker, 'req', 'ctx-a'), await register(h.broker, 'req', 'ctx-c')];
      await register(h.broker, 'wrk', 'ctx-b');
      // 140 commits: the thread is asked for a checkpoint after the 128th.
      for (let i = 0; i < 140; i++) {
        const req = requesters[i % 2] as (typeof requesters)[number];
        await h.broker.send({ token: req.token, to: 'wrk', message: text(`t${i}`) });
      }
      const broker = await h.reopen();
      for (const contextId of ['ctx-a', 'ctx-c']) {
        const again = await register(broker, 'req', contextId);
        expect((await broker.listTasks({ token: again.token })).tasks).toHaveLength(70);
      }
    } finally {
      await h.close();
    }
  });
});
