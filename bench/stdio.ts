/**
 * `npm run bench:stdio`: round trips per second through `switchboard serve`
 * against a bare NDJSON echo child process, measured in the same run with the
 * same client code (`RpcConnection`), sequential and with 64 calls in flight.
 * Prints medians of 3 rounds and the ratios (targets: sequential >= 50% of
 * the echo, pipelined >= 30%). Progress goes to stderr, figures to stdout.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RpcConnection } from '../src/transport/rpc-connection.js';
import { SWITCHBOARD_BIN } from '../src/transport/serve-process.js';
import { ECHO_PARAMS, sequentialRoundTrips, spawnEchoChild } from './echo-child.js';

const SEQUENTIAL_CALLS = 3000;
const PIPELINED_CALLS = 30_000;
const IN_FLIGHT = 64;
const ROUNDS = 5;

interface Figures {
  sequential: number;
  pipelined: number;
}

interface Peer {
  name: string;
  child: ChildProcess;
  connection: RpcConnection;
  method: string;
  params: unknown;
}

function open(name: string, child: ChildProcess): Omit<Peer, 'method' | 'params'> {
  if (!child.stdout || !child.stdin) throw new Error('no pipes');
  const connection = new RpcConnection({ readable: child.stdout, writable: child.stdin, onNotification: () => {} });
  return { name, child, connection };
}

function sequential(peer: Peer, calls: number): Promise<number> {
  return sequentialRoundTrips(peer.connection, peer.method, peer.params, calls);
}

async function pipelined(peer: Peer, calls: number, inFlight: number): Promise<number> {
  let issued = 0;
  const started = performance.now();
  const lane = async () => {
    while (issued < calls) {
      issued++;
      await peer.connection.call(peer.method, peer.params);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return calls / ((performance.now() - started) / 1000);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

/** Rounds interleave the peers, so that noise from the shared machine falls on all of them alike. */
async function measureAll(peers: Peer[]) {
  const figures = peers.map(() => ({ seq: [] as number[], pipe: [] as number[] }));
  for (const peer of peers) await sequential(peer, 500);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, peer] of peers.entries()) {
      const f = figures[i] as (typeof figures)[number];
      f.seq.push(await sequential(peer, SEQUENTIAL_CALLS));
      f.pipe.push(await pipelined(peer, PIPELINED_CALLS, IN_FLIGHT));
      process.stderr.write(
        `  round ${round + 1} ${peer.name}: ${f.seq.at(-1)?.toFixed(0)}/s sequential, ${f.pipe.at(-1)?.toFixed(0)}/s pipelined\n`,
      );
    }
  }
  return figures.map((f) => ({ sequential: median(f.seq), pipelined: median(f.pipe) }));
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-bench-stdio-'));
  try {
    process.stderr.write('starting the echo child and switchboard serve...\n');
    const echoChild = spawnEchoChild();
    const echo: Peer = {
      name: 'echo',
      child: echoChild.child,
      connection: echoChild.connection,
      method: 'echo',
      params: ECHO_PARAMS,
    };
    const serveChild = spawn(
      process.execPath,
      [SWITCHBOARD_BIN, 'serve', '--db', join(dir, 'bench.db'), '--log-level', 'warn'],
      {
        stdio: ['pipe', 'pipe', 'inherit'],
      },
    );
    const base = open('switchboard', serveChild);
    await base.connection.call('app.handshake', { protocolVersion: 10 });
    const worker = (await base.connection.call('a2a.agents.register', { name: 'worker', contextId: 'bench' })) as {
      token: string;
    };
    const requester = (await base.connection.call('a2a.agents.register', {
      name: 'requester',
      contextId: 'bench',
    })) as {
      token: string;
    };
    const sent = (await base.connection.call('a2a.message.send', {
      token: requester.token,
      to: 'worker',
      message: { parts: [{ kind: 'text', text: 'bench' }] },
    })) as { task: { id: string } };
    const get: Peer = {
      ...base,
      name: 'switchboard a2a.tasks.get',
      method: 'a2a.tasks.get',
      params: { token: worker.token, id: sent.task.id, historyLength: 0 },
    };
    const handshake: Peer = {
      ...base,
      name: 'switchboard app.handshake',
      method: 'app.handshake',
      params: { protocolVersion: 10 },
    };

    const [echoFigures, getFigures, handshakeFigures] = (await measureAll([echo, get, handshake])) as [
      Figures,
      Figures,
      Figures,
    ];

    const pct = (a: number, b: number) => `${((a / b) * 100).toFixed(0)}%`;
    const rows = [
      ['', 'sequential/s', `${IN_FLIGHT} in flight/s`, 'seq vs echo', 'pipelined vs echo'],
      ['bare NDJSON echo child', echoFigures.sequential.toFixed(0), echoFigures.pipelined.toFixed(0), '100%', '100%'],
      [
        'serve: a2a.tasks.get (broker + SQLite read)',
        getFigures.sequential.toFixed(0),
        getFigures.pipelined.toFixed(0),
        pct(getFigures.sequential, echoFigures.sequential),
        pct(getFigures.pipelined, echoFigures.pipelined),
      ],
      [
        'serve: app.handshake (transport only)',
        handshakeFigures.sequential.toFixed(0),
        handshakeFigures.pipelined.toFixed(0),
        pct(handshakeFigures.sequential, echoFigures.sequential),
        pct(handshakeFigures.pipelined, echoFigures.pipelined),
      ],
    ];
    const widths = rows[0]?.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length))) ?? [];
    process.stdout.write(
      `bench:stdio, medians of ${ROUNDS} rounds (${SEQUENTIAL_CALLS} sequential, ${PIPELINED_CALLS} pipelined calls each)\n`,
    );
    for (const row of rows) process.stdout.write(`${row.map((cell, c) => cell.padEnd(widths[c] ?? 0)).join('  ')}\n`);
    process.stdout.write(
      `targets: sequential >= 50% of echo (${pct(getFigures.sequential, echoFigures.sequential)}), ` +
        `pipelined >= 30% of echo (${pct(getFigures.pipelined, echoFigures.pipelined)})\n`,
    );
    const serveExited = new Promise((resolve) => serveChild.once('exit', resolve));
    await base.connection.end();
    await Promise.all([echoChild.close(), serveExited]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:stdio failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
