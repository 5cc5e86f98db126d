import { generateKeyPairSync } from 'node:crypto';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { PostgresAuditLog } from '../../src/persistence/audit/postgres-chain.js';
import type { PgQuery } from '../../src/persistence/coordinator/postgres-client.js';
import { PostgresLease } from '../../src/persistence/coordinator/postgres-lease.js';
import { COMMIT_STATEMENT, FENCED_COMMIT_STATEMENT } from '../../src/persistence/coordinator/postgres-commit.js';
import { COORDINATOR_PG_SCHEMA, PostgresCoordinatorStore } from '../../src/persistence/coordinator/postgres-store.js';
import {
  type PgPool,
  PostgresError,
  openPgPool,
  postgresError,
  redactPostgresSecrets,
  safePostgresUrl,
} from '../../src/persistence/kernel/postgres.js';
import type { ItemChanges } from '../../src/workflow/records.js';
import { dispatchedHop } from '../../src/workflow/records.js';
import { POSTGRES_URL, createTestDatabase, postgresGate } from '../postgres-availability.js';

const { runPostgres } = await postgresGate();

function created(id: string, key = `${id}/1/1`): ItemChanges {
  const hop = dispatchedHop({
    id: `${id}-hop-1`,
    itemId: id,
    seq: 1,
    hop: 1,
    attempt: 1,
    kind: 'stage',
    stage: 'plan',
    role: 'planner',
    idempotencyKey: key,
    continuation: null,
    askedBy: null,
    dispatchedAt: 1000,
    activeSince: 1000,
  });
  return {
    itemId: id,
    item: {
      id,
      taskId: null,
      workflow: { id: 'wf', version: 1 },
      state: 'running',
      stage: 'plan',
      hop: 1,
      hops: 1,
      input: [{ kind: 'text', text: id }],
      budget: null,
      attributes: null,
      usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, elapsedMs: 0 },
      failure: null,
      approval: null,
      createdAt: 1000,
      updatedAt: 1000,
      finishedAt: null,
      output: null,
      mirrored: false,
    },
    created: true,
    run: { machineVersion: 1, snapshot: { value: 'running' } },
    hops: [{ hop, created: true }],
    usage: [],
    outbox: [{ kind: 'start', body: { n: id } }],
    audit: [{ kind: 'item-created', itemId: id, actor: 'coordinator', data: { n: 1 } }],
    ended: false,
  };
}

describe('PostgreSQL URLs in messages', () => {
  const url = 'postgres://alice:s3cr%40t-pw@db.example:5433/coord?sslmode=require&password=other-secret';

  it('safePostgresUrl keeps scheme, user, host, port and database, never the password or the options', () => {
    expect(safePostgresUrl(url)).toBe('postgres://alice@db.example:5433/coord');
    expect(safePostgresUrl('not a url')).toBe('(unparsable postgres url)');
  });

  it('redactPostgresSecrets removes the password as written and decoded, and a password option', () => {
    const text = `failed for ${url}: password "s3cr@t-pw" rejected (s3cr%40t-pw), also other-secret`;
    const out = redactPostgresSecrets(text, url);
    expect(out).not.toContain('s3cr');
    expect(out).not.toContain('other-secret');
    expect(out).toContain('***');
    // A URL without a password leaves the text as it is.
    expect(redactPostgresSecrets('nothing to hide', 'postgres://bob@h/db')).toBe('nothing to hide');
  });

  it('a client error becomes a PostgresError whose message, details and cause hold no secret', () => {
    const raw = Object.assign(new Error('password authentication failed for user "alice" (s3cr@t-pw)'), {
      code: '28P01',
    });
    const e = postgresError(raw, url, 'the store: cannot connect', 'PG_UNREACHABLE');
    expect(e).toBeInstanceOf(PostgresError);
    expect(e.code).toBe('PG_UNREACHABLE');
    const all = `${e.message} ${JSON.stringify(e.details)} ${(e.cause as Error).message}`;
    expect(all).not.toContain('s3cr');
    expect(e.details).toMatchObject({ url: 'postgres://alice@db.example:5433/coord', sqlState: '28P01' });
  });

  it('openPgPool refuses a URL that is not postgres:// (PG_INVALID_URL) and an unreachable server (PG_UNREACHABLE), without the password', async () => {
    await expect(openPgPool('mysql://x@y/z')).rejects.toMatchObject({ code: 'PG_INVALID_URL' });
    const down = 'postgres://alice:hunter2-pw@127.0.0.1:1/coord';
    const error = await openPgPool(down, { connectTimeoutMs: 1000 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'PG_UNREACHABLE' });
    expect((error as Error).message).not.toContain('hunter2');
    expect((error as Error).message).toContain('postgres://alice@127.0.0.1:1/coord');
  });
});

