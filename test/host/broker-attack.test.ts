import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_LINE_BYTES, MAX_LINE_NESTING } from '../../src/protocol/bounds.js';
import { SocketServe, hostDir, rawSocket } from './helpers.js';

// One connection of the host broker tries to exhaust it: 2,000 agents with
// 3,000-character descriptions, then one batch of 1,000 a2a.agents.list of
// 1,000 cards each (every call within every bound; 3 GB of answers), then a
// 32 MiB line of 16M nested arrays. The broker stays up, within its RSS
// bound, and another connection keeps its round trips within a bound.

/** RSS the broker may reach during the attack (about 150 MB before it, about 320 MB measured at its peak). */
const RSS_BOUND = 1024 * 1024 * 1024;
/** The slowest round trip of the other connection during the attack (a loaded, shared machine: under 1 s measured alone, up to 3.7 s beside seven other test files). */
const ROUND_TRIP_BOUND_MS = 8000;
const TIMEOUT = 300_000;

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

/** Lines read from a socket as Buffers (a 32 MiB answer is not decoded until asked). */
class Lines {
  readonly lines: Buffer[] = [];
  private parts: Buffer[] = [];
  private readonly waiters = new Set<() => void>();

  constructor(socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      let rest = chunk;
      for (let at = rest.indexOf(10); at >= 0; at = rest.indexOf(10)) {
        this.parts.push(rest.subarray(0, at));
        this.lines.push(Buffer.concat(this.parts));
        this.parts = [];
        rest = rest.subarray(at + 1);
      }
      if (rest.length > 0) this.parts.push(rest);
      for (const waiter of [...this.waiters]) waiter();
    });
    socket.on('error', () => {});
  }

  waitCount(count: number, timeoutMs = TIMEOUT): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`only ${this.lines.length} of ${count} lines`)), timeoutMs);
      const check = () => {
        if (this.lines.length < count) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve();
      };
      this.waiters.add(check);
      check();
    });
  }
}

/** The broker's RSS in bytes, read from /proc. */
function rssOf(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? 0) * 1024;
}

/** A second client in a process of its own: registers, then times a2a.tasks.list round trips, one line each. */
const PROBE = `
const { connect } = require('node:net');
const socket = connect(process.argv[1]);
let buffered = '';
let id = 0;
const waiting = new Map();
socket.setEncoding('utf8');
socket.on('data', (chunk) => {
  buffered += chunk;
  for (let at = buffered.indexOf('\\n'); at >= 0; at = buffered.indexOf('\\n')) {
    const message = JSON.parse(buffered.slice(0, at));
    buffered = buffered.slice(at + 1);
    waiting.get(message.id)?.(message);
  }
});
const call = (method, params) => new Promise((resolve) => {
  const n = ++id;
  waiting.set(n, resolve);
  socket.write(JSON.stringify({ jsonrpc: '2.0', id: n, method, params }) + '\\n');
});
socket.on('connect', async () => {
  const { result } = await call('a2a.agents.register', { name: 'probe', contextId: 'probe' });
  process.stdout.write('ready\\n');
  for (;;) {
    const started = performance.now();
    const answer = await call('a2a.tasks.list', { token: result.token });
    if (answer.error) process.stdout.write('error\\n');
    process.stdout.write(Math.round(performance.now() - started) + '\\n');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
});
socket.on('error', () => process.exit(1));
socket.on('close', () => process.exit(0));
`;

class Probe {
  readonly child: ChildProcess;
  readonly roundTrips: number[] = [];
  errors = 0;
  readonly ready: Promise<void>;

  constructor(socketPath: string) {
    this.child = spawn(process.execPath, ['-e', PROBE, socketPath], { stdio: ['ignore', 'pipe', 'inherit'] });
    let buffered = '';
    this.ready = new Promise((resolve) => {
      this.child.stdout?.setEncoding('utf8');
      this.child.stdout?.on('data', (chunk: string) => {
        buffered += chunk;
        for (let at = buffered.indexOf('\n'); at >= 0; at = buffered.indexOf('\n')) {
          const line = buffered.slice(0, at);
          buffered = buffered.slice(at + 1);
          if (line === 'ready') resolve();
          else if (line === 'error') this.errors++;
          else this.roundTrips.push(Number(line));
        }
      });
    });
  }

  /** Round trips measured from now on. */
  mark(): number {
    return this.roundTrips.length;
  }
}

