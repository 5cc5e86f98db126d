import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Coordinator, createCoordinator } from '../../src/actors/coordinator/coordinator.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import { devSdlc, tempDir, until } from './helpers.js';

/** One Coordinator per file: a second one is refused while the first lives, and takes over once it is gone. */
describe('the Coordinator that owns a file', () => {
  const open: Coordinator[] = [];
  let dir: string | undefined;
  afterEach(async () => {
    for (const c of open.splice(0)) await c.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  async function coordinator(path: string, ownership?: { heartbeatMs?: number; staleMs?: number }) {
    const c = await createCoordinator({ path, definitions: [devSdlc], ...(ownership ? { ownership } : {}) });
    open.push(c);
    return c;
  }

  function setOwner(path: string, row: { token: string; pid: number; host: string; heartbeatAt: number }) {
    const db = openDatabase(path);
    try {
      db.prepare(
        'INSERT OR REPLACE INTO coord_owner (id, token, pid, host, since, heartbeat_at) VALUES (1, ?, ?, ?, ?, ?)',
      ).run(row.token, row.pid, row.host, row.heartbeatAt, row.heartbeatAt);
    } finally {
      db.close();
    }
  }

  function owner(path: string) {
    const db = openDatabase(path, { readonly: true });
    try {
      return db.prepare('SELECT pid, host FROM coord_owner').all();
    } finally {
      db.close();
    }
  }

  it('refuses a second Coordinator on a file a live one owns, naming it; the first goes on', async () => {
    dir = tempDir();
    const path = join(dir, 'switchboard.db');
    const first = await coordinator(path);
    // Refused by whichever owner is checked first: the Coordinator's, or its broker's (one broker per file).
    await expect(coordinator(path)).rejects.toMatchObject({
      code: expect.stringMatching(/^(COORD|BROKER)_FILE_OWNED$/),
      message: expect.stringContaining(`pid ${process.pid}`),
    });
    const id = await first.createWorkItem({ workflow: 'dev-sdlc', input: 'still mine' });
    expect((await first.getItem(id))?.state).toBe('running');
    // Closing gives the file up: the next one opens it.
    await first.close();
    open.splice(open.indexOf(first), 1);
    expect(owner(path)).toEqual([]);
    const second = await coordinator(path);
    expect((await second.getItem(id))?.state).toBe('running');
    expect(owner(path)).toEqual([{ pid: process.pid, host: expect.any(String) }]);
  });

  it('takes over at once from an owner whose process is gone, and from another host only once its heartbeat is stale', async () => {
    dir = tempDir();
    const path = join(dir, 'switchboard.db');
    const first = await coordinator(path);
    await first.close();
    open.splice(0);
    // A process of this host that has exited.
    const gone = spawnSync(process.execPath, ['-e', '0']).pid!;
    const { hostname } = await import('node:os');
    setOwner(path, { token: 'dead-one', pid: gone, host: hostname(), heartbeatAt: Date.now() });
    const second = await coordinator(path);
    await second.close();
    open.splice(0);
    // Another host: its process cannot be checked, only its heartbeat.
    setOwner(path, { token: 'elsewhere', pid: 1, host: 'another-host', heartbeatAt: Date.now() });
    await expect(coordinator(path, { staleMs: 5_000 })).rejects.toMatchObject({ code: 'COORD_FILE_OWNED' });
    setOwner(path, { token: 'elsewhere', pid: 1, host: 'another-host', heartbeatAt: Date.now() - 6_000 });
    await coordinator(path, { staleMs: 5_000 });
    expect(owner(path)).toEqual([{ pid: process.pid, host: hostname() }]);
  });

  it('a Coordinator whose file was taken over stops', async () => {
    dir = tempDir();
    const path = join(dir, 'switchboard.db');
    const first = await coordinator(path, { heartbeatMs: 20 });
    let completed = false;
    first.statuses$.subscribe({ complete: () => (completed = true) });
    setOwner(path, { token: 'usurper', pid: 1, host: 'another-host', heartbeatAt: Date.now() });
    await until(() => completed, 5_000, 'the first Coordinator to stop');
    await expect(first.createWorkItem({ workflow: 'dev-sdlc', input: 'x' })).rejects.toMatchObject({
      code: 'COORD_CLOSED',
    });
    // It left the usurper's row alone.
    expect(owner(path)).toEqual([{ pid: 1, host: 'another-host' }]);
  });
});