/**
 * The store's two ways to commit, each suite run on both: every batch
 * through the audit sink's `append` in a transaction of statements; or, with
 * a sink that hashes (`chain`, `head`), a lone batch in one statement.
 */
for (const sink of ['append', 'one statement'] as const)
  describe.runIf(runPostgres)(`PostgresCoordinatorStore on PostgreSQL (commits: ${sink})`, () => {
    const opened: { pool: PgPool; drop: () => Promise<void> }[] = [];
    afterEach(async () => {
      for (const o of opened.splice(0)) {
        await o.pool.end();
        await o.drop();
      }
    });

    async function open(fence?: (tx: PgQuery) => Promise<void>) {
      const database = await createTestDatabase('sb_pgstore');
      const pool = await openPgPool(database.url);
      opened.push({ pool, drop: database.drop });
      const audit = await PostgresAuditLog.open(pool);
      const store = await PostgresCoordinatorStore.open(pool, {
        audit: {
          append: (tx, entries) => audit.appendInTransaction(tx, entries),
          ...(sink === 'append'
            ? {}
            : {
                chain: (head, entries, epoch) => audit.chainAfter(head, entries, epoch),
                head: (q) => audit.readHead(q),
              }),
        },
        ...(fence === undefined ? {} : { fence }),
      });
      return { pool, audit, store, url: database.url };
    }

    it('group commit: batches arriving while one commits share the next transaction; a bad one rejects alone', async () => {
      const { store, audit } = await open();
      const first = store.commit({ changes: [created('a')], deleteOutbox: [] });
      // These arrive while `a` is in flight: one transaction for all three, each in its own savepoint.
      const later = [
        store.commit({ changes: [created('b')], deleteOutbox: [] }),
        store.commit({ changes: [created('c', 'a/1/1')], deleteOutbox: [] }),
        store.commit({ changes: [created('d')], deleteOutbox: [] }),
      ];
      await first;
      const settled = await Promise.allSettled(later);
      expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect((settled[1] as PromiseRejectedResult).reason).toMatchObject({ code: 'PG_QUERY_FAILED' });
      expect(store.groups).toEqual({ transactions: 2, batches: 4 });
      expect((await store.loadLive()).map((s) => s.item.id)).toEqual(['a', 'b', 'd']);
      // The rejected batch left no audit row; the chain verifies.
      expect((await audit.list()).map((r) => r.itemId)).toEqual(['a', 'b', 'd']);
      expect(await audit.verifyChain()).toMatchObject({ ok: true, entries: 3 });
    });

    it('writes text and numbers as given: quotes, backslashes, new lines, non-ASCII text, costs of many digits', async () => {
      const { store, audit } = await open();
      const text = 'say "hi" \\ C:\\path\nnext line\ttab ✓ 🚀 ünïcode {"json": [1, 2]}';
      const change = created('q');
      change.item.input = [{ kind: 'text', text }];
      change.item.usage = { inputTokens: 2 ** 40, outputTokens: 3, costUsd: 0.1 + 0.2, elapsedMs: 1.5 };
      change.hops[0]!.hop.error = { type: 'Weird', message: text };
      change.outbox = [{ kind: 'start', body: { text } }];
      change.audit = [{ kind: 'item-created', itemId: 'q', actor: 'coordinator', data: { text } }];
      const committed = await store.commit({ changes: [change], deleteOutbox: [] });
      expect(committed.outbox[0]![0]!.body).toEqual({ text });
      const [stored] = await store.loadLive();
      expect(stored!.item.input).toEqual([{ kind: 'text', text }]);
      expect(stored!.item.usage).toEqual({ inputTokens: 2 ** 40, outputTokens: 3, costUsd: 0.1 + 0.2, elapsedMs: 1.5 });
      expect(stored!.hops[0]!.error).toEqual({ type: 'Weird', message: text });
      expect(stored!.run?.snapshot).toEqual({ value: 'running' });
      expect((await store.loadOutbox()).map((o) => o.body)).toEqual([{ text }]);
      expect((await audit.list())[0]!.data).toEqual({ text });
      expect(await audit.verifyChain()).toMatchObject({ ok: true, entries: 1 });
    });

    it('a lone surrogate in a text column is written as U+FFFD (as UTF-8 makes it); in a JSON column it round-trips', async () => {
      const { store } = await open();
      const change = created('s');
      change.hops[0]!.hop.model = 'mod\ud800el';
      change.hops[0]!.hop.error = { type: 'Odd', message: 'lone \udc00 here' };
      await store.commit({ changes: [change], deleteOutbox: [] });
      const [stored] = await store.loadLive();
      expect(stored!.hops[0]!.model).toBe('mod\ufffdel');
      expect(stored!.hops[0]!.error).toEqual({ type: 'Odd', message: 'lone \udc00 here' });
    });

    it('another appender moving the audit head between two commits: the next commit chains after it, and the chain verifies', async () => {
      const { store, audit, pool } = await open();
      await store.commit({ changes: [created('a')], deleteOutbox: [] });
      // Appended beside the store (as a second writer would): the head the store last knew is behind.
      await audit.appendMany([{ kind: 'dispatch', itemId: 'x', actor: 'someone else', data: { n: 1 } }]);
      await audit.appendMany([{ kind: 'dispatch', itemId: 'x', actor: 'someone else', data: { n: 2 } }]);
      const committed = await store.commit({ changes: [created('b')], deleteOutbox: [] });
      expect(committed.outbox[0]).toHaveLength(1);
      expect((await audit.list()).map((r) => `${r.seq}:${r.itemId}`)).toEqual(['1:a', '2:x', '3:x', '4:b']);
      expect(await audit.verifyChain()).toMatchObject({ ok: true, entries: 4 });
      expect((await store.loadLive()).map((s) => s.item.id)).toEqual(['a', 'b']);
      expect((await pool.query('SELECT count(*)::int AS n FROM coord_outbox')).rows[0].n).toBe(2);
    });

    it('one batch of several changes (an item created and stepped twice in it, hops written twice) leaves the rows that one change a commit leaves', async () => {
      const a = created('a');
      const hop1 = a.hops[0]!.hop;
      const usage = { inputTokens: 10, outputTokens: 2, costUsd: 0.01, elapsedMs: 5 };
      const hop2 = dispatchedHop({
        ...hop1,
        id: 'a-hop-2',
        seq: 2,
        hop: 2,
        stage: 'build',
        role: 'builder',
        idempotencyKey: 'a/2/1',
        dispatchedAt: 1001,
        activeSince: 1001,
      });
      const stepped: ItemChanges = {
        ...a,
        item: { ...a.item, stage: 'build', hop: 2, hops: 2, usage, updatedAt: 1001 },
        created: false,
        run: { machineVersion: 1, snapshot: { value: 'build' } },
        hops: [
          { hop: { ...hop1, state: 'completed', usage, model: 'm', finishedAt: 1001 }, created: false },
          { hop: hop2, created: true },
        ],
        usage: [{ hopId: hop1.id, itemId: 'a', agent: 'planner', model: 'm', ...usage, at: 1001 }],
        outbox: [{ kind: 'start', body: { n: 'a2' } }],
        audit: [{ kind: 'result', itemId: 'a', actor: 'coordinator', data: { n: 2 } }],
      };
      // No run snapshot: the one of `stepped` stays; hops 1 and 2 are written a second time.
      const again: ItemChanges = {
        ...stepped,
        item: { ...stepped.item, state: 'completed', stage: null, updatedAt: 1002, finishedAt: 1002 },
        run: undefined,
        hops: [
          { hop: { ...hop2, state: 'completed', model: 'm2', usage, finishedAt: 1002 }, created: false },
          { hop: { ...hop1, state: 'completed', usage, model: 'm-again', finishedAt: 1002 }, created: false },
        ],
        usage: [{ hopId: hop2.id, itemId: 'a', agent: 'builder', model: 'm2', ...usage, at: 1002 }],
        outbox: [
          { kind: 'start', body: { n: 'a3' } },
          { kind: 'start', body: { n: 'a4' } },
        ],
        audit: [{ kind: 'item-completed', itemId: 'a', actor: 'coordinator', data: { n: 3 } }],
        ended: true,
      };
      const changes = [a, created('b'), stepped, again, created('c')];
      const oneByOne = await open();
      const outboxOneByOne: unknown[] = [];
      for (const c of changes) {
        outboxOneByOne.push(...(await oneByOne.store.commit({ changes: [c], deleteOutbox: [] })).outbox);
      }
      const together = await open();
      const committed = await together.store.commit({ changes, deleteOutbox: [] });
      expect(committed.outbox).toEqual(outboxOneByOne);
      expect(committed.outbox.map((rows) => rows.length)).toEqual([1, 1, 1, 2, 1]);
      const rowsOf = async ({ store, audit }: Awaited<ReturnType<typeof open>>) => ({
        items: await store.readItems(),
        stored: await store.loadItem('a'),
        hops: [...(await store.readHops('a')), ...(await store.readHops('b'))],
        usage: await store.readUsageRows(),
        outbox: await store.loadOutbox(),
        audit: (await audit.list()).map((r) => [r.kind, r.itemId]),
      });
      const expected = await rowsOf(oneByOne);
      expect(expected.stored?.run).toEqual({ machineVersion: 1, snapshot: { value: 'build' } });
      expect(expected.hops.find((h) => h.id === 'a-hop-2')).toMatchObject({ state: 'completed', model: 'm2' });
      expect(expected.hops.find((h) => h.id === 'a-hop-1')).toMatchObject({ model: 'm-again', finishedAt: 1002 });
      expect(await rowsOf(together)).toEqual(expected);
      expect(await together.audit.verifyChain()).toMatchObject({ ok: true, entries: 5 });
    });

    it('without an audit key a commit appends its batch in one append (one head lock); with one, every ended item is signed', async () => {
      const ended = (id: string): ItemChanges => ({ ...created(id), ended: true });
      const batch = { changes: [ended('a'), ended('b'), created('c')], deleteOutbox: [] };
      const counted = async (signing: boolean) => {
        const { pool, audit } = await open();
        const calls = { appends: 0, checkpoints: 0 };
        const store = await PostgresCoordinatorStore.open(pool, {
          audit: {
            append: (tx, entries) => {
              calls.appends += 1;
              return audit.appendInTransaction(tx, entries);
            },
            ...(signing
              ? {
                  checkpoint: async () => {
                    calls.checkpoints += 1;
                  },
                }
              : {}),
          },
        });
        await store.commit(batch);
        expect(await audit.verifyChain()).toMatchObject({ ok: true, entries: 3 });
        expect((await audit.list()).map((r) => r.itemId)).toEqual(['a', 'b', 'c']);
        return calls;
      };
      expect(await counted(false)).toEqual({ appends: 1, checkpoints: 0 });
      expect(await counted(true)).toEqual({ appends: 3, checkpoints: 2 });
    });

    it("the mirror's marks go together into a transaction of theirs, fenced, beside the commits; a bad one rejects with its transaction's marks only", async () => {
      let transactions = 0;
      let refuse = false;
      const { store } = await open(async () => {
        transactions++;
        if (refuse) throw new Error('epoch moved on: not the leader');
      });
      await store.commit({ changes: [created('a')], deleteOutbox: [] });
      await store.commit({ changes: [created('b')], deleteOutbox: [] });
      expect(transactions).toBe(2);
      // The first mark goes at once; those made while it is written share the next transaction, the last of an id winning.
      await Promise.all([
        store.recordMirrored('b'),
        store.recordItemTask('a', 'task-a0'),
        store.recordItemTask('a', 'task-a'),
        store.recordHopTask('a-hop-1', 'task-a-hop-1'),
        store.recordMirrored('a'),
      ]);
      expect(transactions).toBe(4);
      expect((await store.readItem('a'))?.taskId).toBe('task-a');
      expect((await store.readHops('a')).map((h) => h.taskId)).toEqual(['task-a-hop-1']);
      expect(await store.readUnmirroredItems()).toEqual([]);
      // A mark the server refuses (a NUL in text) rejects with the marks of its transaction; a commit beside it commits.
      const first = store.recordHopTask('b-hop-1', 'task-b-hop-1');
      const bad = store.recordItemTask('b', 'bad\u0000task');
      const commit = store.commit({ changes: [created('c')], deleteOutbox: [] });
      await first;
      await expect(bad).rejects.toBeDefined();
      await commit;
      expect((await store.readItem('c'))?.id).toBe('c');
      expect((await store.readItem('b'))?.taskId).toBeNull();
      expect((await store.readHops('b')).map((h) => h.taskId)).toEqual(['task-b-hop-1']);
      // Fenced: a mark of a store that lost the lease writes nothing.
      refuse = true;
      await expect(store.recordHopTask('c-hop-1', 'task-c-hop-1')).rejects.toThrow('not the leader');
      refuse = false;
      expect((await store.readHops('c')).map((h) => h.taskId)).toEqual([null]);
    });

    it('the fence runs first in every commit transaction; when it throws nothing is committed', async () => {
      const seen: string[] = [];
      let refuse = false;
      const { store } = await open(async (tx) => {
        const r = await tx.query('SELECT txid_current_if_assigned() AS t, now() = statement_timestamp() AS first');
        seen.push(r.rows[0].t === null ? 'fresh' : 'written');
        if (refuse) throw new Error('epoch moved on: not the leader');
      });
      await store.commit({ changes: [created('a')], deleteOutbox: [] });
      expect(seen).toEqual(['fresh']);
      refuse = true;
      await expect(store.commit({ changes: [created('b')], deleteOutbox: [] })).rejects.toThrow('not the leader');
      expect(await store.loadItem('b')).toBeUndefined();
      expect((await store.loadOutbox()).map((r) => r.itemId)).toEqual(['a']);
    });

    it('a connection lost in the middle of a commit rejects it (PG_UNREACHABLE) and commits nothing; the store goes on', async () => {
      let kill = true;
      const { store, audit } = await open(async (tx) => {
        if (!kill) return;
        kill = false;
        const pid = (await tx.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
        const admin = new pg.Client({ connectionString: POSTGRES_URL });
        await admin.connect();
        await admin.query('SELECT pg_terminate_backend($1)', [pid]);
        await admin.end();
      });
      const error = await store.commit({ changes: [created('a')], deleteOutbox: [] }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'PG_UNREACHABLE' });
      expect(await store.loadItem('a')).toBeUndefined();
      expect(await audit.list()).toEqual([]);
      // The broken connection was dropped from the pool: the next commit gets a new one.
      await store.commit({ changes: [created('a')], deleteOutbox: [] });
      expect((await store.loadLive()).map((s) => s.item.id)).toEqual(['a']);
    });

    // Only with the sink that hashes: these are about the one-statement commit.
    if (sink === 'one statement')
      it('the one-statement commit reads the rows it updates by their keys, however many rows the tables hold (a version-1 database is migrated to it)', async () => {
        const { pool, url } = await open();
        // A database made before version 2 (and 3, 4): the functions and the users' and rollups' tables go,
        // and opening the store brings them back.
        await pool.query(
          'DROP FUNCTION coord_batch_rows(jsonb); DROP FUNCTION coord_not_leading(); DROP TABLE coord_console_users; DROP TABLE coord_rollups',
        );
        await pool.query("UPDATE schema_version SET version = 1 WHERE component = 'coordinator'");
        const reopened = await PostgresCoordinatorStore.open(pool);
        expect(reopened).toBeDefined();
        expect(
          (await pool.query("SELECT version FROM schema_version WHERE component = 'coordinator'")).rows[0].version,
        ).toBe(COORDINATOR_PG_SCHEMA.current);
        // Tables of some thousands of rows, as a Coordinator that ran a while has.
        await pool.query(
          `INSERT INTO coord_items (id, workflow_id, workflow_version, state, input, created_at, updated_at)
             SELECT 'i' || n, 'wf', 1, 'completed', '[]', n, n FROM generate_series(1, 5000) AS n`,
        );
        await pool.query(
          `INSERT INTO coord_hops (id, item_id, seq, hop, attempt, kind, stage, role, idempotency_key, state, dispatched_at)
             SELECT 'h' || n, 'i' || n, 1, 1, 1, 'stage', 'plan', 'planner', 'k' || n, 'completed', n
             FROM generate_series(1, 5000) AS n`,
        );
        await pool.query(
          "INSERT INTO coord_outbox (item_id, kind, body) SELECT 'i' || n, 'start', '{}' FROM generate_series(1, 5000) AS n",
        );
        await pool.query('ANALYZE coord_items; ANALYZE coord_hops; ANALYZE coord_outbox');
        // The lease's table, which the fenced statement reads.
        const lease = new PostgresLease({ url });
        expect(await lease.acquire()).toBe('leader');
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        try {
          await client.query(`PREPARE commit_plan(jsonb, bigint, text, bigint, text) AS ${COMMIT_STATEMENT}`);
          await client.query(
            `PREPARE fenced_plan(jsonb, bigint, text, bigint, text, bigint, text) AS ${FENCED_COMMIT_STATEMENT}`,
          );
          const batch = client.escapeLiteral(JSON.stringify({ deleted: [], hopsUp: [], itemsUp: [] }));
          for (const [statement, mode] of ['commit_plan', 'fenced_plan'].flatMap((name) =>
            ['force_generic_plan', 'force_custom_plan'].map((m) => [name, m] as const),
          )) {
            await client.query(`SET plan_cache_mode = ${mode}`);
            const fenced = statement === 'fenced_plan' ? ", 1, 'holder'" : '';
            const plan = await client.query(`EXPLAIN EXECUTE ${statement}(${batch}, 1, 'h', 0, 'h'${fenced})`);
            const text = plan.rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n');
            expect(text).toContain('Index Scan using coord_hops_pkey');
            expect(text).toContain('Index Scan using coord_items_pkey');
            expect(text).toContain('Index Scan using coord_outbox_pkey');
            expect(text).not.toMatch(/Seq Scan on coord_(hops|items|outbox)/);
          }
        } finally {
          await client.end();
          await lease.close();
        }
      });

    it('a database of a newer schema is refused (SCHEMA_TOO_NEW); a reader refuses an older one (SCHEMA_TOO_OLD)', async () => {
      const { pool } = await open();
      await pool.query("UPDATE schema_version SET version = version + 1 WHERE component = 'coordinator'");
      await expect(PostgresCoordinatorStore.open(pool)).rejects.toMatchObject({ code: 'SCHEMA_TOO_NEW' });
      await pool.query("UPDATE schema_version SET version = version - 2 WHERE component = 'coordinator'");
      await expect(PostgresCoordinatorStore.open(pool, { readOnly: true })).rejects.toMatchObject({
        code: 'SCHEMA_TOO_OLD',
      });
    });

    it('audit rows record the epoch whose fenced commit appended them; checkFence refuses once another lease took over', async () => {
      let leading: PostgresLease | undefined;
      const { store, audit, pool, url } = await open((tx) => leading!.fence(tx));
      // A renews too seldom to notice the takeover: only the database can tell it.
      const a = new PostgresLease({ url, leaseMs: 60_000, renewMs: 30_000 });
      const b = new PostgresLease({ url, leaseMs: 60_000, renewMs: 30_000, alive: () => false });
      try {
        expect(await a.acquire()).toBe('leader');
        leading = a;
        await store.commit({ changes: [created('a')], deleteOutbox: [] });
        await expect(store.checkFence()).resolves.toBeUndefined();
        // An append outside a fenced transaction records no epoch.
        await audit.appendMany([{ kind: 'dispatch', itemId: 'x', actor: 'coordinator', data: {} }]);
        // B sees A's process as dead and takes over at once: A still believes it leads.
        expect(await b.acquire()).toBe('leader');
        expect(a.role).toBe('leader');
        const refused = await store.checkFence().catch((error: unknown) => error);
        expect(refused).toMatchObject({ code: 'COORD_FENCED', details: { epoch: a.epoch, currentEpoch: b.epoch } });
        await expect(store.commit({ changes: [created('b')], deleteOutbox: [] })).rejects.toMatchObject({
          code: 'COORD_FENCED',
        });
        leading = b;
        await store.checkFence();
        await store.commit({ changes: [created('c')], deleteOutbox: [] });
        const rows = await pool.query('SELECT item_id, epoch FROM audit_log ORDER BY seq');
        expect(rows.rows.map((r) => [r.item_id, r.epoch === null ? null : Number(r.epoch)])).toEqual([
          ['a', a.epoch],
          ['x', null],
          ['c', b.epoch],
        ]);
        // The epoch is hashed with each row (audit schema 4): the chain verifies, and a changed epoch shows.
        expect(await audit.verifyChain()).toMatchObject({ ok: true, entries: 3 });
        await pool.query("UPDATE audit_log SET epoch = 999 WHERE item_id = 'c'");
        expect(await audit.verifyChain()).toMatchObject({ ok: false, seq: 3, reason: 'hash-mismatch' });
      } finally {
        await b.close();
        await a.close();
      }
    });

    // Only with the sink that hashes: these are about the one-statement commit.
    if (sink === 'one statement')
      it("with the lease's fence a commit is one statement, no transaction: its audit rows record its epoch; once another lease took over it is refused whole (COORD_FENCED)", async () => {
        const database = await createTestDatabase('sb_pgstore');
        const pool = await openPgPool(database.url);
        opened.push({ pool, drop: database.drop });
        const a = new PostgresLease({ url: database.url, leaseMs: 60_000, renewMs: 30_000 });
        const b = new PostgresLease({ url: database.url, leaseMs: 60_000, renewMs: 30_000, alive: () => false });
        try {
          const audit = await PostgresAuditLog.open(pool);
          const sink = {
            append: (tx: PgQuery, entries: Parameters<typeof audit.appendInTransaction>[1]) =>
              audit.appendInTransaction(tx, entries),
            chain: audit.chainAfter.bind(audit),
            head: audit.readHead.bind(audit),
          };
          const store = await PostgresCoordinatorStore.open(pool, { audit: sink, fence: a.fence });
          // A standby's commit is refused before anything is sent.
          await expect(store.commit({ changes: [created('s')], deleteOutbox: [] })).rejects.toMatchObject({
            code: 'COORD_FENCED',
          });
          expect(await a.acquire()).toBe('leader');
          let transactions = 0;
          const connect = pool.connect.bind(pool);
          pool.connect = () => {
            transactions += 1;
            return connect();
          };
          await store.commit({ changes: [created('a')], deleteOutbox: [] });
          await store.checkFence();
          await pool.query("UPDATE coord_items SET finished_at = 2 WHERE id = 'a'");
          await store.recordContextForgotten(['a'], 5);
          expect(transactions).toBe(0);
          // B sees A's process as dead and takes over at once: A still believes it leads; the row says otherwise.
          expect(await b.acquire()).toBe('leader');
          expect(a.role).toBe('leader');
          const refused = await store.commit({ changes: [created('b')], deleteOutbox: [] }).catch((e: unknown) => e);
          expect(refused).toMatchObject({ code: 'COORD_FENCED', details: { epoch: a.epoch, currentEpoch: b.epoch } });
          await expect(store.checkFence()).rejects.toMatchObject({
            code: 'COORD_FENCED',
            details: { epoch: a.epoch, currentEpoch: b.epoch },
          });
          await expect(store.recordForgetAgain('a')).rejects.toMatchObject({ code: 'COORD_FENCED' });
          expect(transactions).toBe(0);
          const next = await PostgresCoordinatorStore.open(pool, { audit: sink, fence: b.fence });
          await next.checkFence();
          await next.commit({ changes: [created('c')], deleteOutbox: [] });
          // The forgetter's marks: A's while it led was written; A's after the takeover was not, B's is.
          const forgotten = async () =>
            (await pool.query("SELECT context_forgotten_at AS at FROM coord_items WHERE id = 'a'")).rows[0].at;
          expect(Number(await forgotten())).toBe(5);
          await next.recordForgetAgain('a');
          expect(await forgotten()).toBeNull();
          const rows = await pool.query('SELECT item_id, epoch FROM audit_log ORDER BY seq');
          expect(rows.rows.map((r) => [r.item_id, Number(r.epoch)])).toEqual([
            ['a', a.epoch],
            ['c', b.epoch],
          ]);
          expect((await pool.query('SELECT id FROM coord_items ORDER BY id')).rows.map((r) => r.id)).toEqual([
            'a',
            'c',
          ]);
          expect(await audit.verifyChain()).toMatchObject({ ok: true, entries: 2 });
          // The one-statement commit hashed the epoch it wrote: changing it shows.
          await pool.query("UPDATE audit_log SET epoch = 999 WHERE item_id = 'a'");
          expect(await audit.verifyChain()).toMatchObject({ ok: false, seq: 1, reason: 'hash-mismatch' });
        } finally {
          await b.close();
          await a.close();
        }
      });

    it('the audit chain verifies with the same hashing as SQLite, signed checkpoints included, and catches an edited row', async () => {
      const { store, audit, pool } = await open();
      const keys = generateKeyPairSync('ed25519');
      await store.commit({ changes: [created('a'), created('b')], deleteOutbox: [] });
      expect(await audit.checkpoint(keys.privateKey)).toMatchObject({ seq: 2 });
      expect(await audit.verifyChain({ publicKey: keys.publicKey, requireSignedHead: true })).toMatchObject({
        ok: true,
        entries: 2,
        checkpoints: { verified: 1, signedSeq: 2, unsignedRows: 0 },
      });
      // An append of more rows than one INSERT takes: several statements, the head moved with the last.
      const many = Array.from({ length: 150 }, (_, i) => ({
        kind: 'dispatch' as const,
        itemId: 'c',
        actor: 'coordinator',
        data: { i },
      }));
      expect((await audit.appendMany(many)).at(-1)).toMatchObject({ seq: 152 });
      expect(await audit.head()).toMatchObject({ seq: 152 });
      expect(await audit.verifyChain()).toMatchObject({ ok: true, entries: 152 });
      await pool.query(`UPDATE audit_log SET data = '{"n":2}' WHERE seq = 1`);
      expect(await audit.verifyChain()).toMatchObject({ ok: false, seq: 1, reason: 'hash-mismatch' });
    });
  });
