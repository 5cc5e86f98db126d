import { existsSync } from 'node:fs';
import type { BrokerApi } from '../actors/broker/api.js';
import type { Logger } from '../log/logger.js';
import { type InProcessConnection, connectInProcess } from '../transport/in-process.js';
import { VERSION } from '../version.js';
import type { RemoteBridge } from './remote-bridge.js';
import { defaultRemotesFile } from './remotes-file.js';

/** How often the process that owns a broker looks for a remotes file beside its database. */
const LOOK_MS = 1000;

/** The bridge of the remote agents run by the process that owns the broker. */
export interface HostedRemoteAgents {
  /** Whether the bridge carries a task now: the process that owns the broker then stays up past its idle period. */
  busy(): boolean;
  stop(): Promise<void>;
}

/**
 * Runs the bridge of a broker's remote agents inside the process that owns
 * the broker (`switchboard serve`, and the host's broker started for
 * `connect({ db })`), over an in-process connection, once a remotes file
 * is beside its database (`switchboard agents add-remote` writes it); the
 * bridge then picks up remotes added later by itself. Nothing is loaded or
 * opened while there is no remotes file.
 */
export function hostRemoteAgents(broker: BrokerApi, db: string, logger: Logger): HostedRemoteAgents {
  let connection: InProcessConnection | undefined;
  let bridge: RemoteBridge | undefined;
  let starting: Promise<void> | undefined;
  let stopped = false;
  let failures = 0;
  let skip = 0;

  const look = () => {
    if (stopped || bridge !== undefined || starting !== undefined) return;
    if (skip > 0) {
      skip--;
      return;
    }
    if (!existsSync(defaultRemotesFile(db))) return;
    starting = (async () => {
      const { startRemoteBridge } = await import('./remote-bridge.js');
      connection = await connectInProcess(broker, {
        client: { name: 'switchboard-remote-bridge', version: VERSION },
        logger,
      });
      bridge = await startRemoteBridge({ db, client: connection.client, logger });
      failures = 0;
      logger.info({ db, agents: bridge.agents() }, 'remote agents: bridge started');
    })()
      .catch(async (error: unknown) => {
        await connection?.client.close().catch(() => {});
        connection = undefined;
        failures++;
        skip = Math.min(2 ** failures, 60);
        logger.error({ err: error, db }, 'remote agents: cannot start the bridge; trying again');
      })
      .finally(() => {
        starting = undefined;
      });
  };
  const timer = setInterval(look, LOOK_MS);
  timer.unref();
  look();

  return {
    busy: () => (bridge?.carrying() ?? 0) > 0,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await starting;
      await bridge?.stop().catch((error: unknown) => logger.warn({ err: error }, 'remote agents: stopping the bridge'));
      await connection?.client.close().catch(() => {});
    },
  };
}
