import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ContextStoreError, SqliteContextStore } from '../../src/persistence/context/sqlite-store.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import { SchemaVersionError, schemaVersion } from '../../src/persistence/kernel/migrations.js';
import { hop, completionRecord as record } from './helpers.js';

describe('the Context Engine on SQLite', () => {
  let dir: string;
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const open = () => {
    dir = mkdtempSync(join(tmpdir(), 'sb-ctx-'));
    return join(dir, 'ctx.db');
  };

  it('is its own migration component and refuses a newer schema', () => {
    const path = open();
    const db = openDatabase(path);
    new SqliteContextStore({ database: db });
    expect(schemaVersion(db, 'context')).toBe(3);
    db.prepare("UPDATE schema_version SET version = 9 WHERE component = 'context'").run();
    expect(() => new SqliteContextStore({ database: db })).toThrow(SchemaVersionError);
    db.close();
  });

  it('records a completion atomically, once, and durably across a reopen', async () => {
    const path = open();
    const store = new SqliteContextStore({ database: path });
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
    await store.close();

    const reopened = new SqliteContextStore({ database: path });
    const ctx = await reopened.hydrate('run-1');
    expect(ctx.memory).toEqual({ plan: ['a', 'b'], decided: 'postgres' });
    expect(ctx.outputs.map((o) => o.idempotencyKey)).toEqual(['k1']);
    expect(await reopened.checkpoint('tok-1')).toMatchObject({
      state: { step: 2 },
      role: 'coder',
      resumedAt: undefined,
    });
    await reopened.complete(record('k2', { resumedToken: 'tok-1' }));
    expect((await reopened.checkpoint('tok-1'))!.resumedAt).toBeTypeOf('number');
    expect((await reopened.completion('k2'))!.outcome).toBe('completed');
    expect(await reopened.completion('nope')).toBeUndefined();
    await reopened.close();
  });

  it('refuses bad input and writes nothing', async () => {
    const store = new SqliteContextStore({ database: open() });
    await expect(store.hydrate('')).rejects.toBeInstanceOf(ContextStoreError);
    await expect(
      store.complete(record('bad', { checkpoint: { token: 't', state: { n: 10n }, headers: hop(1).headers } })),
    ).rejects.toMatchObject({ code: 'CONTEXT_NOT_JSON' });
    expect(await store.completion('bad')).toBeUndefined();
    expect(await store.checkpoint('t')).toBeUndefined();
    await expect(store.updateMemory('run-1', [] as never)).rejects.toMatchObject({ code: 'CONTEXT_INVALID_ARGUMENT' });
    await store.close();
    await expect(store.hydrate('run-1')).rejects.toMatchObject({ code: 'CONTEXT_CLOSED' });
  });

  it('applies an atomic effect once, and not at all when it throws', () => {
    const path = open();
    const store = new SqliteContextStore({ database: path });
    store.database.exec('CREATE TABLE ledger (amount INTEGER)');
    const add = (amount: number) =>
      store.applyOnce('hop-1', 'charge', (db) => {
        db.prepare('INSERT INTO ledger (amount) VALUES (?)').run(amount);
        return { amount };
      });
    expect(add(5)).toEqual({ value: { amount: 5 }, applied: true });
    expect(add(7)).toEqual({ value: { amount: 5 }, applied: false });
    expect(() =>
      store.applyOnce('hop-2', 'charge', (db) => {
        db.prepare('INSERT INTO ledger (amount) VALUES (?)').run(100);
        throw new Error('failed half-way');
      }),
    ).toThrow('failed half-way');
    expect(store.database.prepare('SELECT sum(amount) AS total FROM ledger').get()).toEqual({ total: 5 });
    expect(store.applyOnce('hop-2', 'charge', () => 'second try').applied).toBe(true);
  });

  it('records plain effects once and prunes old records', async () => {
    let now = 1000;
    const store = new SqliteContextStore({ database: open(), clock: { now: () => now } });
    expect(await store.recordEffect('s', 'k', { id: 1 })).toBe(true);
    expect(await store.recordEffect('s', 'k', { id: 2 })).toBe(false);
    expect(await store.effect('s', 'k')).toEqual({ value: { id: 1 } });
    await store.complete(record('old'));
    now = 5000;
    expect(await store.prune(2000)).toEqual({ completions: 1, effects: 1, checkpoints: 0 });
    expect(await store.effect('s', 'k')).toBeUndefined();
    await store.close();
  });
});
