import { type SwitchboardClient, connect } from '../transport/client.js';
import { VERSION } from '../version.js';

/**
 * The one place a runtime command (`switchboard mcp`) gets its connection to
 * the broker of a database file: the host's broker that owns the file, or
 * one started now in the background (`connect({ db })`).
 */
export function joinBroker(db: string): Promise<SwitchboardClient> {
  return connect({ db, client: { name: 'switchboard-mcp', version: VERSION } });
}
