/**
 * Start-up time of the read commands on a Coordinator's PostgreSQL database
 * against a file: `tasks list` and `top --once` (one refresh), each spawned
 * as the real CLI (dist/) `RUNS` times, median and spread printed. The file
 * is a `switchboard demo` run (2 work items); the database is a real
 * Coordinator's run of 2 dev-sdlc items on PostgreSQL and Redis (the tests'
 * fixture, test/cli/postgres-coordinator.ts). Needs PostgreSQL and Redis
 * (see test/postgres-availability.ts, test/redis-availability.ts).
 *
 *   npm run bench:cli-read
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { postgresWithItems } from '../test/cli/postgres-coordinator.js';

const RUNS = Number(process.env.RUNS ?? 10);
const BIN = new URL('../bin/switchboard.js', import.meta.url).pathname;

function timeRuns(args: readonly string[]): number[] {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const start = process.hrtime.bigint();
    const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8' });
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    if (r.status !== 0) throw new Error(`${args.join(' ')}: exit ${r.status}: ${r.stderr}`);
    times.push(ms);
  }
  return times.sort((a, b) => a - b);
}

function report(name: string, times: number[]): void {
  const median = times[Math.floor(times.length / 2)]!;
  console.log(
    `${name.padEnd(28)} median ${median.toFixed(0)} ms  (min ${times[0]!.toFixed(0)}, max ${times.at(-1)!.toFixed(0)}, ${times.length} runs)`,
  );
}

const dir = mkdtempSync(join(tmpdir(), 'sb-bench-cli-'));
const file = join(dir, 'demo.db');
const demo = spawnSync(process.execPath, [BIN, 'demo', '--db', file, '--approve', '--json'], { encoding: 'utf8' });
if (demo.status !== 0) throw new Error(`demo: ${demo.stderr}`);
const pg = await postgresWithItems(2);
try {
  report('tasks list (file)', timeRuns(['tasks', 'list', '--db', file]));
  report('tasks list (postgres)', timeRuns(['tasks', 'list', '--db', pg.url]));
  report('top --once (file)', timeRuns(['top', '--db', file, '--once']));
  report('top --once (postgres)', timeRuns(['top', '--db', pg.url, '--once']));
  report('top --once (postgres+redis)', timeRuns(['top', '--db', pg.url, ...pg.bus, '--once']));
} finally {
  await pg.cleanup();
  rmSync(dir, { recursive: true, force: true });
}
