import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import { type Fixture, autoApprove, openFixture } from './helpers.js';

/**
 * A work item's broker task is made by the mirror after the item's creation
 * commit, never before it: a commit that fails leaves no task behind, and
 * `createWorkItem` still returns with the item's task made.
 */
describe("the work item's task", () => {
  let f: Fixture | undefined;
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  function taskCount(path: string): number {
    const side = openDatabase(path);
    try {
      return (side.prepare('SELECT COUNT(*) AS n FROM a2a_tasks').get() as { n: number }).n;
    } finally {
      side.close();
    }
  }

  it('is not made when the creation commit fails, and is made once it commits', async () => {
    f = await openFixture();
    const { coordinator, path } = f;
    // The store's commit fails (as a full disk would): a trigger aborts the item's insert.
    const side = openDatabase(path);
    side.exec(
      "CREATE TRIGGER fail_item BEFORE INSERT ON coord_items BEGIN SELECT RAISE(ABORT, 'the disk is full'); END",
    );
    await expect(coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Add a health endpoint' })).rejects.toThrow(
      /disk is full/,
    );
    await coordinator.mirrored();
    expect(coordinator.list()).toEqual([]);
    expect(taskCount(path)).toBe(0);
    side.exec('DROP TRIGGER fail_item');
    side.close();

    // The next item commits: its task is there when createWorkItem returns, then each hop gets its child task.
    const stop = autoApprove(coordinator);
    const id = await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Add a health endpoint' });
    const taskId = coordinator.get(id)?.taskId;
    expect(taskId).toEqual(expect.any(String));
    expect((await coordinator.settled(id)).state).toBe('completed');
    stop();
    await coordinator.mirrored();
    expect(coordinator.get(id)?.taskId).toBe(taskId);
    expect(coordinator.get(id)?.mirrored).toBe(true);
    expect(taskCount(path)).toBe(1 + coordinator.hops(id).length);
  });

  it('is made for every item of a burst, once each', async () => {
    f = await openFixture();
    const { coordinator, path } = f;
    const stop = autoApprove(coordinator);
    const ids = await Promise.all(
      Array.from({ length: 4 }, (_, i) => coordinator.createWorkItem({ workflow: 'dev-sdlc', input: `item ${i}` })),
    );
    for (const id of ids) expect(coordinator.get(id)?.taskId).toEqual(expect.any(String));
    for (const id of ids) await coordinator.settled(id);
    stop();
    await coordinator.mirrored();
    const taskIds = new Set(ids.map((id) => coordinator.get(id)?.taskId));
    expect(taskIds.size).toBe(4);
    const hops = ids.reduce((n, id) => n + coordinator.hops(id).length, 0);
    expect(taskCount(path)).toBe(4 + hops);
  });
});
