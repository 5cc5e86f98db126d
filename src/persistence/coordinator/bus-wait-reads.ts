import { type BusMessageLookup, type BusWait, busWaitsOf } from '../../workflow/bus-waits.js';
import type { CoordinatorTables } from './coordinator-store.js';

/**
 * What every live work item waits for on the bus (`busWaitsOf` of each),
 * oldest first: two reads of the tables (the live items, then the hops of
 * the running and suspended ones), whatever their number.
 */
export async function readBusWaits(
  tables: Pick<CoordinatorTables, 'readLiveItems' | 'readHopsOfItems'>,
  now: number,
  lookup?: BusMessageLookup,
): Promise<BusWait[]> {
  const live = (await tables.readLiveItems()).filter((i) => i.state === 'running' || i.state === 'suspended');
  if (live.length === 0) return [];
  const hops = await tables.readHopsOfItems(live.map((i) => i.id));
  return live
    .flatMap((item) => busWaitsOf(item, hops.get(item.id) ?? [], now, lookup))
    .sort((a, b) => a.since - b.since);
}
