import { afterEach, describe, expect, it } from 'vitest';
import {
  APPROVALS_ROLE,
  CoordinatorIntake,
  ITEMS_ROLE,
  REQUEST_ATTRIBUTE,
  submitApproval,
  submitItems,
} from '../../src/actors/coordinator/intake.js';
import { submitControl } from '../../src/actors/coordinator/item-controls.js';
import { silentLogger } from '../../src/log/logger.js';
import { CONTROLS_ROLE } from '../../src/protocol/item-control.js';
import { type Fixture, openFixture, tempDir, until } from '../coordinator/helpers.js';

/**
 * The Coordinator's control plane in one process (the multi-process test
 * runs it through the CLI): requests create items once per request id, even
 * across a restart; bad requests and refused approvals are dead-lettered
 * with their reason.
 */

const open: { fixture: Fixture; intake: CoordinatorIntake }[] = [];
afterEach(async () => {
  for (const { fixture, intake } of open.splice(0)) {
    await intake.close();
    await fixture.close();
  }
});

async function start(dir?: string, autoApprove?: string) {
  const fixture = await openFixture({}, dir);
  const intake = new CoordinatorIntake({
    coordinator: fixture.coordinator,
    bus: fixture.coordinator.bus,
    logger: silentLogger(),
    consumer: 'test-intake',
    visibilityTimeoutMs: 5_000,
    ...(autoApprove === undefined ? {} : { autoApprove }),
  });
  await intake.start();
  const entry = { fixture, intake };
  open.push(entry);
  return entry;
}

function requestEnvelope(requestId: string) {
  return {
    kind: 'work' as const,
    headers: { taskId: 'x', runId: 'x', hop: 0, attempt: 1, idempotencyKey: 'x' },
    message: {
      role: 'user' as const,
      parts: [
        {
          kind: 'data' as const,
          data: { type: 'switchboard.create-item', requestId, workflow: 'dev-sdlc', input: 'Add rate limiting' },
        },
      ],
    },
  };
}

describe('the Coordinator intake ($items, $approvals)', () => {
  it('creates one item per request id, also after a restart, and refuses bad requests with a reason', async () => {
    const dir = tempDir();
    const first = await start(dir, 'release-manager');
    const { coordinator } = first.fixture;
    const sent = await submitItems(coordinator.bus, [
      { requestId: 'r-1', workflow: 'dev-sdlc', input: 'Add rate limiting' },
      { requestId: 'r-2', workflow: 'dev-sdlc', input: 'Export invoices' },
      { requestId: 'r-3', workflow: 'no-such-workflow', input: 'x' },
    ]);
    expect(sent.map((s) => s.duplicate)).toEqual([false, false, false]);
    expect(
      (await submitItems(coordinator.bus, [{ requestId: 'r-1', workflow: 'dev-sdlc', input: 'again' }]))[0]!.duplicate,
    ).toBe(true);
    // The same request id under another bus key: only the Coordinator's own check stops it.
    await coordinator.bus.publish(ITEMS_ROLE, requestEnvelope('r-1'), { idempotencyKey: 'item:r-1:again' });
    await until(
      async () => (await coordinator.bus.stats(ITEMS_ROLE)).deadLetters === 1,
      10_000,
      'the bad request dead-lettered',
    );
    await until(
      async () => {
        const s = await coordinator.bus.stats(ITEMS_ROLE);
        return s.depth + s.inFlight + s.delayed === 0;
      },
      10_000,
      '$items drained',
    );
    const [dead] = await coordinator.bus.deadLetters.list(ITEMS_ROLE);
    expect(dead!.lastError.type).toBe('COORD_UNKNOWN_WORKFLOW');
    const items = await coordinator.listItems();
    expect(items.map((i) => i.attributes?.[REQUEST_ATTRIBUTE]).sort()).toEqual(['r-1', 'r-2']);
    await until(
      async () => (await coordinator.listItems()).every((i) => i.state === 'completed'),
      30_000,
      'items completed',
    );

    // Restarted: a request id seen before (here under yet another key) creates nothing.
    await first.intake.close();
    await first.fixture.coordinator.close();
    open.splice(0);
    const second = await start(dir);
    expect(second.intake.itemFor('r-1')).toBe(items.find((i) => i.attributes?.[REQUEST_ATTRIBUTE] === 'r-1')!.id);
    await second.fixture.coordinator.bus.publish(ITEMS_ROLE, requestEnvelope('r-1'), {
      idempotencyKey: 'item:r-1:third',
    });
    await until(
      async () => {
        const s = await second.fixture.coordinator.bus.stats(ITEMS_ROLE);
        return s.depth + s.inFlight + s.delayed === 0;
      },
      10_000,
      '$items drained after the restart',
    );
    expect(await second.fixture.coordinator.listItems()).toHaveLength(2);
  }, 60_000);

  it('applies an approval at the gate; dead-letters one by a non-approver or for an unknown item', async () => {
    const { fixture } = await start();
    const { coordinator } = fixture;
    await submitItems(coordinator.bus, [{ requestId: 'a-1', workflow: 'dev-sdlc', input: 'Add rate limiting' }]);
    await until(async () => (await coordinator.listItems())[0]?.state === 'awaiting-approval', 30_000, 'the gate');
    const itemId = (await coordinator.listItems())[0]!.id;
    await submitApproval(coordinator.bus, { itemId, approver: 'mallory', decision: 'approve' });
    await submitApproval(coordinator.bus, { itemId: 'no-such-item', approver: 'release-manager', decision: 'approve' });
    await until(
      async () => (await coordinator.bus.stats(APPROVALS_ROLE)).deadLetters === 2,
      10_000,
      'two refused decisions',
    );
    const reasons = (await coordinator.bus.deadLetters.list(APPROVALS_ROLE)).map((d) => d.lastError.type).sort();
    expect(reasons).toEqual(['COORD_APPROVAL_REFUSED', 'COORD_UNKNOWN_ITEM']);
    expect((await coordinator.getItem(itemId))!.state).toBe('awaiting-approval');
    await submitApproval(coordinator.bus, { itemId, approver: 'release-manager', decision: 'approve' });
    expect((await coordinator.settled(itemId)).state).toBe('completed');
  }, 60_000);

  it('takes back at once the requests a dead intake held, on $controls too: a cancel leased for an hour is carried out', async () => {
    const { fixture, intake } = await start();
    const itemId = await fixture.coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Add rate limiting' });
    await intake.close();
    open.splice(0);
    await submitControl(fixture.coordinator.bus, {
      type: 'switchboard.cancel',
      itemId,
      by: 'ops',
      reason: 'wrong ticket',
    });
    // A leader takes the cancel under an hour's lease and dies before carrying it out.
    const held = await fixture.coordinator.bus.consume(CONTROLS_ROLE, {
      consumer: 'dead-intake',
      visibilityTimeoutMs: 3_600_000,
    });
    expect(held).toHaveLength(1);
    const next = new CoordinatorIntake({
      coordinator: fixture.coordinator,
      bus: fixture.coordinator.bus,
      logger: silentLogger(),
      consumer: 'next-intake',
      visibilityTimeoutMs: 5_000,
    });
    await next.start();
    open.push({ fixture, intake: next });
    const done = await fixture.coordinator.settled(itemId, { timeoutMs: 20_000 });
    expect(done.state).toBe('canceled');
    expect(await fixture.coordinator.bus.ack(held[0]!)).toBe(false);
  });
});
