import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createTestDatabase } from '../postgres-availability.js';
import { type Proc, logMessage, sleep, startCli } from './processes.js';

/**
 * What the failover tests share: Coordinators (a leader and standbys) on a
 * PostgreSQL database of the test's own, workers on a Redis bus running the
 * keyed-effects handler (fixtures/keyed-effects-handler.mjs: the demo's
 * scripted agents, each hop's effect applied to a directory that deduplicates
 * by the hop's effect key), and reads of the database.
 */

export const KEYED_HANDLER = new URL('./fixtures/keyed-effects-handler.mjs', import.meta.url).pathname;
export const DEMO_ROLES = ['architect', 'coding', 'testing', 'devops'] as const;

export interface ClusterOptions {
  name: string;
  /** The bus: its URL and prefix. */
  busUrl: string;
  prefix: string;
  leaseMs: number;
  renewMs: number;
  /** Each hop takes this long, plus up to `jitterMs`. */
  hopDelayMs: number;
  jitterMs: number;
  /** What the test's afterEach runs, last first. */
  cleanups: (() => Promise<void> | void)[];
}

export function kill(proc: Proc): Promise<unknown> {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null) return Promise.resolve();
  const exited = new Promise((resolve) => proc.child.once('exit', resolve));
  proc.child.kill('SIGKILL');
  return exited;
}

export const isStandby = (line: string) => logMessage(line)?.startsWith('coordinator standby') === true;

export async function failoverCluster(o: ClusterOptions) {
  const dir = mkdtempSync(join(tmpdir(), `sb-${o.name}-`));
  o.cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const effectsDir = join(dir, 'effects');
  mkdirSync(join(effectsDir, 'keys'), { recursive: true });
  const database = await createTestDatabase(`sb_${o.name.replaceAll('-', '_')}`);
  o.cleanups.push(() => database.drop());
  const bus = ['--bus', o.busUrl, '--bus-prefix', o.prefix];
  const procs: Proc[] = [];
  o.cleanups.push(async () => {
    for (const p of procs) await kill(p);
  });
  let n = 0;
  const coordinator = (): Proc => {
    const p = startCli(`coordinator-${++n}`, [
      'coordinator',
      '--db',
      database.url,
      ...bus,
      '--auto-approve',
      'release-manager',
      '--lease-ms',
      String(o.leaseMs),
      '--renew-ms',
      String(o.renewMs),
      '--log-level',
      'info',
    ]);
    procs.push(p);
    return p;
  };
  const workers = (perRole: number, concurrency: number): Proc[] => {
    const started = DEMO_ROLES.flatMap((role) =>
      Array.from({ length: perRole }, (_, i) =>
        startCli(
          `worker-${role}-${i + 1}`,
          [
            'worker',
            ...bus,
            '--role',
            role,
            '--handler',
            KEYED_HANDLER,
            '--concurrency',
            String(concurrency),
            '--log-level',
            'warn',
          ],
          { SB_EFFECTS_DIR: effectsDir, SB_HOP_DELAY_MS: String(o.hopDelayMs), SB_HOP_JITTER_MS: String(o.jitterMs) },
        ),
      ),
    );
    procs.push(...started);
    return started;
  };
  const sql = new pg.Client({ connectionString: database.url });
  await sql.connect();
  o.cleanups.push(() => sql.end());
  /** A query's rows, or none while the Coordinator has not made its tables yet. */
  const rows = async <T>(text: string, values: unknown[] = []): Promise<T[]> => {
    try {
      return (await sql.query(text, values)).rows as T[];
    } catch (error) {
      if ((error as { code?: string }).code === '42P01') return [];
      throw error;
    }
  };
  const count = async (text: string) => Number((await rows<{ n: string }>(text))[0]?.n ?? 0);
  const byState = async () =>
    JSON.stringify(await rows('SELECT state, count(*)::int AS n FROM coord_items GROUP BY state ORDER BY state'));
  const waitFor = async (what: string, done: () => Promise<boolean>, timeoutMs: number, tell: () => unknown) => {
    const deadline = Date.now() + timeoutMs;
    while (!(await done())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${String(await tell())}`);
      await sleep(50);
    }
  };
  /** The effects applied: one record per application, and the keys the directory holds. */
  const applications = () =>
    readFileSync(join(effectsDir, 'applications.log'), 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { key: string; field: string; fresh: boolean });
  /** When each hop's handler returned (its result about to go out), by its effect key. */
  const returns = () => {
    let text = '';
    try {
      text = readFileSync(join(effectsDir, 'returns.log'), 'utf8');
    } catch {
      return [];
    }
    return text
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { key: string; at: number });
  };
  return { database, bus, coordinator, workers, sql, rows, count, byState, waitFor, applications, returns };
}
