import type { MethodParamsInput, RegisterResult } from '../protocol/methods.js';
import { BrokerError } from '../protocol/broker-error.js';
import { type A2ATool, createA2ATool } from './a2a-tool.js';
import type { SwitchboardClient } from './client.js';
import { TransportError } from './transport-error.js';

/** What a delegate gets while it runs. */
export interface Delegation {
  /** The `A2A` tool, closed over the delegate's token (give it to the model). */
  tool: A2ATool;
  /** The id of the agent registered for the delegation. */
  agentId: string;
  /** That agent's card. */
  card: RegisterResult['card'];
  /** Aborted when the delegation is aborted from outside. */
  signal: AbortSignal;
}

/** Options of `delegate`: the client, the delegate's registration, an abort signal, and the run to settle on. */
export interface DelegateOptions<T> {
  /** The connection of the agent that delegates. */
  client: SwitchboardClient;
  /** The delegate's registration: its name, the session (`contextId`), its card. */
  agent: MethodParamsInput<'a2a.agents.register'>;
  /** Aborting settles the delegation at once (it rejects with the reason) and deregisters the delegate. */
  signal?: AbortSignal;
  /** Runs the delegate; the delegation settles when this does. */
  run(delegation: Delegation): Promise<T>;
}

/**
 * Spawn and settle of a delegate: registers the delegate, hands it the `A2A`
 * tool closed over its token, and deregisters it (invalidating the token)
 * when the delegation settles, however it settles: resolved, thrown or
 * aborted. A deregistration the broker can no longer perform (the token is
 * already unknown, or the connection is gone and with it the token) is not
 * an error of the delegation.
 */
export async function delegate<T>(options: DelegateOptions<T>): Promise<T> {
  const { client, agent, signal } = options;
  signal?.throwIfAborted();
  const registration = await client.register(agent);
  const controller = new AbortController();
  let deregistered: Promise<void> | undefined;
  const deregister = () => {
    deregistered ??= client.deregister({ token: registration.token }).then(
      () => undefined,
      (error: unknown) => {
        if (error instanceof TransportError) return;
        if (error instanceof BrokerError && error.code === 'A2A_UNKNOWN_TOKEN') return;
        throw error;
      },
    );
    return deregistered;
  };
  const tool = createA2ATool({ client, token: registration.token });
  const delegation: Delegation = {
    tool,
    agentId: registration.agentId,
    card: registration.card,
    signal: controller.signal,
  };

  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    if (!signal) return;
    onAbort = () => {
      controller.abort(signal.reason);
      reject(signal.reason);
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  // Keep an abort that loses the race from being an unhandled rejection.
  aborted.catch(() => {});

  let outcome: { ok: true; value: T } | { ok: false; error: unknown };
  try {
    outcome = { ok: true, value: await Promise.race([options.run(delegation), aborted]) };
  } catch (error) {
    outcome = { ok: false, error };
  } finally {
    if (onAbort) signal?.removeEventListener('abort', onAbort);
  }
  if (!outcome.ok) {
    controller.abort(outcome.error);
    await deregister().catch(() => {});
    throw outcome.error;
  }
  await deregister();
  return outcome.value;
}
