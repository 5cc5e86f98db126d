import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteQueue } from '../../src/bus/sqlite/queue.js';
import { AuditLog } from '../../src/persistence/audit/sqlite-chain.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import type { WorkEnvelope } from '../../src/protocol/work-envelope.js';
import { type TempDir, fingerprint, runCli, runJson, tempDir } from './helpers.js';

function hop(n: number): WorkEnvelope {
  return {
    kind: 'work',
    headers: { taskId: `task-${n}`, runId: `item-${n}`, hop: n, attempt: 1, idempotencyKey: `hop-${n}` },
    message: { parts: [{ kind: 'text', text: `do ${n}` }] },
  };
}

/** Publishes `n` hops to `role` and dead-letters each (a non-retryable failure) through the real queue. */
async function deadLetters(path: string, role: string, n: number, first = 1): Promise<string[]> {
  const queue = new SqliteQueue({ database: path });
  try {
    const ids: string[] = [];
    for (let i = first; i < first + n; i++) {
      ids.push((await queue.publish(role, hop(i), { idempotencyKey: `${role}-${i}` })).id);
    }
    const leased = await queue.consume(role, { consumer: 'test', visibilityTimeoutMs: 30_000, max: n });
    expect(leased).toHaveLength(n);
    for (const d of leased) {
      const r = await queue.nack(d, {
        error: { type: 'TestsFailed', message: `hop ${d.envelope.headers.hop} failed` },
        retryable: false,
      });
      expect(r.outcome).toBe('dead-letter');
    }
    return ids;
  } finally {
    await queue.close();
  }
}

interface Listed {
  counts: Record<string, number>;
  deadLetters: { id: string; role: string; deliveries: number; lastError: { type: string }; envelope: WorkEnvelope }[];
}

