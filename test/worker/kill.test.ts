import { type ChildProcess, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { type Harness, hop, openHarness, takeResults, until } from './helpers.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const fixture = join(here, 'fixtures', 'effect-worker.ts');

interface WorkerProcess {
  child: ChildProcess;
  lines: string[];
  exited: Promise<number | null>;
}

function startWorker(path: string, mode: 'hang' | 'finish'): WorkerProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', fixture, path, mode], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: string[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => lines.push(line));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, lines, exited };
}

describe('a worker process killed mid-hop', () => {
  let h: Harness;
  const children: WorkerProcess[] = [];
  afterEach(async () => {
    for (const c of children.splice(0)) {
      if (c.child.exitCode === null && c.child.signalCode === null) {
        c.child.kill('SIGKILL');
        await c.exited;
      }
    }
    await h?.close();
  });

  it('is replaced by another worker after the lease expires, and the effect is applied exactly once', async () => {
    h = openHarness();
    const { bus, db, path } = h;
    db.exec('CREATE TABLE IF NOT EXISTS test_charges (hop TEXT NOT NULL, pid INTEGER NOT NULL)');
    await bus.publish('billing', hop('invoice-7'), { idempotencyKey: 'hop-invoice-7' });

    const first = startWorker(path, 'hang');
    children.push(first);
    await until(() => first.lines.some((l) => l.startsWith('charged')), 20_000, 'the first worker to charge');
    expect(first.lines).toContain('delivery 1');
    // A second worker process waits on the same queue. While the first is alive
    // and heartbeating, its lease (300 ms) holds well past its first term.
    const second = startWorker(path, 'finish');
    children.push(second);
    await until(() => second.lines.includes('ready'), 20_000, 'the second worker to start');
    await new Promise((resolve) => setTimeout(resolve, 900));
    expect(await bus.stats('billing')).toMatchObject({ depth: 0, inFlight: 1 });
    expect(second.lines).toEqual(['ready']);

    first.child.kill('SIGKILL');
    expect(await first.exited).toBeNull();
    expect(first.child.signalCode).toBe('SIGKILL');

    const [result] = await takeResults(bus, 1, 20_000);
    const firstPid = first.child.pid!;
    const secondPid = second.child.pid!;
    expect(result).toMatchObject({
      role: 'billing',
      outcome: 'completed',
      headers: { idempotencyKey: 'hop-invoice-7' },
      parts: [{ kind: 'text', text: `completed by ${secondPid}, charged by ${firstPid}` }],
    });
    expect(second.lines).toContain('delivery 2');
    expect(db.prepare('SELECT hop, pid FROM test_charges').all()).toEqual([{ hop: 'hop-invoice-7', pid: firstPid }]);
    await until(async () => (await bus.stats('billing')).inFlight === 0, 5000, 'the hop to be acked');
    expect(await bus.stats('billing')).toMatchObject({ depth: 0, inFlight: 0, deadLetters: 0 });
    // Exactly one result: nothing else arrives.
    expect(await takeResults(bus, 1, 300)).toEqual([]);

    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });
});
