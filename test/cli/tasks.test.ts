import { copyFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBroker } from '../../src/actors/broker/broker.js';
import type { HopRecord, ItemRecord } from '../../src/workflow/records.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import type { Task } from '../../src/protocol/task.js';
import { type CoordinatorDb, buildCoordinatorDb } from './coordinator-db.js';
import { type TempDir, fingerprint, runCli, runJson, tempDir } from './helpers.js';

interface ListedTask {
  id: string;
  state: string;
  requesterName: string;
  agentName: string;
  parentTaskId: string | null;
  childTaskIds: string[];
  link: { kind: string; itemId: string; hop?: number; stage?: string } | null;
}

describe('switchboard tasks', () => {
  let tmp: TempDir;
  let coord: CoordinatorDb;
  beforeAll(async () => {
    tmp = tempDir();
    coord = await buildCoordinatorDb(tmp.dir);
  }, 30_000);
  afterAll(() => tmp.cleanup());

  it("lists every task with the Coordinator's parent/child links", async () => {
    const before = fingerprint(coord.path);
    const { code, json } = await runJson<{ total: number; tasks: ListedTask[] }>(['tasks', 'list', '--db', coord.path]);
    expect(code).toBe(0);
    const hopCount = coord.items.reduce((n, i) => n + i.hops, 0);
    // One task per work item and one child task per hop.
    expect(json.total).toBe(coord.items.length + hopCount);
    const byId = new Map(json.tasks.map((t) => [t.id, t]));
    for (const item of coord.items) {
      const hops = coord.hops.get(item.id)!;
      const itemTask = byId.get(item.taskId!)!;
      expect(itemTask).toMatchObject({
        state: 'completed',
        parentTaskId: null,
        link: { kind: 'work-item', itemId: item.id },
        childTaskIds: hops.map((h) => h.taskId),
      });
      for (const hop of hops) {
        expect(byId.get(hop.taskId!)).toMatchObject({
          parentTaskId: item.taskId,
          agentName: hop.role,
          link: { kind: 'hop', itemId: item.id, hop: hop.hop, stage: hop.stage },
        });
      }
    }
    const failed = await runJson<{ total: number; tasks: ListedTask[] }>([
      'tasks',
      'list',
      '--db',
      coord.path,
      '--state',
      'failed',
    ]);
    // The testing hop that failed once in each item.
    expect(failed.json.total).toBe(2);
    expect(failed.json.tasks.every((t) => t.state === 'failed' && t.link?.stage === 'testing')).toBe(true);

    const table = await runCli(['tasks', 'list', '--db', coord.path, '--limit', '3']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^task\s+state\s+requester\s+worker\s+parent\s+for\s+updated/);
    expect(table.stdout).toContain(`work item ${coord.items[0]!.id}`);
    expect(table.stdout).toContain(`Showing 3 of ${json.total}`);
    expect(fingerprint(coord.path)).toBe(before);
  });

  it("shows a work item's task with its hops, and a hop's task with its parent", async () => {
    const item: ItemRecord = coord.items[0]!;
    const hops: HopRecord[] = coord.hops.get(item.id)!;
    const shown = await runJson<{ task: Task; childTaskIds: string[]; workItem: ItemRecord; hops: HopRecord[] }>([
      'tasks',
      'show',
      item.taskId!,
      '--db',
      coord.path,
    ]);
    expect(shown.code).toBe(0);
    expect(shown.json.task.id).toBe(item.taskId);
    expect(shown.json.workItem.id).toBe(item.id);
    expect(shown.json.hops.map((h) => h.id)).toEqual(hops.map((h) => h.id));
    expect(shown.json.childTaskIds).toEqual(hops.map((h) => h.taskId));

    const text = await runCli(['tasks', 'show', item.taskId!, '--db', coord.path]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`Task ${item.taskId}`);
    expect(text.stdout).toContain(`work item:  ${item.id}: dev-sdlc@1, completed, ${item.hops} hops`);
    expect(text.stdout).toContain(`Hops (${hops.length}; ${hops.length} with a child task)`);
    expect(text.stdout).toContain('user edge: Add rate limiting to the public API');

    const failedHop = hops.find((h) => h.state === 'failed')!;
    const hopText = await runCli(['tasks', 'show', failedHop.taskId!, '--db', coord.path, '--history', '1']);
    expect(hopText.code).toBe(0);
    expect(hopText.stdout).toContain(`parent:     ${item.taskId}`);
    expect(hopText.stdout).toContain(`for:        hop ${failedHop.hop} testing`);
    expect(hopText.stdout).toContain('error TestsFailed');
    expect(hopText.stdout).toContain('History (1 message)');

    const missing = await runCli(['tasks', 'show', 'no-such-task', '--db', coord.path]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no task no-such-task');
  });

  it('lists the tasks of a broker-only database, without links', async () => {
    const path = tmp.file('broker.db');
    const broker = createBroker({ path });
    const a = await broker.register({ name: 'alice', contextId: 'ctx', kind: 'subagent' });
    const b = await broker.register({ name: 'bob', contextId: 'ctx', kind: 'subagent' });
    const { task } = await broker.send({
      token: a.token,
      to: b.agentId,
      message: { parts: [{ kind: 'text', text: 'hi' }] },
    });
    await broker.close();
    const { code, json } = await runJson<{ total: number; tasks: ListedTask[] }>(['tasks', 'list', '--db', path]);
    expect(code).toBe(0);
    expect(json.tasks).toEqual([
      expect.objectContaining({
        id: task.id,
        requesterName: 'alice',
        agentName: 'bob',
        parentTaskId: null,
        childTaskIds: [],
        link: null,
      }),
    ]);
  });

  it('still lists the tasks, without links and saying why, when the Coordinator tables cannot be read', async () => {
    const path = tmp.file('damaged.db');
    copyFileSync(coord.path, path);
    const db = openDatabase(path);
    db.exec('DROP TABLE coord_usage');
    db.close();
    const { code, json, stderr } = await runJson<{ total: number; tasks: ListedTask[] }>([
      'tasks',
      'list',
      '--db',
      path,
    ]);
    expect(code).toBe(0);
    expect(stderr).toContain("cannot read the Coordinator's tables (no such table: coord_usage)");
    expect(json.tasks).toHaveLength(json.total);
    expect(json.tasks.every((t) => t.link === null && t.parentTaskId === null)).toBe(true);
  });

  it('exits 2 for bad usage', async () => {
    for (const [args, message] of [
      [['tasks', 'list'], '--db PATH is required'],
      [['tasks', 'show', '--db', coord.path], 'show needs a task id'],
      [['tasks', 'list', '--db', coord.path, '--state', 'sleeping'], '--state must be one of submitted'],
      [['tasks', 'list', '--db', coord.path, '--history', '2'], '--history is for show'],
      [['tasks', 'drop', '--db', coord.path], "unknown subcommand 'drop'"],
      [['tasks', 'list', '--db', tmp.file('none.db')], 'the file does not exist'],
    ] as [string[], string][]) {
      const r = await runCli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toContain(message);
    }
  });
});
