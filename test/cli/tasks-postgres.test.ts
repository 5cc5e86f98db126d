import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresGate, withPassword } from '../postgres-availability.js';
import { redisGate } from '../redis-availability.js';
import { coordinatorTablesOf, inSnapshot, openPostgresForReading } from '../../src/cli/read-postgres.js';
import { openPgPool } from '../../src/persistence/kernel/postgres.js';
import { runCli } from './helpers.js';
import { type PostgresWithItems, postgresOfNewerSchema, postgresWithItems } from './postgres-coordinator.js';

/**
 * `switchboard tasks list|show --db postgres://...`: the A2A view derived
 * from the item and hop rows a real Coordinator on PostgreSQL wrote (there
 * is no broker file), read by the real CLI; usage errors, an unreachable
 * server and a newer schema; the URL's password in no output.
 */

const { runPostgres } = await postgresGate();
const { runRedis } = await redisGate();

interface ListedTask {
  id: string;
  state: string;
  contextId: string | null;
  requesterName: string;
  agentName: string;
  parentTaskId: string | null;
  childTaskIds: string[];
  link: { kind: string; itemId: string; hop?: number; stage?: string } | null;
}

describe('switchboard tasks --db postgres:// (usage and reachability)', () => {
  it('--history with a URL is a usage error (exit 2) that says the rows keep no messages', async () => {
    const r = await runCli([
      'tasks',
      'show',
      'x',
      '--db',
      'postgres://postgres:sekrit@127.0.0.1:1/none',
      '--history',
      '2',
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--history reads the broker');
    expect(r.stderr).toContain('a PostgreSQL database does not keep');
    expect(r.stderr).not.toContain('sekrit');
  });

  it('exits 1 with a clear message when PostgreSQL does not answer, the password nowhere', async () => {
    const r = await runCli(['tasks', 'list', '--db', 'postgres://postgres:sekrit@127.0.0.1:1/none']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('switchboard tasks');
    expect(r.stderr).toContain('cannot reach PostgreSQL');
    expect(r.stderr).toContain('postgres://postgres@127.0.0.1:1/none');
    expect(r.stderr).not.toContain('sekrit');
    expect(r.stdout).toBe('');
  });

  it.runIf(runPostgres)(
    'refuses tables of a newer schema (exit 2) with the message a file gets, items too',
    async () => {
      const newer = await postgresOfNewerSchema();
      try {
        // `items` refuses them the same way (the read commands share one opening of the database).
        for (const command of ['tasks', 'items']) {
          const r = await runCli([command, 'list', '--db', withPassword(newer.url, 'sekrit')]);
          expect(r.code, `${command}: ${r.stderr}`).toBe(2);
          expect(r.stderr).toContain(`switchboard ${command}: `);
          expect(r.stderr).toContain('newer than this switchboard supports');
          expect(r.stderr).toContain('upgrade switchboard');
          expect(r.stderr).not.toContain('sekrit');
        }
      } finally {
        await newer.drop();
      }
    },
  );
});

describe.runIf(runPostgres && runRedis)('switchboard tasks --db postgres:// (a Coordinator run on it)', () => {
  let pg: PostgresWithItems;
  beforeAll(async () => {
    pg = await postgresWithItems(2);
  }, 150_000);
  afterAll(async () => {
    await pg?.cleanup();
  });

  it('lists each work item as a task with its hops as child tasks, linked both ways', async () => {
    const r = await runCli(['tasks', 'list', '--db', pg.url, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const { total, tasks } = JSON.parse(r.stdout) as { total: number; tasks: ListedTask[] };
    expect(total).toBe(tasks.length);
    const itemTasks = tasks.filter((t) => t.link?.kind === 'work-item');
    expect(itemTasks.map((t) => t.link!.itemId).sort()).toEqual([...pg.itemIds].sort());
    for (const item of itemTasks) {
      expect(item.state).toBe('completed');
      expect(item.requesterName).toBe('edge');
      expect(item.agentName).toBe('coordinator');
      expect(item.parentTaskId).toBeNull();
      expect(item.contextId).toBeNull();
      expect(item.childTaskIds.length).toBeGreaterThan(0);
      for (const childId of item.childTaskIds) {
        const child = tasks.find((t) => t.id === childId);
        expect(child?.parentTaskId).toBe(item.id);
        expect(child?.link?.kind).toBe('hop');
        expect(child?.link?.itemId).toBe(item.link!.itemId);
        expect(child?.requesterName).toBe('coordinator');
      }
    }
    const hops = tasks.filter((t) => t.link?.kind === 'hop');
    expect(hops.length + itemTasks.length).toBe(total);
    expect(r.stdout + r.stderr).not.toContain(pg.secret);

    const text = await runCli(['tasks', 'list', '--db', pg.url]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(`work item ${pg.itemIds[0]}`);
    expect(text.stdout).toContain('edge');
    expect(text.stdout + text.stderr).not.toContain(pg.secret);
  });

  it('filters by state and limits, counting all that match', async () => {
    const r = await runCli(['tasks', 'list', '--db', pg.url, '--state', 'completed', '--limit', '1', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const { total, tasks } = JSON.parse(r.stdout) as { total: number; tasks: ListedTask[] };
    expect(tasks).toHaveLength(1);
    expect(total).toBeGreaterThan(2);
    const none = await runCli(['tasks', 'list', '--db', pg.url, '--state', 'rejected']);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toBe('No tasks in state rejected.\n');
  });

  it('shows a work item task with its hops, and a hop task with its parent; no history', async () => {
    const listed = JSON.parse((await runCli(['tasks', 'list', '--db', pg.url, '--json'])).stdout) as {
      tasks: ListedTask[];
    };
    const item = listed.tasks.find((t) => t.link?.kind === 'work-item')!;
    const shown = await runCli(['tasks', 'show', item.id, '--db', pg.url, '--json']);
    expect(shown.code, shown.stderr).toBe(0);
    const json = JSON.parse(shown.stdout) as {
      task: Record<string, unknown>;
      childTaskIds: string[];
      workItem: { id: string; state: string };
      hops: { taskId: string | null; id: string }[];
    };
    expect(Object.keys(json.task).sort()).toEqual([
      'agentName',
      'createdAt',
      'id',
      'requesterName',
      'state',
      'updatedAt',
    ]);
    expect(json.task.id).toBe(item.id);
    expect(json.workItem.id).toBe(item.link!.itemId);
    expect(json.workItem.state).toBe('completed');
    expect(json.hops.length).toBe(json.childTaskIds.length);

    const text = await runCli(['tasks', 'show', item.id, '--db', pg.url]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(`Task ${item.id}`);
    expect(text.stdout).toContain(`work item:  ${item.link!.itemId}`);
    expect(text.stdout).toContain('History: not kept');

    const hopId = item.childTaskIds[0]!;
    const hop = await runCli(['tasks', 'show', hopId, '--db', pg.url, '--json']);
    expect(hop.code, hop.stderr).toBe(0);
    const hopJson = JSON.parse(hop.stdout) as { parentTaskId: string; link: { kind: string }; hops: unknown[] };
    expect(hopJson.parentTaskId).toBe(item.id);
    expect(hopJson.link.kind).toBe('hop');
    expect(hopJson.hops).toHaveLength(1);

    const missing = await runCli(['tasks', 'show', 'no-such-task', '--db', pg.url]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no task no-such-task in postgres://postgres@');
    for (const r of [shown, text, hop, missing]) expect(r.stdout + r.stderr).not.toContain(pg.secret);
  });

  it('reads in one snapshot: a row committed meanwhile is not seen inside it (REPEATABLE READ)', async () => {
    const opened = await openPostgresForReading(pg.url, 'test');
    const writer = await openPgPool(pg.url, { max: 1 });
    const id = pg.itemIds[0]!;
    try {
      const original = (await (await coordinatorTablesOf(opened)).readItem(id))!.stage;
      const seen = await inSnapshot(opened, async (store) => {
        const first = (await store.readItem(id))!.stage;
        await writer.query('UPDATE coord_items SET stage = $1 WHERE id = $2', ['snapshot-test', id]);
        const second = (await store.readItem(id))!.stage;
        return { first, second };
      });
      expect(seen).toEqual({ first: original, second: original });
      const after = await inSnapshot(opened, (store) => store.readItem(id));
      expect(after!.stage).toBe('snapshot-test');
      await writer.query('UPDATE coord_items SET stage = $1 WHERE id = $2', [original, id]);
    } finally {
      await writer.end();
      await opened.close();
    }
  });
});
