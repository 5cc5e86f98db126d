import { afterEach, describe, expect, it } from 'vitest';
import type { ItemStatus } from '../../src/actors/coordinator/types.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import { type Fixture, autoApprove, openFixture, until } from './helpers.js';

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
    const restore = await f.storage.sabotage('coord_items', 'the disk is full');
    await expect(coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Add a health endpoint' })).rejects.toThrow(
      /disk is full/,
    );
    await coordinator.mirrored();
    expect(await coordinator.listItems()).toEqual([]);
    expect(taskCount(path)).toBe(0);
    await restore();

    // The next item commits: its task is there when createWorkItem returns, then each hop gets its child task.
    const stop = autoApprove(coordinator);
    const id = await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Add a health endpoint' });
    const taskId = (await coordinator.getItem(id))?.taskId;
    expect(taskId).toEqual(expect.any(String));
    expect((await coordinator.settled(id)).state).toBe('completed');
    stop();
    await coordinator.mirrored();
    expect((await coordinator.getItem(id))?.taskId).toBe(taskId);
    expect((await coordinator.getItem(id))?.mirrored).toBe(true);
    expect(taskCount(path)).toBe(1 + (await coordinator.listHops(id)).length);
  });

  it('is made for every item of a burst, once each', async () => {
    f = await openFixture();
    const { coordinator, path } = f;
    const stop = autoApprove(coordinator);
    const ids = await Promise.all(
      Array.from({ length: 4 }, (_, i) => coordinator.createWorkItem({ workflow: 'dev-sdlc', input: `item ${i}` })),
    );
    for (const id of ids) expect((await coordinator.getItem(id))?.taskId).toEqual(expect.any(String));
    for (const id of ids) await coordinator.settled(id);
    stop();
    await coordinator.mirrored();
    const taskIds = new Set((await Promise.all(ids.map((id) => coordinator.getItem(id)))).map((item) => item?.taskId));
    expect(taskIds.size).toBe(4);
    const hops = (await Promise.all(ids.map((id) => coordinator.listHops(id)))).reduce((n, h) => n + h.length, 0);
    expect(taskCount(path)).toBe(4 + hops);
  });

  it("is carried by the item's statuses from the first one a subscriber sees", async () => {
    f = await openFixture();
    const { coordinator } = f;
    const stop = autoApprove(coordinator);
    // From before the call: every status of the item, `created` included, is emitted once its task exists.
    const early: ItemStatus[] = [];
    const earlySub = coordinator.statuses$.subscribe((s) => early.push(s));
    const id = await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Add a health endpoint' });
    const taskId = (await coordinator.getItem(id))?.taskId;
    expect(taskId).toEqual(expect.any(String));
    // From after the call: statuses$ (its `current` and every change) and watch.
    const late: ItemStatus[] = [];
    const lateSub = coordinator.statuses$.subscribe((s) => late.push(s));
    const watched: ItemStatus[] = [];
    const watchSub = coordinator.watch(id).subscribe((s) => watched.push(s));
    const final = await coordinator.settled(id);
    stop();
    earlySub.unsubscribe();
    lateSub.unsubscribe();
    watchSub.unsubscribe();
    expect(final.state).toBe('completed');
    expect(final.taskId).toBe(taskId);
    const ofItem = (list: ItemStatus[]) => list.filter((s) => s.id === id);
    expect(ofItem(early).map((s) => s.event.kind)).toContain('created');
    expect(ofItem(early).map((s) => s.event.kind)).toContain('dispatched');
    for (const list of [early, late]) expect(ofItem(list).map((s) => s.event.kind)).toContain('completed');
    expect(watched.at(-1)?.state).toBe('completed');
    for (const list of [early, late, watched]) {
      expect(ofItem(list).length).toBeGreaterThan(5);
      expect(ofItem(list).filter((s) => s.taskId !== taskId)).toEqual([]);
    }
    // The created status comes first, and in order with the rest.
    expect(ofItem(early)[0]?.event.kind).toBe('created');
  });

  it('is looked for in the broker (by its first message) only when the mirror may not know it: not for an item made here, after a failed sync yes', async () => {
    f = await openFixture();
    const { coordinator, path } = f;
    const broker = coordinator.broker!;
    const listTasks = broker.listTasks.bind(broker);
    let lookups = 0;
    broker.listTasks = (request) => {
      lookups++;
      return listTasks(request);
    };
    const stop = autoApprove(coordinator);
    const made = await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Add a health endpoint' });
    expect((await coordinator.settled(made)).state).toBe('completed');
    await coordinator.mirrored();
    expect(lookups).toBe(0);
    expect(taskCount(path)).toBe(1 + (await coordinator.listHops(made)).length);
    // A sync that failed (the broker's task insert refused) may have left a task behind: later syncs look.
    const restore = await f.storage.sabotage('a2a_tasks', 'the disk is full');
    const failed = await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Add a readiness endpoint' });
    expect((await coordinator.getItem(failed))?.taskId).toBeNull();
    await restore();
    expect((await coordinator.settled(failed)).state).toBe('completed');
    stop();
    await until(async () => (await coordinator.getItem(failed))?.mirrored === true, 10_000, 'the item to be mirrored');
    expect(lookups).toBeGreaterThan(0);
    const hops = (await coordinator.listHops(made)).length + (await coordinator.listHops(failed)).length;
    expect(taskCount(path)).toBe(2 + hops);
  });

  it('is null in the statuses only while the broker could not make it, then carried once a later sync made it', async () => {
    f = await openFixture();
    const { coordinator } = f;
    // The broker's task insert fails (as a full disk would): the item commits, its task is not made.
    const restore = await f.storage.sabotage('a2a_tasks', 'the disk is full');
    const seen: ItemStatus[] = [];
    const sub = coordinator.statuses$.subscribe((s) => seen.push(s));
    const id = await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Add a health endpoint' });
    expect((await coordinator.getItem(id))?.taskId).toBeNull();
    expect(seen.filter((s) => s.id === id).map((s) => [s.event.kind, s.taskId])).toEqual([
      ['created', null],
      ['dispatched', null],
    ]);
    await restore();
    // The next commit of the item schedules its sync again: the task is made, and statuses carry it from then on.
    const stop = autoApprove(coordinator);
    const final = await coordinator.settled(id);
    stop();
    sub.unsubscribe();
    await coordinator.mirrored();
    const taskId = (await coordinator.getItem(id))?.taskId;
    expect(taskId).toEqual(expect.any(String));
    expect(final.taskId).toBe(taskId);
    const after = seen.filter((s) => s.id === id).slice(2);
    const first = after.findIndex((s) => s.taskId !== null);
    expect(first).toBeGreaterThanOrEqual(0);
    // Once carried, never lost; before it, null (the task did not exist).
    expect(after.slice(first).filter((s) => s.taskId !== taskId)).toEqual([]);
    expect(after.slice(0, first).filter((s) => s.taskId !== null)).toEqual([]);
    await until(async () => (await coordinator.getItem(id))?.mirrored === true, 10_000, 'the item to be mirrored');
  });
});