describe('switchboard dlq', () => {
  let tmp: TempDir;
  let path: string;
  beforeEach(() => {
    tmp = tempDir();
    path = tmp.file('bus.db');
  });
  afterEach(() => tmp.cleanup());

  it('lists dead letters of every role or one, read-only', async () => {
    const coding = await deadLetters(path, 'coding', 2);
    const testing = await deadLetters(path, 'testing', 1, 10);
    const before = fingerprint(path);
    const all = await runJson<Listed>(['dlq', 'list', '--db', path]);
    expect(all.code).toBe(0);
    expect(all.json.counts).toEqual({ coding: 2, testing: 1 });
    expect(all.json.deadLetters.map((l) => [l.role, l.id])).toEqual([
      ['coding', coding[0]],
      ['coding', coding[1]],
      ['testing', testing[0]],
    ]);
    expect(all.json.deadLetters[0]).toMatchObject({ deliveries: 1, lastError: { type: 'TestsFailed' } });
    expect(all.json.deadLetters[2]!.envelope.headers.runId).toBe('item-10');

    const table = await runCli(['dlq', 'list', '--db', path, '--role', 'coding']);
    expect(table.code).toBe(0);
    expect(table.stdout).toContain('2 dead letters (coding: 2)');
    expect(table.stdout).toMatch(/deliveries\s+dead at\s+carried\s+last error/);
    expect(table.stdout).toContain('work item item-1 hop 1#1');
    expect(table.stdout).toContain('TestsFailed: hop 2 failed');
    expect(table.stdout).not.toContain('testing');

    const limited = await runCli(['dlq', 'list', '--db', path, '--limit', '1']);
    expect(limited.stdout).toContain('Showing 2 of 3');
    const none = await runCli(['dlq', 'list', '--db', path, '--role', 'devops']);
    expect(none.stdout).toContain('No dead letters for role devops.');
    expect(fingerprint(path)).toBe(before);
  });

  it('replays one dead letter by id, which a consumer then takes with a fresh attempt count', async () => {
    const ids = await deadLetters(path, 'coding', 3);
    const r = await runCli(['dlq', 'replay', '--db', path, '--role', 'coding', '--id', ids[1]!]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Replayed 1 dead letter of role coding');

    const queue = new SqliteQueue({ database: path });
    try {
      const [d, ...more] = await queue.consume('coding', { consumer: 'worker', visibilityTimeoutMs: 30_000, max: 10 });
      expect(more).toHaveLength(0);
      expect(d!.id).toBe(ids[1]);
      expect(d!.envelope).toEqual(hop(2));
      expect(await queue.ack(d!)).toBe(true);
      expect((await queue.stats('coding')).deadLetters).toBe(2);
    } finally {
      await queue.close();
    }
    const left = await runJson<Listed>(['dlq', 'list', '--db', path]);
    expect(left.json.deadLetters.map((l) => l.id)).toEqual([ids[0], ids[2]]);
  });

  it('replays every dead letter of a role in batches, with progress, and all are consumed', async () => {
    const ids = await deadLetters(path, 'coding', 5);
    await deadLetters(path, 'testing', 1, 10);
    const r = await runCli(['dlq', 'replay', '--db', path, '--role', 'coding', '--batch', '2']);
    expect(r.code).toBe(0);
    expect(r.stderr.trimEnd().split('\n')).toEqual(['  replayed 2/5', '  replayed 4/5', '  replayed 5/5']);
    expect(r.stdout).toContain('Replayed 5 dead letters of role coding');

    const queue = new SqliteQueue({ database: path });
    try {
      const got = await queue.consume('coding', { consumer: 'worker', visibilityTimeoutMs: 30_000, max: 10 });
      expect(got.map((d) => d.id).sort()).toEqual([...ids].sort());
      expect(got.every((d) => d.deliveries === 1)).toBe(true);
      expect(await queue.ackMany(got)).toEqual([true, true, true, true, true]);
      // The other role's letter stays dead.
      expect((await queue.stats('testing')).deadLetters).toBe(1);
    } finally {
      await queue.close();
    }
    const again = await runJson(['dlq', 'replay', '--db', path, '--role', 'coding']);
    expect(again).toMatchObject({ code: 0, json: { role: 'coding', replayed: 0, ids: [] } });
  });

  it('refuses an id that is not a dead letter of the role and replays nothing', async () => {
    const ids = await deadLetters(path, 'coding', 2);
    const other = await deadLetters(path, 'testing', 1, 10);
    const before = fingerprint(path);
    const r = await runCli(['dlq', 'replay', '--db', path, '--role', 'coding', '--id', ids[0]!, '--id', other[0]!]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`not dead letters of role coding: ${other[0]}`);
    expect(r.stderr).toContain('nothing was replayed');
    expect(fingerprint(path)).toBe(before);
  });

  it('shows one dead letter in full, of any role or of the one named, read-only', async () => {
    await deadLetters(path, 'coding', 1);
    const [id] = await deadLetters(path, 'testing', 1, 7);
    const before = fingerprint(path);
    const json = await runJson<{ deadLetter: Listed['deadLetters'][number] }>(['dlq', 'show', id!, '--db', path]);
    expect(json.code, json.stderr).toBe(0);
    expect(json.json.deadLetter).toMatchObject({
      id,
      role: 'testing',
      deliveries: 1,
      lastError: { type: 'TestsFailed' },
    });
    expect(json.json.deadLetter.envelope.headers.runId).toBe('item-7');
    const text = await runCli(['dlq', 'show', id!, '--db', path, '--role', 'testing']);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(`Dead letter ${id}`);
    expect(text.stdout).toContain('carried:     work item item-7 hop 7#1');
    expect(text.stdout).toContain('last error:  TestsFailed: hop 7 failed');
    expect(text.stdout).toContain('"text": "do 7"');
    const otherRole = await runCli(['dlq', 'show', id!, '--db', path, '--role', 'coding']);
    expect(otherRole.code).toBe(1);
    expect(otherRole.stderr).toContain(`no dead letter ${id} of role coding`);
    const missing = await runCli(['dlq', 'show', '999999', '--db', path]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no dead letter 999999 in');
    expect(fingerprint(path)).toBe(before);
  });

  it('exits 2 for bad usage, and never creates bus tables in a database without them', async () => {
    await deadLetters(path, 'coding', 1);
    const cases: [string[], string][] = [
      [['dlq', 'list'], '--db PATH is required'],
      [['dlq', '--db', path], "missing subcommand: 'list', 'show ID' or 'replay'"],
      [['dlq', 'show', '--db', path], 'show needs a message id'],
      [['dlq', 'show', '12x', '--db', path], 'show needs a message id'],
      [['dlq', 'show', '1', '--db', path, '--limit', '2'], '--limit is for list'],
      [
        ['dlq', 'list', '--db', 'postgres://u:sekrit@127.0.0.1:1/db'],
        '--db postgres://... needs --bus redis://HOST:PORT',
      ],
      [['dlq', 'purge', '--db', path], "unknown subcommand 'purge'"],
      [['dlq', 'replay', '--db', path], 'replay needs --role R'],
      [['dlq', 'replay', '--db', path, '--role', 'coding', '--id', 'abc'], '--id must be a message id'],
      [['dlq', 'list', '--db', path, '--role', 'bad role!'], '--role:'],
      [['dlq', 'list', '--db', path, '--limit', '0'], '--limit must be a whole number'],
      [['dlq', 'list', '--db', tmp.file('nope.db')], 'the file does not exist'],
    ];
    for (const [args, message] of cases) {
      const r = await runCli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toContain(message);
    }
    // An audit-only database: replay (which opens for writing) creates nothing in it.
    const auditOnly = tmp.file('audit.db');
    const db = openDatabase(auditOnly);
    new AuditLog(db).append({ kind: 'item-created', itemId: 'i', actor: 'c', data: {} });
    db.close();
    const r = await runCli(['dlq', 'replay', '--db', auditOnly, '--role', 'coding']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("holds no work bus (no 'bus' schema)");
    const check = openDatabase(auditOnly, { readonly: true });
    expect(check.prepare("SELECT name FROM sqlite_master WHERE name = 'bus_jobs'").get()).toBeUndefined();
    check.close();
  });
});
