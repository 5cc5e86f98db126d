import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CommitQueue } from '../../src/actors/broker/commit-queue.js';
import { silentLogger } from '../../src/log/logger.js';
import { type SqliteDatabase, openDatabase } from '../../src/persistence/kernel/database.js';
import { a2aError, answerTooLarge } from '../../src/protocol/broker-error.js';
import { tempDir } from './helpers.js';

let cleanup: () => void = () => {};
let db: SqliteDatabase | undefined;
afterEach(() => {
  db?.close();
  db = undefined;
  cleanup();
});

function open(): SqliteDatabase {
  const t = tempDir();
  cleanup = t.cleanup;
  db = openDatabase(join(t.dir, 'q.db'));
  db.exec(`CREATE TABLE parent (id INTEGER PRIMARY KEY);
    CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED);
    CREATE TABLE log (v TEXT)`);
  return db;
}

const rows = (d: SqliteDatabase) =>
  (d.prepare('SELECT v FROM log ORDER BY rowid').all() as { v: string }[]).map((r) => r.v);

describe('the commit queue', () => {
  it('commits a call answered with an error (answerWith), alone and in a batch, and runs its effects', async () => {
    const d = open();
    const q = new CommitQueue(d, silentLogger());
    const effects: string[] = [];
    const call = (v: string, mode: 'ok' | 'answer' | 'answer-then-refuse') =>
      q.enqueue((scope) => {
        d.prepare('INSERT INTO log (v) VALUES (?)').run(v);
        scope.afterCommit(() => effects.push(v));
        if (mode !== 'ok') scope.answerWith(answerTooLarge(1));
        if (mode === 'answer-then-refuse') throw a2aError('A2A_UNKNOWN_TASK', 'refused');
        return v;
      });
    // Alone: its own transaction.
    await expect(call('alone', 'answer')).rejects.toMatchObject({ code: 'INTERNAL_ERROR', details: { bytes: 1 } });
    // In a batch: the neighbours are answered with their values, a refusal is still a refusal.
    const settled = await Promise.allSettled([call('a', 'ok'), call('b', 'answer'), call('c', 'answer-then-refuse')]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'rejected']);
    expect((settled[1] as PromiseRejectedResult).reason.message).toContain('succeeded');
    expect((settled[2] as PromiseRejectedResult).reason.code).toBe('A2A_UNKNOWN_TASK');
    expect(rows(d)).toEqual(['alone', 'a', 'b']);
    await q.idle();
    await new Promise((resolve) => setImmediate(resolve));
    expect(effects).toEqual(['alone', 'a', 'b']);
  });

  it('throws an answerWith inside a read (a read has nothing to commit)', async () => {
    const d = open();
    const q = new CommitQueue(d, silentLogger());
    await expect(
      q.read((scope) => {
        scope.answerWith(answerTooLarge(2));
        return 'never';
      }),
    ).rejects.toMatchObject({ details: { bytes: 2 } });
  });

  it('runs the calls of one tick in one transaction and answers them in order', async () => {
    const d = open();
    const q = new CommitQueue(d, silentLogger());
    const order: string[] = [];
    const calls = ['a', 'b', 'c'].map((v) =>
      q
        .enqueue(() => {
          d.prepare('INSERT INTO log (v) VALUES (?)').run(v);
          return v;
        })
        .then((r) => order.push(r)),
    );
    await Promise.all(calls);
    expect(order).toEqual(['a', 'b', 'c']);
    expect(rows(d)).toEqual(['a', 'b', 'c']);
    expect(q.stats()).toEqual({ commits: 1, calls: 3, failedCommits: 0 });
  });

  it('rolls back only a refused call: its rows and its in-memory changes, not its neighbours', async () => {
    const d = open();
    const q = new CommitQueue(d, silentLogger());
    const memory: string[] = [];
    const write = (v: string, refuse: boolean) =>
      q.enqueue((scope) => {
        d.prepare('INSERT INTO log (v) VALUES (?)').run(v);
        memory.push(v);
        scope.onUndo(() => memory.splice(memory.indexOf(v), 1));
        if (refuse) throw a2aError('A2A_UNKNOWN_TASK', 'refused');
        return v;
      });
    const results = await Promise.allSettled([write('a', false), write('b', true), write('c', false)]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ code: 'A2A_UNKNOWN_TASK' });
    expect(rows(d)).toEqual(['a', 'c']);
    expect(memory).toEqual(['a', 'c']);
  });

  it('turns an unexpected error into -32603 without leaking its message', async () => {
    const d = open();
    const q = new CommitQueue(d, silentLogger());
    const e = await q
      .enqueue(() => {
        throw new Error('secret detail');
      })
      .catch((x: unknown) => x);
    expect(e).toMatchObject({ code: 'INTERNAL_ERROR' });
    expect((e as Error).message).not.toContain('secret');
  });

  it('undoes and rejects every call of a batch whose COMMIT fails, and emits nothing', async () => {
    const d = open();
    const q = new CommitQueue(d, silentLogger());
    const memory: string[] = [];
    const effects: string[] = [];
    const call = (v: string, orphan: boolean) =>
      q.enqueue((scope) => {
        d.prepare('INSERT INTO log (v) VALUES (?)').run(v);
        if (orphan) d.prepare('INSERT INTO child (id, parent) VALUES (1, 42)').run();
        memory.push(v);
        scope.onUndo(() => memory.pop());
        scope.afterCommit(() => effects.push(v));
        return v;
      });
    const results = await Promise.allSettled([call('a', false), call('b', true)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(rows(d)).toEqual([]);
    expect(memory).toEqual([]);
    await new Promise((r) => setImmediate(r));
    expect(effects).toEqual([]);
    expect(q.stats().failedCommits).toBe(1);
    // The queue keeps working.
    await expect(call('c', false)).resolves.toBe('c');
    expect(rows(d)).toEqual(['c']);
  });

  it('tells of every rollback (a refused call alone, one in a batch, a failed COMMIT) before the next call runs', async () => {
    const d = open();
    const told: string[] = [];
    const q = new CommitQueue(d, silentLogger(), undefined, () => told.push('rollback'));
    const call = (v: string, how: 'ok' | 'refuse' | 'orphan') =>
      q.enqueue(() => {
        told.push(v);
        d.prepare('INSERT INTO log (v) VALUES (?)').run(v);
        if (how === 'orphan') d.prepare('INSERT INTO child (id, parent) VALUES (1, 42)').run();
        if (how === 'refuse') throw a2aError('A2A_UNKNOWN_TASK', 'refused');
        return v;
      });
    await expect(call('alone', 'refuse')).rejects.toMatchObject({ code: 'A2A_UNKNOWN_TASK' });
    await Promise.allSettled([call('a', 'ok'), call('b', 'refuse'), call('c', 'ok')]);
    await Promise.allSettled([call('d', 'ok'), call('e', 'orphan')]);
    await expect(call('f', 'ok')).resolves.toBe('f');
    expect(told).toEqual(['alone', 'rollback', 'a', 'b', 'rollback', 'c', 'd', 'e', 'rollback', 'f']);
    expect(rows(d)).toEqual(['a', 'c', 'f']);
  });

  it('fails the whole batch when SQLite rolled its transaction back during a call: no later call commits on its own', async () => {
    const d = open();
    const q = new CommitQueue(d, silentLogger());
    const memory: string[] = [];
    const call = (v: string, lost: boolean) =>
      q.enqueue((scope) => {
        d.prepare('INSERT INTO log (v) VALUES (?)').run(v);
        memory.push(v);
        scope.onUndo(() => memory.pop());
        if (lost) {
          // What SQLite does on a full disk or an I/O error: the whole transaction is rolled back.
          d.exec('ROLLBACK');
          throw new Error('disk I/O error');
        }
        return v;
      });
    const results = await Promise.allSettled([call('a', false), call('b', true), call('c', false)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(rows(d)).toEqual([]);
    expect(memory).toEqual([]);
    expect(q.stats().failedCommits).toBe(1);
    await expect(call('d', false)).resolves.toBe('d');
    expect(rows(d)).toEqual(['d']);
  });

  it('alone in its transaction, a refused call still rolls back its rows and its in-memory changes', async () => {
    const d = open();
    const q = new CommitQueue(d, silentLogger());
    const memory: string[] = [];
    const e = await q
      .enqueue((scope) => {
        d.prepare('INSERT INTO log (v) VALUES (?)').run('x');
        memory.push('x');
        scope.onUndo(() => memory.pop());
        throw a2aError('A2A_TASK_TERMINAL', 'refused');
      })
      .catch((x: unknown) => x);
    expect(e).toMatchObject({ code: 'A2A_TASK_TERMINAL' });
    expect(rows(d)).toEqual([]);
    expect(memory).toEqual([]);
    expect(q.stats()).toEqual({ commits: 0, calls: 0, failedCommits: 0 });
  });

  it('alone in its transaction, a call whose COMMIT fails is undone and rejected with -32603', async () => {
    const d = open();
    const q = new CommitQueue(d, silentLogger());
    const memory: string[] = [];
    const e = await q
      .enqueue((scope) => {
        d.prepare('INSERT INTO child (id, parent) VALUES (1, 42)').run();
        memory.push('x');
        scope.onUndo(() => memory.pop());
        return 'ok';
      })
      .catch((x: unknown) => x);
    expect(e).toMatchObject({ code: 'INTERNAL_ERROR' });
    expect(memory).toEqual([]);
    expect(d.prepare('SELECT COUNT(*) AS n FROM child').get()).toEqual({ n: 0 });
    expect(q.stats().failedCommits).toBe(1);
  });

  it('runs effects after the answers, in call order', async () => {
    const d = open();
    const q = new CommitQueue(d, silentLogger());
    const seen: string[] = [];
    const p1 = q.enqueue((scope) => {
      scope.afterCommit(() => seen.push('effect-1'));
      return 1;
    });
    const p2 = q.enqueue((scope) => {
      scope.afterCommit(() => seen.push('effect-2'));
      return 2;
    });
    p1.then(() => seen.push('answer-1'));
    p2.then(() => seen.push('answer-2'));
    await Promise.all([p1, p2]);
    await new Promise((r) => setImmediate(r));
    expect(seen).toEqual(['answer-1', 'answer-2', 'effect-1', 'effect-2']);
  });

  it('runs a beforeCommit write once per transaction, after every call, with what memory holds then', async () => {
    const d = open();
    const q = new CommitQueue(d, silentLogger());
    const counter = { n: 0 };
    let writes = 0;
    const write = () => {
      writes++;
      d.prepare('INSERT INTO log (v) VALUES (?)').run(`n=${counter.n}`);
    };
    const count = (refuse: boolean) =>
      q
        .enqueue((scope) => {
          counter.n++;
          scope.onUndo(() => {
            counter.n--;
          });
          scope.beforeCommit(counter, write);
          if (refuse) throw a2aError('A2A_UNKNOWN_TASK', 'no');
          return counter.n;
        })
        .catch((x: unknown) => x);
    await Promise.all([count(false), count(true), count(false)]);
    expect(writes).toBe(1);
    expect(rows(d)).toEqual(['n=2']);
    expect(q.stats()).toEqual({ commits: 1, calls: 3, failedCommits: 0 });
    // Alone in its transaction too; and a refused lone call writes nothing.
    await count(false);
    await count(true);
    expect(writes).toBe(2);
    expect(rows(d)).toEqual(['n=2', 'n=3']);
  });

  it('fails the whole transaction when a beforeCommit write throws: every call undone and rejected', async () => {
    const d = open();
    const q = new CommitQueue(d, silentLogger());
    const memory: string[] = [];
    const call = (v: string) =>
      q
        .enqueue((scope) => {
          d.prepare('INSERT INTO log (v) VALUES (?)').run(v);
          memory.push(v);
          scope.onUndo(() => memory.pop());
          scope.beforeCommit('k', () => {
            throw new Error('disk says no');
          });
          return v;
        })
        .catch((x: unknown) => x);
    const answers = await Promise.all([call('a'), call('b')]);
    expect(answers).toEqual([
      expect.objectContaining({ code: 'INTERNAL_ERROR' }),
      expect.objectContaining({ code: 'INTERNAL_ERROR' }),
    ]);
    expect(memory).toEqual([]);
    expect(rows(d)).toEqual([]);
    expect(q.stats().failedCommits).toBe(1);
  });
});