describe('one connection cannot exhaust the host broker', () => {
  it('survives 1,000 agent lists of 3 MB in one batch and a 32 MiB nested line, within its RSS, answering others', {
    timeout: TIMEOUT,
  }, async () => {
    const h = hostDir();
    cleanups.push(h.cleanup);
    const serve = new SocketServe(h.db, ['--listen', `unix:${h.socket}`]);
    cleanups.push(() => serve.stop());
    await serve.listening(h.socket);
    const pid = serve.child.pid as number;

    const socket = await rawSocket(h.socket);
    cleanups.push(() => void socket.destroy());
    const attacker = new Lines(socket);
    const description = 'd'.repeat(3000);
    let id = 0;
    for (let round = 0; round < 10; round++) {
      let lines = '';
      for (let i = 0; i < 200; i++) {
        lines += `${JSON.stringify({
          jsonrpc: '2.0',
          id: ++id,
          method: 'a2a.agents.register',
          params: { name: `agent-${round * 200 + i}`, contextId: 'swarm', description },
        })}\n`;
      }
      socket.write(lines);
      await attacker.waitCount(id);
    }
    const first = JSON.parse(attacker.lines[0]?.toString() ?? '{}') as { result: { token: string } };
    const token = first.result.token;
    const baseline = rssOf(pid);

    const probe = new Probe(h.socket);
    cleanups.push(() => void probe.child.kill());
    await probe.ready;
    let peak = baseline;
    const sampler = setInterval(() => {
      if (serve.child.exitCode === null) peak = Math.max(peak, rssOf(pid));
    }, 25);
    cleanups.push(() => clearInterval(sampler));

    // The batch: 1,000 calls of 1,000 cards each (about 3.1 MB per answer).
    const batchMark = probe.mark();
    const batch = Array.from({ length: 1000 }, (_, i) => ({
      jsonrpc: '2.0',
      id: 10_000 + i,
      method: 'a2a.agents.list',
      params: { token, limit: 1000 },
    }));
    socket.write(`${JSON.stringify(batch)}\n`);
    await attacker.waitCount(id + 1);
    const batchLine = attacker.lines[id] as Buffer;
    expect(batchLine.length).toBeLessThanOrEqual(MAX_LINE_BYTES);
    const answers = JSON.parse(batchLine.toString()) as {
      id: number;
      result?: { agents: unknown[]; nextCursor?: string };
      error?: { code: number; message: string; data: Record<string, unknown> };
    }[];
    expect(answers.map((a) => a.id)).toEqual(batch.map((c) => c.id));
    const kept = answers.filter((a) => a.result !== undefined);
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length).toBeLessThan(20);
    for (const answer of kept) {
      expect(answer.result?.agents).toHaveLength(1000);
      expect(answer.result?.nextCursor).toBeDefined();
    }
    const notRun = answers.filter((a) => a.error?.code === -32000 && a.error.data.ran === false);
    expect(notRun.length).toBeGreaterThan(900);
    expect(notRun[0]?.error?.data).toMatchObject({ limit: 'MAX_LINE_BYTES', max: MAX_LINE_BYTES });
    expect(notRun[0]?.error?.message).toContain('nextCursor');
    const batchTrips = probe.roundTrips.slice(batchMark);

    // The nested line: 16M '[' then 16M ']' (32 MiB, at the line bound).
    const nestedMark = probe.mark();
    const half = MAX_LINE_BYTES / 2;
    const nested = Buffer.alloc(MAX_LINE_BYTES + 1, 0x5d);
    nested.fill(0x5b, 0, half);
    nested[MAX_LINE_BYTES] = 0x0a;
    socket.write(nested);
    await attacker.waitCount(id + 2);
    const refused = JSON.parse(attacker.lines[id + 1]?.toString() ?? '{}') as {
      id: unknown;
      error: { code: number; data: Record<string, unknown> };
    };
    expect(refused.id).toBeNull();
    expect(refused.error.code).toBe(-32600);
    expect(refused.error.data).toEqual({ limit: 'MAX_LINE_NESTING', max: MAX_LINE_NESTING });
    // Let a few more probes come back after the last line.
    const after = probe.mark();
    while (probe.roundTrips.length < after + 3) await new Promise((resolve) => setTimeout(resolve, 20));
    const nestedTrips = probe.roundTrips.slice(nestedMark);

    // Still up, still answering the attacker too.
    socket.write(
      `${JSON.stringify({ jsonrpc: '2.0', id: 'alive', method: 'app.handshake', params: { protocolVersion: 10 } })}\n`,
    );
    await attacker.waitCount(id + 3);
    expect(JSON.parse(attacker.lines[id + 2]?.toString() ?? '{}')).toMatchObject({ id: 'alive', result: {} });
    expect(serve.child.exitCode).toBeNull();
    clearInterval(sampler);

    const slowest = Math.max(...batchTrips, ...nestedTrips);
    console.log(
      `broker attack: RSS baseline ${Math.round(baseline / 1e6)} MB, peak ${Math.round(peak / 1e6)} MB; ` +
        `other connection: ${batchTrips.length} round trips during the batch (slowest ${Math.max(...batchTrips)} ms), ` +
        `${nestedTrips.length} during the nested line (slowest ${Math.max(...nestedTrips)} ms); ${kept.length} answers kept`,
    );
    expect(batchTrips.length).toBeGreaterThan(0);
    expect(probe.errors).toBe(0);
    expect(peak).toBeLessThan(RSS_BOUND);
    expect(slowest).toBeLessThan(ROUND_TRIP_BOUND_MS);
  });
});
