/**
 * `npm run bench:pg-client`: which PostgreSQL client the Coordinator's store
 * uses, by measurement. Both candidates, `pg` (node-postgres 8) and
 * `postgres` (postgres.js 3), run the same workload in the same run on the
 * local PostgreSQL (127.0.0.1:5432, or PG_URL; a database of its own,
 * dropped at the end).
 *
 * One commit is the store's shape: BEGIN; insert an item row; insert a hop
 * row; update the item; insert a usage row; lock the chain head; append 3 audit rows (one
 * multi-row INSERT) and update the chain head; COMMIT. Every statement has
 * parameters and is prepared once per connection (pg: named statements;
 * postgres.js: its default `prepare: true`). Runs: SEQUENTIAL commits on one
 * connection, then 16 CONCURRENT committers on a pool of 16 connections
 * (each commits in turn; the head row is the shared lock, as the audit head
 * is in the store). Each configuration runs ROUNDS rounds; the table shows
 * the median commits per second and the median commit latency.
 *
 * Both run twice: DURABLE (the store's setting: each commit waits for its WAL
 * flush, so the disk dominates) and with `synchronous_commit = off` (no wait
 * for the flush: what is left is the client's and the server's own cost).
 *
 * Progress goes to stderr, the table to stdout.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import postgres from 'postgres';
import { createBenchDatabase } from './bench-database.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SEQUENTIAL = Number(process.env.BENCH_SEQUENTIAL ?? 400);
const CONCURRENT = 16;
const PER_WORKER = Number(process.env.BENCH_PER_WORKER ?? 60);

function log(message: string): void {
  process.stderr.write(`${message}\n`);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

const SCHEMA = `
  CREATE TABLE items (id TEXT PRIMARY KEY, state TEXT NOT NULL, hop INTEGER NOT NULL, input TEXT NOT NULL,
    cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0, updated_at BIGINT NOT NULL);
  CREATE TABLE hops (id TEXT PRIMARY KEY, item_id TEXT NOT NULL, seq INTEGER NOT NULL, stage TEXT NOT NULL,
    idempotency_key TEXT NOT NULL UNIQUE, dispatched_at BIGINT NOT NULL);
  CREATE TABLE usage (seq BIGSERIAL PRIMARY KEY, hop_id TEXT NOT NULL, item_id TEXT NOT NULL, model TEXT NOT NULL,
    input_tokens INTEGER NOT NULL, cost_usd DOUBLE PRECISION NOT NULL, at BIGINT NOT NULL);
  CREATE TABLE audit_log (seq BIGINT PRIMARY KEY, at TEXT NOT NULL, kind TEXT NOT NULL, item_id TEXT NOT NULL,
    actor TEXT NOT NULL, data TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL);
  CREATE TABLE audit_head (id INTEGER PRIMARY KEY, seq BIGINT NOT NULL, hash TEXT NOT NULL);
  INSERT INTO audit_head VALUES (1, 0, '${'0'.repeat(64)}');
`;

const Q = {
  item: 'INSERT INTO items (id, state, hop, input, updated_at) VALUES ($1, $2, $3, $4, $5)',
  hop: 'INSERT INTO hops (id, item_id, seq, stage, idempotency_key, dispatched_at) VALUES ($1, $2, $3, $4, $5, $6)',
  update: 'UPDATE items SET state = $1, hop = $2, cost_usd = $3, updated_at = $4 WHERE id = $5',
  usage: 'INSERT INTO usage (hop_id, item_id, model, input_tokens, cost_usd, at) VALUES ($1, $2, $3, $4, $5, $6)',
  head: 'SELECT seq, hash FROM audit_head WHERE id = 1 FOR UPDATE',
  audit:
    'INSERT INTO audit_log (seq, at, kind, item_id, actor, data, prev_hash, hash) VALUES ' +
    '($1, $2, $3, $4, $5, $6, $7, $8), ($9, $10, $11, $12, $13, $14, $15, $16), ' +
    '($17, $18, $19, $20, $21, $22, $23, $24)',
  setHead: 'UPDATE audit_head SET seq = $1, hash = $2 WHERE id = 1',
};

/** The parameters of one commit (n: a number unique in the run). */
function commitParams(n: number) {
  const item = `item-${n}`;
  const hop = `hop-${n}`;
  const at = Date.now();
  const iso = new Date(at).toISOString();
  return {
    item: [item, 'running', 0, JSON.stringify([{ kind: 'text', text: `request ${n}` }]), at],
    hop: [hop, item, 1, 'plan', `${item}:plan:1`, at],
    update: ['running', 1, 0.0012, at, item],
    usage: [hop, item, 'model-a', 120, 0.0012, at],
    audit: (seq: number, prev: string) => {
      const rows: unknown[] = [];
      let p = prev;
      for (let i = 1; i <= 3; i++) {
        const h = randomBytes(32).toString('hex');
        rows.push(seq + i, iso, 'hop.dispatched', item, 'coordinator', `{"hop":${i},"stage":"plan"}`, p, h);
        p = h;
      }
      return { rows, head: [seq + 3, p] };
    },
  };
}

type Committer = (n: number) => Promise<void>;

interface Client {
  name: string;
  /** A committer on its own connection (sequential) and the pool's (concurrent). */
  committer: () => Committer;
  close: () => Promise<void>;
}

