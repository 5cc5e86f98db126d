import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, postgresGate } from '../postgres-availability.js';
import { demoDatabase, runCli, startConsole, tempDir } from './helpers.js';

// `switchboard console users add/list/revoke` on a real file and a real
// PostgreSQL database, and a console that takes the approver from a user's
// token: the name is the token's, a revoked token is refused.

const { runPostgres } = await postgresGate();

let tmp: ReturnType<typeof tempDir>;
let db: string;
beforeAll(async () => {
  tmp = tempDir();
  db = await demoDatabase(tmp.dir);
}, 120_000);
afterAll(() => tmp?.cleanup());

function tokenOf(stdout: string): string {
  const match = /^([0-9a-f]{64})$/m.exec(stdout);
  if (match === null) throw new Error(`no token in: ${stdout}`);
  return match[1] as string;
}

/** The CLI's add, list and revoke on one database (`--db` value), checked through the CLI alone. */
async function addListRevoke(dbArg: string): Promise<{ alice: string; bob: string }> {
  const added = await runCli(['console', 'users', 'add', 'alice', '--db', dbArg]);
  expect(added.code, added.stderr).toBe(0);
  const alice = tokenOf(added.stdout);
  const bobAdded = await runCli(['console', 'users', 'add', 'bob', '--db', dbArg]);
  expect(bobAdded.code, bobAdded.stderr).toBe(0);
  const bob = tokenOf(bobAdded.stdout);
  expect(bob).not.toBe(alice);

  // A second add of a live name is refused, and changes nothing.
  const again = await runCli(['console', 'users', 'add', 'alice', '--db', dbArg]);
  expect(again.code).toBe(1);
  expect(again.stderr).toContain('alice already holds a token: revoke it first');

  const listed = await runCli(['console', 'users', 'list', '--db', dbArg, '--json']);
  expect(listed.code, listed.stderr).toBe(0);
  const users = (JSON.parse(listed.stdout) as { users: { name: string; revokedAt: number | null }[] }).users;
  expect(users.map((u) => [u.name, u.revokedAt])).toEqual([
    ['alice', null],
    ['bob', null],
  ]);
  // Never a token nor its hash in a listing.
  const table = await runCli(['console', 'users', 'list', '--db', dbArg]);
  expect(table.stdout).toMatch(/alice\s+\S.*live/);
  for (const out of [listed.stdout, table.stdout]) {
    expect(out).not.toContain(alice);
    expect(out).not.toContain(createHash('sha256').update(alice).digest('hex'));
  }

  const revoked = await runCli(['console', 'users', 'revoke', 'bob', '--db', dbArg]);
  expect(revoked.code, revoked.stderr).toBe(0);
  const twice = await runCli(['console', 'users', 'revoke', 'bob', '--db', dbArg]);
  expect(twice.code).toBe(1);
  expect(twice.stderr).toContain('no console user bob with a live token');
  const unknown = await runCli(['console', 'users', 'revoke', 'nobody', '--db', dbArg]);
  expect(unknown.code).toBe(1);
  const after = JSON.parse((await runCli(['console', 'users', 'list', '--db', dbArg, '--json'])).stdout) as {
    users: { name: string; revokedAt: number | null }[];
  };
  expect(after.users.find((u) => u.name === 'bob')?.revokedAt).toEqual(expect.any(Number));
  return { alice, bob };
}

describe('switchboard console users', () => {
  it('adds (a token printed once, stored as its SHA-256), lists and revokes on a SQLite file', async () => {
    const { alice, bob } = await addListRevoke(db);
    const d = new Database(db, { readonly: true });
    try {
      const rows = d.prepare('SELECT name, token_sha256 FROM coord_console_users ORDER BY name').all() as {
        name: string;
        token_sha256: string;
      }[];
      expect(rows).toEqual([
        { name: 'alice', token_sha256: createHash('sha256').update(alice).digest('hex') },
        { name: 'bob', token_sha256: createHash('sha256').update(bob).digest('hex') },
      ]);
      const dump = JSON.stringify(d.prepare('SELECT * FROM coord_console_users').all());
      expect(dump).not.toContain(alice);
    } finally {
      d.close();
    }
  }, 120_000);

  it('refuses a bad name, a missing --db, an unknown verb (exit 2), changing nothing', async () => {
    for (const args of [
      ['console', 'users', 'add', 'no spaces', '--db', db],
      ['console', 'users', 'add', '--db', db],
      ['console', 'users', 'add', 'carol'],
      ['console', 'users', 'rename', 'carol', '--db', db],
      ['console', 'users', 'list', 'carol', '--db', db],
    ]) {
      const r = await runCli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toContain('Usage: switchboard console users');
    }
    const missing = await runCli(['console', 'users', 'list', '--db', `${tmp.dir}/none.db`]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('does not exist');
  }, 120_000);

  it("a console takes the approver from a user's token; a revoked token and a stranger's name are refused", async () => {
    const added = await runCli(['console', 'users', 'add', 'dana', '--db', db]);
    const dana = tokenOf(added.stdout);
    const erin = tokenOf((await runCli(['console', 'users', 'add', 'erin', '--db', db])).stdout);
    const server = await startConsole(['--db', db]);
    try {
      const me = (token: string) =>
        fetch(new URL('/api/me', server.url), { headers: { authorization: `Bearer ${token}` } });
      expect(await (await me(dana)).json()).toEqual({ user: 'dana', shared: false });
      expect(await (await me(server.token)).json()).toEqual({ user: null, shared: true });
      expect((await me('0'.repeat(64))).status).toBe(401);

      const approve = (token: string, body: Record<string, unknown>) =>
        fetch(new URL('/api/approvals', server.url), {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      // A user's token names its user: another name in the body is refused before anything is read.
      const posing = await approve(dana, { itemId: 'x', approver: 'release-manager', decision: 'approve' });
      expect(posing.status).toBe(403);
      expect(((await posing.json()) as { error: string }).error).toContain("your token is dana's");
      // The shared token must name its approver.
      const nameless = await approve(server.token, { itemId: 'x', decision: 'approve' });
      expect(nameless.status).toBe(400);
      // With her own token, dana reaches the item check (the demo's items are completed: 409, not 401).
      const items = (await (await fetch(new URL('/api/items', server.url))).json()) as { items: { id: string }[] };
      const reached = await approve(dana, { itemId: items.items[0]?.id, decision: 'approve' });
      expect(reached.status).toBe(409);

      // Revoked while the console runs: refused from the next action on.
      expect((await runCli(['console', 'users', 'revoke', 'erin', '--db', db])).code).toBe(0);
      const refused = await approve(erin, { itemId: items.items[0]?.id, decision: 'approve' });
      expect(refused.status).toBe(401);
      expect(((await refused.json()) as { error: string }).error).toContain('a revoked token is refused');
      expect((await me(erin)).status).toBe(401);
    } finally {
      await server.stop();
    }
  }, 120_000);
});

describe.runIf(runPostgres)('switchboard console users on PostgreSQL', () => {
  it("adds, lists and revokes in the Coordinator's PostgreSQL database (migrating its schema)", async () => {
    const database = await createTestDatabase('sb_console_users');
    try {
      await addListRevoke(database.url);
    } finally {
      await database.drop();
    }
  }, 120_000);
});
