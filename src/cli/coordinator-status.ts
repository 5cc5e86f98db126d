import { SchemaVersionError } from '../persistence/kernel/migrations.js';
import {
  type PgConnection,
  connectPostgres,
  isPostgresUrl,
  redactPostgresUrl,
} from '../persistence/coordinator/postgres-connection.js';
import { type LeaseStatus, readLeaseStatus } from '../persistence/coordinator/postgres-lease.js';
import {
  CliUsageError,
  type FlagSpec,
  booleanFlag,
  parseCommandArgs,
  reportUsageError,
  stringFlag,
} from './command-args.js';
import { formatDuration, formatEpoch, renderTable } from './table.js';
import { pgSchemaVersion } from '../persistence/kernel/postgres-migrations.js';
import { PostgresCoordinatorStore } from '../persistence/coordinator/postgres-store.js';
import { readBusWaits } from '../persistence/coordinator/bus-wait-reads.js';
import type { BusWait } from '../workflow/bus-waits.js';
import { openPostgresForReading } from './read-postgres.js';

export const COORDINATOR_STATUS_USAGE = `Usage: switchboard coordinator status --db postgres://USER[:PASSWORD]@HOST[:PORT]/NAME [--json]

The leader lease of the Coordinators sharing a PostgreSQL database: the
leader (its pid, host, epoch, since when it leads, when it renewed and
until when the lease holds, by the database's clock) and the standbys seen
(each Coordinator waiting to take over, and when it last looked). A lease
whose expiry has passed is shown as lapsed: no Coordinator leads until a
standby takes it. Then what the running and suspended work items wait for
on the bus, oldest first: each hop (or query) out, its item, stage and
role, since when and for how long (by this machine's clock). Reads only;
the URL's password is never printed.

Options:
  --db URL     the PostgreSQL database the Coordinators share (required)
  --json       {"database","now","epoch","leader":{holder,pid,host,epoch,
               since,renewedAt,expiresAt,processStart,live}|null,
               "standbys":[{id,pid,host,processStart,firstSeen,lastSeen}],
               "waiting":[{itemId,workflow,itemState,kind,hop,attempt,
               stage,role,since,ageMs,timeouts,bus}]|null}
               (times in ISO 8601, UTC; waiting is null when the database
               holds no Coordinator tables yet; bus is null: the Redis bus
               is not read)
Exit status of status: 0 when the status was read (whether or not a Coordinator
leads); 1 when the database cannot be reached or holds no lease table (no
Coordinator has taken the lease there yet); 2 for a usage error.`;

/** Every flag the subcommand accepts (each is documented in its --help; a test checks it). */
export const COORDINATOR_STATUS_FLAGS: FlagSpec = {
  db: { type: 'string' },
  json: { type: 'boolean' },
};

interface Flags {
  db: string;
  json: boolean;
}

