/**
 * `npm run bench:lease`: what the leader lease costs and how fast it fails
 * over, on the local PostgreSQL (127.0.0.1:5432, or PG_URL; a database
 * of its own, dropped at the end).
 *
 * 1. The fence's cost per commit: a commit transaction standing in for the
 *    store's (BEGIN; one INSERT; COMMIT) without and with `assertEpoch`
 *    first, in alternating blocks of BLOCK commits on one connection, ROUNDS
 *    rounds; medians of the per-commit time of each block, and their ratio.
 * 2. Takeover time: a child process takes the lease (lease LEASE_MS, renewal
 *    RENEW_MS) and is SIGKILLed; the time from the kill to the standby's
 *    `leader` announce, for a standby that sees the dead pid (same host) and
 *    one that cannot (as from another host: only the lapse frees the lease),
 *    TRIALS trials each; medians and maxima against the bound lease + renew.
 *
 * Progress goes to stderr, the tables to stdout.
 */
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { filter, firstValueFrom } from 'rxjs';
import { PostgresLease } from '../src/persistence/coordinator/postgres-lease.js';
import { createBenchDatabase } from './bench-database.js';

const ROUNDS = 7;
const BLOCK = 300;
const TRIALS = 5;
const LEASE_MS = 2_000;
const RENEW_MS = 500;
const holderFixture = fileURLToPath(new URL('../test/persistence/fixtures/lease-holder.ts', import.meta.url));

function log(message: string): void {
  process.stderr.write(`${message}\n`);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function commits(store: pg.Client, fence: PostgresLease | undefined): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < BLOCK; i++) {
    await store.query('BEGIN');
    if (fence !== undefined) await fence.assertEpoch(store);
    await store.query('INSERT INTO writes (payload) VALUES ($1)', [i]);
    await store.query('COMMIT');
  }
  return (performance.now() - start) / BLOCK;
}

async function takeover(url: string, seesDeadPid: boolean): Promise<number> {
  const child = spawn(process.execPath, ['--import', 'tsx', holderFixture, url, String(LEASE_MS), String(RENEW_MS)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const started = await new Promise<{ role: string }>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]!));
    });
    child.on('exit', () => reject(new Error('the holder exited')));
  });
  if (started.role !== 'leader') throw new Error('the holder did not lead');
  const standby = new PostgresLease({
    url,
    leaseMs: LEASE_MS,
    renewMs: RENEW_MS,
    ...(seesDeadPid ? {} : { alive: () => true }),
  });
  await standby.acquire();
  // Let the holder renew a few times, so the kill falls anywhere in its renewal cycle.
  await new Promise((resolve) => setTimeout(resolve, RENEW_MS * (2 + Math.random())));
  const took = firstValueFrom(standby.roles$.pipe(filter((c) => c.role === 'leader')));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const killedAt = performance.now();
  child.kill('SIGKILL');
  await took;
  const ms = performance.now() - killedAt;
  await exited;
  await standby.close();
  return ms;
}

const database = await createBenchDatabase('sb_bench_lease');
const url = database.url;
try {
  const store = new pg.Client({ connectionString: url });
  await store.connect();
  await store.query('CREATE TABLE writes (id bigserial PRIMARY KEY, payload integer NOT NULL)');
  const lease = new PostgresLease({ url, leaseMs: 10_000, renewMs: 3_000 });
  if ((await lease.acquire()) !== 'leader') throw new Error('the bench lease does not lead');
  const plain: number[] = [];
  const fenced: number[] = [];
  await commits(store, lease); // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    plain.push(await commits(store, undefined));
    fenced.push(await commits(store, lease));
    log(`round ${round + 1}/${ROUNDS}: plain ${plain.at(-1)!.toFixed(3)} ms, fenced ${fenced.at(-1)!.toFixed(3)} ms`);
  }
  await lease.close();
  await store.end();

  const seen: number[] = [];
  const lapsed: number[] = [];
  for (let trial = 0; trial < TRIALS; trial++) {
    seen.push(await takeover(url, true));
    lapsed.push(await takeover(url, false));
    log(
      `trial ${trial + 1}/${TRIALS}: dead pid seen ${seen.at(-1)!.toFixed(0)} ms, lapse ${lapsed.at(-1)!.toFixed(0)} ms`,
    );
  }

  const p = median(plain);
  const f = median(fenced);
  process.stdout.write(
    [
      `commit (BEGIN; INSERT; COMMIT), ${ROUNDS} rounds of ${BLOCK}, medians of the per-commit time:`,
      `  without the fence   ${p.toFixed(3)} ms`,
      `  with assertEpoch    ${f.toFixed(3)} ms   (x${(f / p).toFixed(2)}, +${(f - p).toFixed(3)} ms)`,
      '',
      `takeover after SIGKILL of the leader (lease ${LEASE_MS} ms, renew ${RENEW_MS} ms, bound ${LEASE_MS + RENEW_MS} ms), ${TRIALS} trials:`,
      `  dead pid seen (same host)   median ${median(seen).toFixed(0)} ms, max ${Math.max(...seen).toFixed(0)} ms`,
      `  lapse only (another host)   median ${median(lapsed).toFixed(0)} ms, max ${Math.max(...lapsed).toFixed(0)} ms`,
      '',
    ].join('\n'),
  );
} finally {
  await database.drop();
}
