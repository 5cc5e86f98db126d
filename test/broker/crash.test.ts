import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createBroker } from '../../src/actors/broker/broker.js';
import { tempDir } from './helpers.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/crash-child.ts', import.meta.url));

interface Ack {
  taskId?: string;
  step?: number;
  state?: string;
  ready?: boolean;
}

/** Runs the child until it has reported `killAfter` acknowledgements, then SIGKILLs it. */
function runAndKill(path: string, round: number, killAfter: number): Promise<Ack[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, path, String(round)], {
      stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
    });
    const acks: Ack[] = [];
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const side = child.stdio[3];
    if (!side || !('on' in side)) throw new Error('no side channel');
    const lines = createInterface({ input: side as NodeJS.ReadableStream });
    lines.on('line', (line) => {
      acks.push(JSON.parse(line) as Ack);
      if (acks.length === killAfter) child.kill('SIGKILL');
    });
    child.on('exit', (code, signal) => {
      if (signal === 'SIGKILL') {
        lines.close();
        resolve(acks);
      } else reject(new Error(`child exited on its own (${code}): ${stderr}`));
    });
  });
}

/** The message ids a task's history holds after each step of the child's script. */
const SUFFIXES = ['c', 'w', 'f', 'd'];

const t = tempDir('switchboard-crash-');
afterAll(() => t.cleanup());

describe('a killed broker process', () => {
  it('loses no acknowledged call and leaves no task in an impossible state (3 kills)', async () => {
    const path = join(t.dir, 'crash.db');
    const acked = new Map<string, { step: number; state?: string }>();
    for (let round = 0; round < 3; round++) {
      const killAfter = 50 + Math.floor(Math.random() * 400);
      const acks = await runAndKill(path, round, killAfter);
      expect(acks.length).toBeGreaterThanOrEqual(killAfter);
      for (const a of acks) {
        if (a.taskId === undefined || a.step === undefined) continue;
        const prev = acked.get(a.taskId);
        if (!prev || prev.step < a.step) acked.set(a.taskId, { step: a.step, ...(a.state ? { state: a.state } : {}) });
      }
      // Reopening restores the live actors and migrates nothing.
      const broker = createBroker({ path });
      expect(broker.opened.schema).toEqual({ from: 16, to: 16 });
      const db = new Database(path, { readonly: true });
      const tasks = db.prepare('SELECT task_id, state, history_count FROM a2a_tasks').all() as {
        task_id: string;
        state: string;
        history_count: number;
      }[];
      const byId = new Map(tasks.map((r) => [r.task_id, r]));
      // Every acknowledged call is there.
      for (const [taskId, last] of acked) {
        const row = byId.get(taskId);
        expect(row, `acknowledged task ${taskId}`).toBeDefined();
        expect(row?.history_count).toBeGreaterThanOrEqual(Math.min(last.step, 3) + 1);
        if (last.step === 4) expect(row?.state).toBe('canceled');
        else if (last.step === 3 && last.state !== 'input-required') expect(row?.state).toBe(last.state);
      }
      // No task is in an impossible state: each call was all or nothing.
      for (const row of tasks) {
        const history = (
          db
            .prepare(
              'SELECT message_id FROM a2a_messages WHERE task = (SELECT task FROM a2a_tasks WHERE task_id = ?) ORDER BY position',
            )
            .all(row.task_id) as {
            message_id: string;
          }[]
        ).map((m) => m.message_id);
        expect(history).toHaveLength(row.history_count);
        const prefix = history[0]?.slice(0, -2);
        expect(history).toEqual(SUFFIXES.slice(0, history.length).map((s) => `${prefix}.${s}`));
        const expectedStates: Record<number, string[]> = {
          1: ['submitted'],
          2: ['working'],
          3: ['working'],
          4: ['completed', 'input-required', 'failed', 'canceled'],
        };
        expect(expectedStates[history.length], `${row.task_id}: ${history.length} messages`).toContain(row.state);
      }
      // Live task actors are exactly the non-terminal tasks, and all were restored.
      const live = tasks.filter((r) => ['submitted', 'working', 'input-required', 'auth-required'].includes(r.state));
      expect(broker.liveTaskCount()).toBe(live.length);
      expect(broker.opened.restoredTasks).toBe(live.length);
      // Every party's event log is gapless from 1.
      const parties = db
        .prepare(
          'SELECT party_context_id, party_name, COUNT(*) AS n, MIN(seq) AS lo, MAX(seq) AS hi FROM a2a_events GROUP BY 1, 2',
        )
        .all() as { n: number; lo: number; hi: number }[];
      for (const p of parties) expect([p.lo, p.hi]).toEqual([1, p.n]);
      db.close();
      // The worker comes back under its name and finds its tasks.
      const wrk = await broker.register({ name: 'wrk', contextId: 'workers' });
      const mine = await broker.listTasks({ token: wrk.token, role: 'worker' });
      expect(mine.tasks).toHaveLength(tasks.length);
      await broker.close();
    }
    expect(acked.size).toBeGreaterThan(0);
  });
});
