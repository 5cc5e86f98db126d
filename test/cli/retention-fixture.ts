import { createBroker } from '../../src/actors/broker/broker.js';
import type { Broker } from '../../src/actors/broker/broker.js';

/** A day, in milliseconds. */
export const DAY_MS = 86_400_000;

/**
 * A broker file whose `ended` tasks ended two days ago (send, working,
 * completed with a 200-character answer, in groups of 100 between parties of
 * their own) and one task still live, between `req`@`ctx-live` and `wrk`@`w-live`.
 */
export async function buildRetentionFile(path: string, ended: number): Promise<{ liveTaskId: string }> {
  const broker = createBroker({ path, clock: { now: () => Date.now() - 2 * DAY_MS } });
  try {
    const req = await broker.register({ name: 'req', contextId: 'ctx-live' });
    const wrk = await broker.register({ name: 'wrk', contextId: 'w-live' });
    const live = (await broker.send({ token: req.token, to: wrk.agentId, message: text('still open') })).task;
    await broker.setStatus({ token: wrk.token, id: live.id, state: 'working' });
    for (let group = 0; group * 100 < ended; group++) {
      const r = await broker.register({ name: 'req', contextId: `ctx-${group}` });
      const w = await broker.register({ name: 'wrk', contextId: `w-${group}` });
      await runGroup(broker, r, w, Math.min(100, ended - group * 100));
    }
    return { liveTaskId: live.id };
  } finally {
    await broker.close();
  }
}

function text(t: string) {
  return { parts: [{ kind: 'text' as const, text: t }] };
}

async function runGroup(
  broker: Broker,
  req: { token: string },
  wrk: { token: string; agentId: string },
  n: number,
): Promise<void> {
  const sent = await Promise.all(
    Array.from({ length: n }, () => broker.send({ token: req.token, to: wrk.agentId, message: text('q'.repeat(200)) })),
  );
  await Promise.all(sent.map(({ task }) => broker.setStatus({ token: wrk.token, id: task.id, state: 'working' })));
  await Promise.all(
    sent.map(({ task }) =>
      broker.setStatus({ token: wrk.token, id: task.id, state: 'completed', message: text('a'.repeat(200)) }),
    ),
  );
}
