import { afterEach, describe, expect, it } from 'vitest';
import type { ItemStatus } from '../../src/actors/coordinator/types.js';
import { type Fixture, autoApprove, openFixture, until } from './helpers.js';

/** Collects a watch until it completes. */
function collect(f: Fixture, id: string): { statuses: ItemStatus[]; done: Promise<void> } {
  const statuses: ItemStatus[] = [];
  const done = new Promise<void>((resolve, reject) => {
    f.coordinator.watch(id).subscribe({ next: (s) => statuses.push(s), error: reject, complete: resolve });
  });
  return { statuses, done };
}

/**
 * `watch(id)` streams every status of the item through its end event. The
 * statuses of one step all carry the item as the step left it, so the
 * `hop-completed` status of the last hop already shows a completed item:
 * the stream must not end there, before the `completed` event.
 */
describe('Coordinator.watch', () => {
  let f: Fixture | undefined;
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  it("streams every status of a completed item through its 'completed' event", async () => {
    f = await openFixture();
    const { coordinator } = f;
    const stop = autoApprove(coordinator);
    const all: ItemStatus[] = [];
    const sub = coordinator.statuses$.subscribe((s) => all.push(s));
    const id = await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Add a health endpoint' });
    const watched = collect(f, id);
    await watched.done;
    stop();
    sub.unsubscribe();
    const kinds = watched.statuses.map((s) => s.event.kind);
    expect(kinds[0]).toBe('current');
    expect(kinds.at(-1)).toBe('completed');
    expect(kinds).toContain('hop-completed');
    expect(watched.statuses.at(-1)?.state).toBe('completed');
    // Nothing of the item is left out: the watch's statuses after its first are the item's last ones.
    const ofItem = all.filter((s) => s.id === id && s.event.kind !== 'current').map((s) => s.event.kind);
    expect(ofItem.slice(ofItem.length - (kinds.length - 1))).toEqual(kinds.slice(1));
    expect(ofItem.at(-1)).toBe('completed');
  });

  it("ends a canceled item's stream at its 'canceled' event", async () => {
    f = await openFixture();
    const { coordinator } = f;
    const id = await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Add a health endpoint' });
    const watched = collect(f, id);
    await until(async () =>
      watched.statuses.some((s) => s.event.kind === 'dispatched' || s.event.kind === 'hop-completed'),
    );
    await coordinator.cancel(id, { by: 'human', reason: 'not needed' });
    await watched.done;
    expect(watched.statuses.at(-1)?.event.kind).toBe('canceled');
    expect(watched.statuses.at(-1)?.state).toBe('canceled');
  });
});