function pgClient(url: string, durable: boolean): Client {
  const pool = new pg.Pool({
    connectionString: url,
    max: CONCURRENT,
    ...(durable ? {} : { options: '-c synchronous_commit=off' }),
  });
  const named = (name: keyof typeof Q, values: unknown[]) => ({ name, text: Q[name], values });
  return {
    name: 'pg 8.23.1',
    committer: () => async (n) => {
      const c = commitParams(n);
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await client.query(named('item', c.item));
        await client.query(named('hop', c.hop));
        await client.query(named('update', c.update));
        await client.query(named('usage', c.usage));
        const head = (await client.query(named('head', []))).rows[0] as { seq: string; hash: string };
        const audit = c.audit(Number(head.seq), head.hash);
        await client.query(named('audit', audit.rows));
        await client.query(named('setHead', audit.head));
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}

function postgresClient(url: string, durable: boolean): Client {
  const sql = postgres(url, {
    max: CONCURRENT,
    onnotice: () => undefined,
    ...(durable ? {} : { connection: { synchronous_commit: 'off' } }),
  });
  return {
    name: 'postgres 3.4.9',
    committer: () => async (n) => {
      const c = commitParams(n);
      await sql.begin(async (tx) => {
        await tx.unsafe(Q.item, c.item as never[], { prepare: true });
        await tx.unsafe(Q.hop, c.hop as never[], { prepare: true });
        await tx.unsafe(Q.update, c.update as never[], { prepare: true });
        await tx.unsafe(Q.usage, c.usage as never[], { prepare: true });
        const [head] = (await tx.unsafe(Q.head, [], { prepare: true })) as unknown as { seq: string; hash: string }[];
        const audit = c.audit(Number(head!.seq), head!.hash);
        await tx.unsafe(Q.audit, audit.rows as never[], { prepare: true });
        await tx.unsafe(Q.setHead, audit.head as never[], { prepare: true });
      });
    },
    close: () => sql.end({ timeout: 5 }),
  };
}

async function main(): Promise<void> {
  const database = await createBenchDatabase('sb_bench_pg_client');
  const dbUrl = database.url;
  let n = 0;
  const tables: string[] = [];
  try {
    const setup = new pg.Client({ connectionString: dbUrl });
    await setup.connect();
    await setup.query(SCHEMA);
    await setup.end();
    for (const durable of [true, false]) {
      n = await runMode(dbUrl, durable, n, tables);
    }
  } finally {
    await database.drop();
  }
  process.stdout.write(tables.join(''));
}

async function runMode(dbUrl: string, durable: boolean, start: number, tables: string[]): Promise<number> {
  let n = start;
  const mode = durable ? 'durable' : 'synchronous_commit = off';
  const results: Record<string, { seq: number[]; seqLat: number[]; conc: number[]; concLat: number[] }> = {};
  {
    const clients = [pgClient(dbUrl, durable), postgresClient(dbUrl, durable)];
    for (const client of clients) results[client.name] = { seq: [], seqLat: [], conc: [], concLat: [] };
    // Warm-up: connections opened and statements prepared before the first round.
    for (const client of clients) {
      const commit = client.committer();
      await Promise.all(Array.from({ length: CONCURRENT }, async () => commit(++n)));
    }
    for (let round = 1; round <= ROUNDS; round++) {
      // Alternate the order each round, so neither client always runs first on a shared machine.
      const order = round % 2 === 1 ? clients : [...clients].reverse();
      for (const client of order) {
        const r = results[client.name]!;
        const commit = client.committer();
        const lat: number[] = [];
        let t0 = process.hrtime.bigint();
        for (let i = 0; i < SEQUENTIAL; i++) {
          const s = process.hrtime.bigint();
          await commit(++n);
          lat.push(Number(process.hrtime.bigint() - s) / 1e6);
        }
        let ms = Number(process.hrtime.bigint() - t0) / 1e6;
        r.seq.push((SEQUENTIAL / ms) * 1000);
        r.seqLat.push(median(lat));
        const concLat: number[] = [];
        t0 = process.hrtime.bigint();
        await Promise.all(
          Array.from({ length: CONCURRENT }, async () => {
            for (let i = 0; i < PER_WORKER; i++) {
              const s = process.hrtime.bigint();
              await commit(++n);
              concLat.push(Number(process.hrtime.bigint() - s) / 1e6);
            }
          }),
        );
        ms = Number(process.hrtime.bigint() - t0) / 1e6;
        r.conc.push(((CONCURRENT * PER_WORKER) / ms) * 1000);
        r.concLat.push(median(concLat));
        log(
          `${mode} round ${round} ${client.name}: sequential ${r.seq.at(-1)!.toFixed(0)}/s, ` +
            `16 concurrent ${r.conc.at(-1)!.toFixed(0)}/s`,
        );
      }
    }
    for (const client of clients) await client.close();
  }
  const names = Object.keys(results);
  const ref = results[names[0]!]!;
  tables.push(
    `\nPostgreSQL client, the store's commit (4 writes + 3 audit rows + head), ${mode}, median of ${ROUNDS} rounds\n\n` +
      '| client | sequential commits/s | median latency | 16 concurrent commits/s | median latency | vs pg (seq / conc) |\n' +
      '|---|---|---|---|---|---|\n',
  );
  for (const name of names) {
    const r = results[name]!;
    tables.push(
      `| ${name} | ${median(r.seq).toFixed(0)} | ${median(r.seqLat).toFixed(2)} ms | ${median(r.conc).toFixed(0)} | ` +
        `${median(r.concLat).toFixed(2)} ms | ${(median(r.seq) / median(ref.seq)).toFixed(2)} / ` +
        `${(median(r.conc) / median(ref.conc)).toFixed(2)} |\n`,
    );
  }
  return n;
}

await main();
