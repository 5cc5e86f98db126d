/**
 * The agent of bench:gateway's in-process sides (bench/gateway-embedded-child.ts,
 * bench/gateway-broker-floor-child.ts): `worker-0`, run on the broker's own
 * face (`BrokerApi`). It registers, takes its events from
 * `broker.events(agentId)` and completes each task it is sent at once with
 * `broker.setStatus` (`historyLength: 0`: it does not read the task back).
 */
import type { BrokerApi } from '../dist/actors/broker/api.js';

export async function startBenchAgent(broker: BrokerApi): Promise<{ agentId: string; stop: () => void }> {
  const { agentId, token } = await broker.register({ name: 'worker-0', contextId: 'bench-workers' });
  const done = { parts: [{ kind: 'text' as const, text: 'done' }] };
  const subscription = broker.events(agentId).subscribe((event) => {
    if (event.method !== 'a2a.task.event' || event.params.event.kind !== 'status-update') return;
    if (event.params.event.status.state !== 'submitted') return;
    broker
      .setStatus({ token, id: event.params.event.taskId, state: 'completed', message: done, historyLength: 0 })
      .catch((error: unknown) => {
        process.stderr.write(`bench agent: ${error instanceof Error ? error.message : String(error)}\n`);
      });
  });
  return { agentId, stop: () => subscription.unsubscribe() };
}
