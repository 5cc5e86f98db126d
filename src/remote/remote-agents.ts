import { AgentNameSchema } from '../protocol/agent.js';
import { type RemoteEndpoint, fetchRemoteCard } from './remote-connection.js';
import { RemoteAgentError } from './remote-errors.js';
import { type RemoteAgentRow, defaultRemotesFile, dropRemote, putRemote, readRemotes } from './remotes-file.js';

/** What `addRemoteAgent` takes: the broker's file, the remote's URL, and how it is named and reached. */
export interface AddRemoteAgentOptions {
  /** The broker's SQLite file (the remotes file is beside it). */
  db: string;
  /** The remote's base URL, or its card's URL. */
  url: string;
  /** The local agent's name (default: the name on the remote's card). */
  name?: string;
  /** A bearer key for the remote, sent as `Authorization: Bearer` (for example a key of a switchboard gateway). */
  token?: string;
  /** How long reading the card may wait for an answer (default 10 s). */
  timeoutMs?: number;
}

/**
 * Adds a remote A2A agent to a broker: reads its card (a remote that cannot
 * be reached, or has no usable card, is a `RemoteAgentError` saying so) and
 * records it in the remotes file under its local name. A running bridge of
 * the broker picks it up (`startRemoteBridge`, `switchboard agents bridge`).
 */
export async function addRemoteAgent(options: AddRemoteAgentOptions): Promise<RemoteAgentRow> {
  const endpoint: RemoteEndpoint = {
    url: options.url,
    ...(options.token === undefined ? {} : { token: options.token }),
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
  };
  const card = await fetchRemoteCard(endpoint);
  const name = AgentNameSchema.safeParse(options.name ?? card.name);
  if (!name.success) {
    throw new RemoteAgentError(
      'REMOTE_CARD_INVALID',
      `the name "${options.name ?? card.name}" is not an agent name (${name.error.issues[0]?.message}): give the local name with --name NAME`,
      { details: { url: options.url } },
    );
  }
  const row: RemoteAgentRow = {
    name: name.data,
    url: options.url,
    ...(options.token === undefined ? {} : { token: options.token }),
    card,
    addedAt: Date.now(),
  };
  putRemote(defaultRemotesFile(options.db), row);
  return row;
}

/** The remote agents of a broker, as the remotes file beside `db` holds them. */
export function listRemoteAgents(db: string): RemoteAgentRow[] {
  return readRemotes(defaultRemotesFile(db));
}

/** Removes a remote agent by its local name; a running bridge deregisters its local agent. */
export function removeRemoteAgent(db: string, name: string): RemoteAgentRow {
  return dropRemote(defaultRemotesFile(db), name);
}