function parseFlags(argv: string[]): Flags {
  const args = parseCommandArgs(argv, COORDINATOR_STATUS_FLAGS, 0);
  const db = stringFlag(args, 'db');
  if (db === undefined) throw new CliUsageError('--db postgres://... is required');
  if (!isPostgresUrl(db)) {
    throw new CliUsageError(
      `--db must be a PostgreSQL URL (postgres://USER@HOST:PORT/NAME): the leader lease lives in PostgreSQL; a SQLite file has one Coordinator, which owns it (got '${redactPostgresUrl(db)}')`,
    );
  }
  return { db, json: booleanFlag(args, 'json') };
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** A wait as `--json` prints it: times in ISO 8601. */
function waitJson(w: BusWait): Record<string, unknown> {
  return { ...w, since: iso(w.since) };
}

/** What the running and suspended items wait for, as text (`waits` null: no Coordinator tables). */
function waitingLines(waits: BusWait[] | null): string[] {
  if (waits === null) return ['waiting   unknown: the database holds no Coordinator tables yet'];
  if (waits.length === 0) return ['waiting   nothing: no work item is running or suspended with a hop out'];
  return [
    `waiting   ${waits.length} ${waits.length === 1 ? 'hop' : 'hops'} out on the bus, oldest first`,
    '',
    ...renderTable(
      [
        { header: 'item' },
        { header: 'workflow' },
        { header: 'waits on' },
        { header: 'stage' },
        { header: 'role' },
        { header: 'attempt', align: 'right' },
        { header: 'since' },
        { header: 'age', align: 'right' },
        { header: 'timeouts', align: 'right' },
      ],
      waits.map((w) => [
        w.itemId,
        w.workflow,
        w.kind === 'query' ? `query of hop ${w.hop}` : `hop ${w.hop}`,
        w.stage,
        w.role,
        String(w.attempt),
        formatEpoch(w.since),
        formatDuration(w.ageMs),
        String(w.timeouts),
      ]),
    ),
  ];
}

/**
 * What the running and suspended items wait for on the bus, read from the
 * Coordinator's tables (read-only); null when the database holds none yet.
 * A schema of another version is refused as the read commands refuse it.
 */
async function readWaits(url: string, now: number): Promise<BusWait[] | null> {
  const opened = await openPostgresForReading(url, 'coordinator status');
  try {
    if ((await pgSchemaVersion(opened.pool, 'coordinator')) === 0) return null;
    const store = await PostgresCoordinatorStore.open(opened.pool, { readOnly: true });
    return await readBusWaits(store, now);
  } finally {
    await opened.close();
  }
}

function statusJson(database: string, status: LeaseStatus): Record<string, unknown> {
  const holder = status.holder;
  return {
    database,
    now: iso(status.now),
    epoch: status.epoch,
    leader:
      holder === null
        ? null
        : {
            holder: holder.holder,
            pid: holder.pid,
            host: holder.host,
            epoch: holder.epoch,
            since: iso(holder.since),
            renewedAt: iso(holder.renewedAt),
            expiresAt: iso(holder.expiresAt),
            processStart: iso(holder.processStart),
            live: holder.live,
          },
    standbys: status.standbys.map((s) => ({
      id: s.id,
      pid: s.pid,
      host: s.host,
      processStart: iso(s.processStart),
      firstSeen: iso(s.firstSeen),
      lastSeen: iso(s.lastSeen),
    })),
  };
}

function statusLines(database: string, status: LeaseStatus): string[] {
  const lines = [`database  ${database}`];
  const holder = status.holder;
  if (holder === null) {
    lines.push('leader    none: no Coordinator has taken the lease yet');
  } else {
    const facts = `pid ${holder.pid} on ${holder.host}, epoch ${holder.epoch}, since ${formatEpoch(holder.since)}`;
    if (holder.live) {
      lines.push(
        `leader    ${facts}`,
        `          renewed ${formatDuration(Math.max(0, status.now - holder.renewedAt))} ago, holds for ${formatDuration(holder.expiresAt - status.now)} more (id ${holder.holder})`,
      );
    } else {
      lines.push(
        `leader    none: the lease lapsed ${formatDuration(status.now - holder.expiresAt)} ago (last held by ${facts}); a standby takes it at its next look`,
      );
    }
  }
  if (status.standbys.length === 0) {
    lines.push('standbys  none seen');
    return lines;
  }
  lines.push('standbys', '');
  lines.push(
    ...renderTable(
      [
        { header: 'pid', align: 'right' },
        { header: 'host' },
        { header: 'last seen' },
        { header: 'ago', align: 'right' },
        { header: 'id' },
      ],
      status.standbys.map((s) => [
        String(s.pid),
        s.host,
        formatEpoch(s.lastSeen),
        formatDuration(Math.max(0, status.now - s.lastSeen)),
        s.id,
      ]),
    ),
  );
  return lines;
}

class StatusFailure extends Error {}

/** `switchboard coordinator status`: resolves with the exit code. */
export async function runCoordinatorStatus(argv: string[]): Promise<number> {
  let flags: Flags;
  try {
    flags = parseFlags(argv);
  } catch (error) {
    if (error instanceof CliUsageError) return reportUsageError('coordinator status', error, COORDINATOR_STATUS_USAGE);
    throw error;
  }
  const database = redactPostgresUrl(flags.db);
  let connection: PgConnection | undefined;
  try {
    connection = await connectPostgres(flags.db, (message) => new StatusFailure(message));
    const status = await readLeaseStatus(connection);
    if (status === undefined) {
      process.stderr.write(
        `switchboard coordinator status: ${database} holds no leader lease (no coordinator_lease table): no Coordinator has taken the lease on this database yet\n`,
      );
      return 1;
    }
    const waits = await readWaits(flags.db, Date.now());
    const out = flags.json
      ? JSON.stringify({ ...statusJson(database, status), waiting: waits === null ? null : waits.map(waitJson) })
      : [...statusLines(database, status), '', ...waitingLines(waits)].join('\n');
    process.stdout.write(`${out}\n`);
    return 0;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`switchboard coordinator status: ${message.replaceAll(flags.db, database)}\n`);
    // A lease of a newer version, as the read commands do for tables of a newer version.
    return error instanceof SchemaVersionError ? 2 : 1;
  } finally {
    await connection?.end();
  }
}
