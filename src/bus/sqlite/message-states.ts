import type { SqliteDatabase } from '../../persistence/kernel/database.js';
import type { BusMessageLookup, BusMessageState } from '../../workflow/bus-waits.js';

/**
 * Where messages are on the SQLite work bus of a file, by role and
 * idempotency key (one read of the unique index per message): queued,
 * delayed, held by a worker under a live lease, dead-lettered, or missing.
 * Read-only (the read commands and the console open the file read-only); a
 * file without the bus's table gives a lookup that cannot tell (`null`).
 */
export function sqliteBusLookup(db: SqliteDatabase, now: number): BusMessageLookup {
  const exists = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'bus_jobs'").get();
  if (exists === undefined) return () => null;
  const read = db.prepare(
    'SELECT state, available_at AS availableAt, leased_until AS leasedUntil FROM bus_jobs WHERE role = ? AND idempotency_key = ?',
  );
  return ({ role, key }) => {
    const row = read.get(role, key) as { state: string; availableAt: number; leasedUntil: number | null } | undefined;
    return row === undefined ? 'missing' : stateOf(row, now);
  };
}

function stateOf(
  row: { state: string; availableAt: number; leasedUntil: number | null },
  now: number,
): BusMessageState | null {
  switch (row.state) {
    case 'ready':
      return row.availableAt > now ? 'delayed' : 'queued';
    case 'leased':
      // A lease that ran out is taken back at the next look: queued again.
      return row.leasedUntil !== null && row.leasedUntil <= now ? 'queued' : 'held';
    case 'dead':
      return 'dead';
    default:
      // Done: taken and finished (the hop's result or suspension is the Coordinator's to take).
      return null;
  }
}
