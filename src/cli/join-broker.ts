import { type SwitchboardClient, connect } from '../transport/client.js';
import { VERSION } from '../version.js';

/**
 * Whether `joinBroker` joins one broker shared by every process on the file
 * (the host broker). While false, two `switchboard mcp` processes on one
 * file run two brokers, which do not see each other's agents: the test of
 * two servers delegating to each other is skipped.
 */
export const JOINS_HOST_BROKER: boolean = false;

/**
 * The one place a runtime command (`switchboard mcp`) gets its connection to
 * the broker of a database file. Today it starts `switchboard serve --db`
 * as a child on that file, whose broker lives as long as the command; with
 * the host broker this becomes `connect({ db, client })` (joining the broker
 * that owns the file, or starting it) and `JOINS_HOST_BROKER` true.
 */
export function joinBroker(db: string): Promise<SwitchboardClient> {
  return connect({ spawn: { db, stderr: 'inherit' }, client: { name: 'switchboard-mcp', version: VERSION } });
}
