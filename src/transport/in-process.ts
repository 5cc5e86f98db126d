import type { BrokerApi } from '../actors/broker/api.js';
import type { Logger } from '../log/logger.js';
import type { BrokerSession } from './broker-session.js';
import { type ConnectOptions, type SwitchboardClient, connectChannel } from './client.js';
import { DirectChannel } from './direct-channel.js';

/** What `connectInProcess` returns: the client and the broker session serving it. */
export interface InProcessConnection {
  /** The client, speaking to the broker in this process. */
  client: SwitchboardClient;
  /** The session serving the client (its relays); a `reconnect()` opens a new one. */
  session: BrokerSession;
}

/**
 * A client of a broker embedded in this process, through a `BrokerSession`
 * without JSON lines or streams: the same API, the same validation, the same
 * refusals and the same notifications as over stdio, without a child
 * process and without framing. Params, answers and events cross as JSON
 * copies, as the wire would carry them. Closing the client ends the session;
 * the broker stays open (its owner closes it).
 */
export async function connectInProcess(
  broker: BrokerApi,
  options: { client?: ConnectOptions['client']; logger?: Logger } = {},
): Promise<InProcessConnection> {
  let session: BrokerSession | undefined;
  const client = await connectChannel(({ onNotification, onClose }) => {
    const channel = new DirectChannel({ broker, onNotification, onClose, logger: options.logger });
    session = channel.session;
    return channel;
  }, options.client);
  return { client, session: session as BrokerSession };
}
