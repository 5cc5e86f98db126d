/**
 * `npm run bench:console`: what the console weighs and how fast its API answers.
 *
 * Fills a database with the demo run N times over (2 items of the dev SDLC
 * workflow each), starts the console server in process on it, and measures
 * the page's weight (the three assets, as served) and the median and p95
 * latency of the reads a page makes, over real HTTP on loopback, against
 * the floor of the same HTTP round trip to a handler that answers `{}` at
 * once (measured in the same run). Progress goes to stderr, the figures to
 * stdout.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConsoleData } from '../src/console/console-data.js';
import { startConsoleServer } from '../src/console/console-server.js';
import { openDatabase } from '../src/persistence/kernel/database.js';

const DEMO_RUNS = Number(process.env.BENCH_DEMO_RUNS ?? 10);
const CALLS = 300;

function log(message: string): void {
  process.stderr.write(`${message}\n`);
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? Number.NaN;
}

async function time(url: string): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const start = process.hrtime.bigint();
    const res = await fetch(url);
    await res.arrayBuffer();
    samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return samples;
}

const dir = mkdtempSync(join(tmpdir(), 'sb-bench-console-'));
try {
  const db = join(dir, 'demo.db');
  const bin = new URL('../bin/switchboard.js', import.meta.url).pathname;
  for (let i = 0; i < DEMO_RUNS; i++) {
    execFileSync(process.execPath, [bin, 'demo', '--db', db, '--approve', '--json'], { stdio: 'ignore' });
    log(`demo run ${i + 1}/${DEMO_RUNS}`);
  }
  const database = openDatabase(db, { readonly: true });
  const server = await startConsoleServer({ data: new ConsoleData({ kind: 'sqlite', db: database }), port: 0 });
  const floor = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  await new Promise<void>((resolve) => floor.listen(0, '127.0.0.1', resolve));
  const floorUrl = `http://127.0.0.1:${(floor.address() as { port: number }).port}/`;

  let weight = 0;
  for (const path of ['', 'assets/console.js', 'assets/console.css']) {
    weight += (await (await fetch(server.url + path)).arrayBuffer()).byteLength;
  }
  const items = (await (await fetch(`${server.url}api/items`)).json()) as { items: { id: string }[] };
  const one = items.items[0]?.id ?? '';
  const reads: [string, string][] = [
    ['floor (empty handler)', floorUrl],
    ['GET /api/overview', `${server.url}api/overview`],
    ['GET /api/items', `${server.url}api/items`],
    ['GET /api/items/:id', `${server.url}api/items/${one}`],
    ['GET /api/queues', `${server.url}api/queues`],
    ['GET /api/machines', `${server.url}api/machines`],
  ];
  console.log(
    `console bench: ${items.items.length} items, ${CALLS} calls per read, ${cpus().length} cores, load ${loadavg()[0]?.toFixed(2)}`,
  );
  console.log(`page weight: ${weight} bytes (index.html, console.js, console.css; no other request)`);
  let floorMedian = Number.NaN;
  for (const [name, url] of reads) {
    const samples = await time(url);
    if (name.startsWith('floor')) floorMedian = quantile(samples, 0.5);
    const median = quantile(samples, 0.5);
    console.log(
      `${name.padEnd(24)} median ${median.toFixed(3)} ms  p95 ${quantile(samples, 0.95).toFixed(3)} ms  ${(median / floorMedian).toFixed(2)}x floor`,
    );
  }
  await server.stop();
  floor.close();
  database.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
