import { type SwitchboardClient, connect } from '../transport/client.js';

/**
 * The one place a runtime command (`switchboard mcp`) gets its connection to
 * the broker of a database file. Today it starts `switchboard serve --db`
 * as a child on that file, whose broker lives as long as the command; a
 * host broker shared by every process on the file replaces this body with
 * joining it.
 */
/**
 * Whether `joinBroker` joins one broker shared by every process on the file
 * (the host broker). While false, two `switchboard mcp` processes on one
 * file run two brokers, which do not see each other's agents: the test of
 * two servers delegating to each other is skipped.
 */
export const JOINS_HOST_BROKER: boolean = false;

export function joinBroker(db: string): Promise<SwitchboardClient> {
  return connect({ spawn: { db, stderr: 'inherit' }, client: { name: 'switchboard-mcp', version: '1' } });
}
