import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createBroker } from '../../src/actors/broker/broker.js';
import { BrokerOwnershipError, ownerLockHeld, ownerLockPath } from '../../src/persistence/a2a/owner.js';
import { tempDir } from './helpers.js';

const CHILD = fileURLToPath(new URL('./fixtures/owner-child.mjs', import.meta.url));

interface ChildLine {
  ready?: boolean;
  won?: boolean;
  refused?: boolean;
  pid: number;
  code?: string;
  message?: string;
  details?: Record<string, unknown>;
  opened?: { tookOverFrom?: { pid: number } };
}

/** A broker process driven by lines: `go` makes it open the file. */
class OwnerChild {
  readonly child: ChildProcessWithoutNullStreams;
  private readonly queue: ChildLine[] = [];
  private waiting: ((line: ChildLine) => void) | undefined;
  readonly exited: Promise<unknown>;

  constructor(path: string) {
    this.child = spawn(process.execPath, [CHILD, path], { stdio: 'pipe' });
    this.exited = new Promise((resolve) => this.child.once('exit', resolve));
    createInterface({ input: this.child.stdout }).on('line', (text) => {
      const line = JSON.parse(text) as ChildLine;
      if (this.waiting) {
        const w = this.waiting;
        this.waiting = undefined;
        w(line);
      } else this.queue.push(line);
    });
    this.child.stdin.on('error', () => {});
  }

  next(): Promise<ChildLine> {
    const line = this.queue.shift();
    if (line) return Promise.resolve(line);
    return new Promise((resolve) => {
      this.waiting = resolve;
    });
  }

  go(): void {
    this.child.stdin.write('go\n');
  }

  async end(): Promise<void> {
    this.child.stdin.end();
    await this.exited;
  }
}

/** A broker process that has opened `path` (it won the file). */
async function ownerOf(path: string): Promise<{ owner: OwnerChild; won: ChildLine }> {
  const owner = new OwnerChild(path);
  expect((await owner.next()).ready).toBe(true);
  owner.go();
  const won = await owner.next();
  expect(won.won).toBe(true);
  return { owner, won };
}

/** The refusal of a broker opened on `path` (fails the test if it opens). */
function refusalOf(path: string): BrokerOwnershipError {
  let refusal: unknown;
  try {
    createBroker({ path });
  } catch (error) {
    refusal = error;
  }
  expect(refusal).toBeInstanceOf(BrokerOwnershipError);
  return refusal as BrokerOwnershipError;
}

const t = tempDir('switchboard-owner-');
afterAll(() => t.cleanup());

describe('a broker owns its file', () => {
  it('refuses a second broker in this process while the first is open, then opens after close', async () => {
    const path = join(t.dir, 'same-process.db');
    const first = createBroker({ path, socket: '/tmp/x.sock' });
    const error = refusalOf(path);
    expect(error.code).toBe('BROKER_FILE_OWNED');
    expect(error.details).toMatchObject({ pid: process.pid, socket: '/tmp/x.sock', path });
    expect(error.message).toContain(`pid ${process.pid}`);
    expect(error.message).toContain('unix:/tmp/x.sock');
    // The refused broker changed nothing: the first still serves.
    const a = await first.register({ contextId: 'c', name: 'a' });
    expect(a.agentId).toBeTruthy();
    await first.close();
    const second = createBroker({ path });
    expect(second.opened.tookOverFrom).toBeUndefined();
    await second.close();
    const db = new Database(path, { readonly: true });
    expect(db.prepare('SELECT COUNT(*) AS n FROM a2a_owner').get()).toEqual({ n: 0 });
    db.close();
  });

  it('refuses while another process owns the file; takes it over at once after kill -9', async () => {
    const path = join(t.dir, 'other-process.db');
    const { owner, won } = await ownerOf(path);
    expect(() => createBroker({ path })).toThrow(BrokerOwnershipError);
    try {
      createBroker({ path });
    } catch (error) {
      expect((error as BrokerOwnershipError).details).toMatchObject({ pid: won.pid, socket: '/run/example.sock' });
    }
    owner.child.kill('SIGKILL');
    await owner.exited;
    const broker = createBroker({ path });
    expect(broker.opened.tookOverFrom?.pid).toBe(won.pid);
    await broker.close();
  });

  it('an owner whose host name is not ours (another container on the volume) is live while its lock is held, and taken over at once after kill -9', async () => {
    const path = join(t.dir, 'other-host.db');
    const { owner } = await ownerOf(path);
    // Its pid means nothing here: only its lock on the side file says it lives.
    const side = new Database(path);
    side.prepare("UPDATE a2a_owner SET host = 'elsewhere', pid = 1 WHERE id = 1").run();
    side.close();
    expect(ownerLockHeld(path)).toBe(true);
    expect(refusalOf(path).details).toMatchObject({ host: 'elsewhere', socket: '/run/example.sock' });
    owner.child.kill('SIGKILL');
    await owner.exited;
    expect(ownerLockHeld(path)).toBe(false);
    const broker = createBroker({ path });
    expect(broker.opened.tookOverFrom).toMatchObject({ host: 'elsewhere', pid: 1 });
    // The new owner holds the lock in turn, and gives it up on close.
    expect(ownerLockHeld(path)).toBe(true);
    await broker.close();
    expect(ownerLockHeld(path)).toBe(false);
  });

  it('an owner row from another host with no lock file (a broker of an older version) is taken as live', async () => {
    const path = join(t.dir, 'other-host-old.db');
    await createBroker({ path }).close();
    rmSync(ownerLockPath(path), { force: true });
    const side = new Database(path);
    side
      .prepare(
        "INSERT INTO a2a_owner (id, token, pid, host, process_start, since, socket) VALUES (1, 'old', 7, 'elsewhere', '', '2026-01-01T00:00:00.000Z', NULL)",
      )
      .run();
    side.close();
    expect(ownerLockHeld(path)).toBeUndefined();
    expect(() => createBroker({ path })).toThrow(BrokerOwnershipError);
  });

  it('of two brokers racing to open one file, exactly one wins (50 times)', async () => {
    for (let round = 0; round < 50; round++) {
      const path = join(t.dir, `race-${round}.db`);
      const pair = [new OwnerChild(path), new OwnerChild(path)];
      await Promise.all(pair.map((c) => c.next()));
      for (const c of pair) c.go();
      const results = await Promise.all(pair.map((c) => c.next()));
      const winners = results.filter((r) => r.won);
      const losers = results.filter((r) => r.refused);
      expect(winners, `round ${round}: ${JSON.stringify(results)}`).toHaveLength(1);
      expect(losers).toHaveLength(1);
      expect(losers[0]?.code).toBe('BROKER_FILE_OWNED');
      expect(losers[0]?.details?.pid).toBe(winners[0]?.pid);
      await Promise.all(pair.map((c) => c.end()));
    }
  }, 300_000);
});
