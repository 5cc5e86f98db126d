/**
 * `npm run bench:inspect`: what `--inspect` costs the embedded broker.
 *
 * A durable round trip (a requester creates a task, the worker moves it to
 * working, then completed) one at a time, on three brokers per round, back to
 * back on fresh files: without an inspector (the reference: the default), with
 * the inspector and no client connected, and with one WebSocket client
 * reading every frame. The inspector's work runs on timers after the calls
 * answer, so a timed run ends when the last frame was sent (the backlog is
 * drained inside the timing). Figures: microseconds per round trip, frames
 * and bytes per round trip, and the ratio to the reference (median of the
 * per-round ratios). Progress goes to stderr, the figures to stdout.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import type { ActorInspector } from '../src/actors/inspection.js';
import { createBroker } from '../src/actors/broker/broker.js';
import { type InspectorServer, startInspectorServer } from '../src/inspect/inspector-server.js';
import { createStatelyInspection } from '../src/inspect/stately-inspection.js';

const ROUNDS = 5;
const ROUND_TRIPS = 300;
/** A requester registration sends at most 200 messages and a context holds 128 tasks. */
const TASKS_PER_REQUESTER = 100;

function log(message: string): void {
  process.stderr.write(`${message}\n`);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

interface Run {
  usPerTrip: number;
  frames: number;
  bytes: number;
}

async function roundTrips(
  dir: string,
  name: string,
  inspect: ActorInspector | undefined,
  settled: () => Promise<void>,
) {
  const broker = createBroker({ path: join(dir, `${name}.db`), inspect });
  const worker = (await broker.dispatch('a2a.agents.register', { name: 'w', contextId: 'w' })) as { token: string };
  const started = process.hrtime.bigint();
  let requester = { token: '' };
  for (let i = 0; i < ROUND_TRIPS; i++) {
    if (i % TASKS_PER_REQUESTER === 0) {
      requester = (await broker.dispatch('a2a.agents.register', { name: `r${i}`, contextId: `r${i}` })) as {
        token: string;
      };
    }
    const { task } = (await broker.dispatch('a2a.message.send', {
      token: requester.token,
      to: 'w',
      message: { parts: [{ kind: 'text', text: `job ${i}` }] },
    })) as { task: { id: string } };
    await broker.dispatch('a2a.tasks.status', { token: worker.token, id: task.id, state: 'working' });
    await broker.dispatch('a2a.tasks.status', { token: worker.token, id: task.id, state: 'completed' });
  }
  await settled();
  const elapsed = Number(process.hrtime.bigint() - started) / 1000;
  await broker.close();
  return elapsed / ROUND_TRIPS;
}

/** Resolves once no frame was sent for 20 ms (the inspector's timers have run). */
async function drained(server: InspectorServer): Promise<void> {
  let last = -1;
  while (server.frames !== last) {
    last = server.frames;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function withInspector(dir: string, name: string, client: boolean): Promise<Run> {
  const server = await startInspectorServer({ port: 0 });
  const inspection = createStatelyInspection(server);
  let frames = 0;
  let bytes = 0;
  let socket: WebSocket | undefined;
  if (client) {
    socket = new WebSocket(server.wsUrl);
    socket.on('message', (data: Buffer) => {
      frames++;
      bytes += data.length;
    });
    await new Promise<void>((resolve, reject) => {
      socket?.once('open', () => resolve());
      socket?.once('error', reject);
    });
  }
  const before = server.frames;
  const usPerTrip = await roundTrips(dir, name, inspection.inspect, () => drained(server));
  const sent = server.frames - before;
  if (socket !== undefined) {
    while (frames < server.frames) await new Promise((resolve) => setTimeout(resolve, 5));
    socket.terminate();
  }
  inspection.stop();
  await server.stop();
  return { usPerTrip, frames: sent, bytes: client ? bytes : 0 };
}

async function main(): Promise<void> {
  log(
    `bench:inspect: ${ROUNDS} rounds of ${ROUND_TRIPS} round trips; ${cpus().length} cores, load ${loadavg()[0]?.toFixed(2)}`,
  );
  const off: number[] = [];
  const on: Run[] = [];
  const client: Run[] = [];
  const ratioOn: number[] = [];
  const ratioClient: number[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const dir = mkdtempSync(join(tmpdir(), 'switchboard-bench-inspect-'));
    try {
      const reference = await roundTrips(dir, 'off', undefined, async () => undefined);
      const inspected = await withInspector(dir, 'on', false);
      const watched = await withInspector(dir, 'client', true);
      off.push(reference);
      on.push(inspected);
      client.push(watched);
      ratioOn.push(inspected.usPerTrip / reference);
      ratioClient.push(watched.usPerTrip / reference);
      log(
        `  round ${round}/${ROUNDS}: off ${reference.toFixed(0)} us, inspector ${inspected.usPerTrip.toFixed(0)} us, with a client ${watched.usPerTrip.toFixed(0)} us per round trip`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const row = (label: string, us: number, ratio: string, frames: string, bytes: string) =>
    `| ${label} | ${us.toFixed(0)} | ${ratio} | ${frames} | ${bytes} |`;
  const lines = [
    '| broker round trip (send, working, completed) | us per round trip (median) | vs no inspector | frames per round trip | bytes per round trip |',
    '|---|---|---|---|---|',
    row('no inspector (default)', median(off), '1.00x', '0', '0'),
    row(
      '--inspect, no client',
      median(on.map((r) => r.usPerTrip)),
      `${median(ratioOn).toFixed(2)}x`,
      (median(on.map((r) => r.frames)) / ROUND_TRIPS).toFixed(1),
      '-',
    ),
    row(
      '--inspect, one client',
      median(client.map((r) => r.usPerTrip)),
      `${median(ratioClient).toFixed(2)}x`,
      (median(client.map((r) => r.frames)) / ROUND_TRIPS).toFixed(1),
      (median(client.map((r) => r.bytes)) / ROUND_TRIPS).toFixed(0),
    ),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

await main();
