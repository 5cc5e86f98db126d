import type { HopKind, HopRecord, ItemRecord, ItemState } from './records.js';

/**
 * What a live work item waits for on the bus: each hop (or query) it has
 * out, the role whose queue carries it, and since when. Read from the
 * item's rows alone (`coordinator status`, `items show` and the console
 * show it); where the bus can be read cheaply, the reader adds where the
 * hop's message is (`BusMessageState`). Nothing here carries an
 * idempotency key: a query's holds its continuation token.
 */

/** Where a hop's message is on the bus, when it was read. */
export type BusMessageState =
  /** Queued on its role, not taken yet. */
  | 'queued'
  /** Queued, but not to be taken before a later time (a retry's backoff). */
  | 'delayed'
  /** Taken by a worker, under its lease. */
  | 'held'
  /** Dead-lettered: the worker gave up on it, and the Coordinator has not taken its failure yet. */
  | 'dead'
  /** Not on the bus: lost (a timeout publishes it again under its key). */
  | 'missing';

/** One hop (or query) a live work item has out. */
export interface BusWait {
  itemId: string;
  workflow: string;
  itemState: ItemState;
  /** `stage`: a stage's hop; `query`: the question a suspended hop asked. */
  kind: HopKind;
  hop: number;
  attempt: number;
  stage: string;
  /** The role whose queue carries it. */
  role: string;
  /** When it went out (its dispatch, its resume, or when its retry's backoff ends: then later than now). */
  since: number;
  /** How long it has been out at the time read (0 while its backoff runs). */
  ageMs: number;
  /** How many times it ran past its timeout (each time it was published again). */
  timeouts: number;
  /** Where its message is, when the bus was read; null when it was not (another bus, or a resumed hop's reply). */
  bus: BusMessageState | null;
}

/** Item states in which an item waits on the bus. */
const WAITING_STATES: readonly ItemState[] = ['running', 'suspended'];

/** Looks up where a message is on the bus (by its role and key); null when it cannot tell. */
export type BusMessageLookup = (message: { role: string; key: string }) => BusMessageState | null;

/**
 * The hops (and queries) a running or suspended work item has out at `now`,
 * oldest first; none for an item in any other state (at a gate, ended).
 * With `lookup`, each says where its message is.
 */
export function busWaitsOf(
  item: ItemRecord,
  hops: readonly HopRecord[],
  now: number,
  lookup?: BusMessageLookup,
): BusWait[] {
  if (!WAITING_STATES.includes(item.state) || item.finishedAt !== null) return [];
  return hops
    .filter((h) => h.state === 'dispatched')
    .map((h) => {
      const since = h.activeSince ?? h.dispatchedAt;
      const message = lookup === undefined ? null : busMessageOf(h, hops);
      return {
        itemId: item.id,
        workflow: item.workflow.id,
        itemState: item.state,
        kind: h.kind,
        hop: h.hop,
        attempt: h.attempt,
        stage: h.stage,
        role: h.role,
        since,
        ageMs: Math.max(0, now - since),
        timeouts: h.timeouts,
        bus: message === null ? null : lookup!(message),
      };
    })
    .sort((a, b) => a.since - b.since);
}

/**
 * The bus message a hop out (`dispatched`) is carried by, to look up: its role and the key
 * it was published under. A stage hop that was resumed (a query it asked was
 * answered, or its children ended) is carried by the reply instead: `null`,
 * its place is not looked up.
 */
function busMessageOf(hop: HopRecord, hops: readonly HopRecord[]): { role: string; key: string } | null {
  if (hop.kind === 'query') return { role: hop.role, key: hop.idempotencyKey };
  const asked = hops.some((q) => q.askedBy === hop.id);
  // A first attempt goes out at once: active later than its dispatch, it was resumed.
  const resumed = asked || (hop.attempt === 1 && (hop.activeSince ?? hop.dispatchedAt) > hop.dispatchedAt);
  return resumed ? null : { role: hop.role, key: hop.idempotencyKey };
}
