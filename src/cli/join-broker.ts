import { type SwitchboardClient, connect } from '../transport/client.js';
import { VERSION } from '../version.js';

/**
 * Whether `joinBroker` joins one broker shared by every process on the file
 * (the host broker): two `switchboard mcp` processes on one file meet there.
 */
export const JOINS_HOST_BROKER: boolean = true;

/**
 * The one place a runtime command (`switchboard mcp`) gets its connection to
 * the broker of a database file: the host's broker that owns the file, or
 * one started now in the background (`connect({ db })`).
 */
export function joinBroker(db: string): Promise<SwitchboardClient> {
  return connect({ db, client: { name: 'switchboard-mcp', version: VERSION } });
}
