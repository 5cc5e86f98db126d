import { PassThrough } from 'node:stream';
import type { BrokerApi } from '../actors/broker/api.js';
import type { Logger } from '../log/logger.js';
import { BrokerSession } from './broker-session.js';
import { type ConnectOptions, type SwitchboardClient, connect } from './client.js';

/** What `connectInProcess` returns: the client and the broker session serving it. */
export interface InProcessConnection {
  /** The client, speaking to the broker in this process. */
  client: SwitchboardClient;
  /** The session serving the client (its relays, its backlog). */
  session: BrokerSession;
}

/**
 * A client of a broker embedded in this process, through a `BrokerSession`
 * over in-memory streams: the same API, the same validation and the same
 * notifications as over stdio, without a child process. Closing the client
 * ends the session; the broker stays open (its owner closes it).
 */
export async function connectInProcess(
  broker: BrokerApi,
  options: { client?: ConnectOptions['client']; logger?: Logger } = {},
): Promise<InProcessConnection> {
  const toBroker = new PassThrough();
  const fromBroker = new PassThrough();
  const session = new BrokerSession({ broker, input: toBroker, output: fromBroker, logger: options.logger });
  const connectOptions: ConnectOptions = { streams: { readable: fromBroker, writable: toBroker } };
  if (options.client !== undefined) connectOptions.client = options.client;
  try {
    const client = await connect(connectOptions);
    return { client, session };
  } catch (error) {
    toBroker.end();
    await session.close();
    throw error;
  }
}
