import { createBroker } from '../actors/broker/broker.js';
import { liveOwner } from '../persistence/a2a/owner.js';
import { DURATION_SYNTAX, type PruneResult, parseDuration } from '../protocol/retention.js';
import { connect } from '../transport/client.js';
import { VERSION } from '../version.js';
import { CliUsageError, type FlagSpec, booleanFlag, parseCommandArgs, stringFlag } from './command-args.js';
import { openExistingDatabase, requireComponent } from './read-database.js';

/**
 * `switchboard tasks prune`: one prune of the tasks that ended before a
 * time, made by the broker that owns the file. A broker that owns it and
 * listens on a socket is asked there (`broker.tasks.prune`), so that the
 * prune runs between its calls; a file no live broker owns is opened by a
 * broker in this process for the prune, then closed.
 */

export const TASKS_PRUNE_USAGE = `Usage: switchboard tasks prune --ended-before DURATION|DATE --db PATH [--dry-run] [--json]

Removes the tasks that ended (completed, canceled, failed, rejected) before
a time, with their messages, artifacts, push configs and events, in small
batches between the broker's calls; then gives the freed space back to the
file system. A task named by a live task's history, or of a Coordinator
work item that has not ended, is kept. The broker that owns the file does
it (asked on its socket); with no broker running, one is opened here for
the prune. A party's event log is cut at the newest event of a removed
task: a2a.events.since from an older cursor is refused (A2A_EVENTS_PRUNED).

  --ended-before DURATION|DATE
                 a duration back from now: a whole number and a unit,
                 ms, s, m, h, d or w (90s, 12h, 30d, 2w); or a date
                 (2026-01-31, UTC midnight) or an instant with its zone
                 (2026-01-31T12:00:00Z)
  --db PATH      the broker's SQLite file (required; never created)
  --dry-run      count what would be removed; remove nothing
  --json         {"db","via","endedBefore","dryRun","removed":{"tasks",
                 "messages","artifacts","pushConfigs","events"},"kept":
                 {"referenced","workItems"},"batches","freedPages"}

Exit status: 0 on success; 1 when the file's broker cannot be reached (it
serves no socket) or fails; 2 for a usage error (a bad duration or date
changes nothing).`;

/** Every flag of `tasks prune` (each is documented in its --help). */
export const TASKS_PRUNE_FLAGS: FlagSpec = {
  'ended-before': { type: 'string' },
  db: { type: 'string' },
  'dry-run': { type: 'boolean' },
  json: { type: 'boolean' },
};

interface PruneFlags {
  db: string | undefined;
  endedBefore: string;
  dryRun: boolean;
  json: boolean;
}

/** `--ended-before`: a duration back from `now`, or a date or instant; the instant as the broker writes it. */
export function endedBeforeFlag(value: string | undefined, now: number): string {
  if (value === undefined) throw new CliUsageError('--ended-before DURATION|DATE is required');
  const ms = parseDuration(value);
  if (ms !== undefined) return new Date(now - ms).toISOString();
  if (
    /^[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,3})?)?(Z|[+-][0-9]{2}:[0-9]{2}))?$/.test(value)
  ) {
    const at = Date.parse(value.length === 10 ? `${value}T00:00:00Z` : value);
    if (!Number.isNaN(at)) return new Date(at).toISOString();
  }
  throw new CliUsageError(
    `--ended-before takes a duration (${DURATION_SYNTAX}) or a date (2026-01-31) or instant with its zone (2026-01-31T12:00:00Z), not '${value}'`,
  );
}

function parseFlags(argv: string[]): PruneFlags {
  const args = parseCommandArgs(argv, TASKS_PRUNE_FLAGS, 0);
  return {
    db: stringFlag(args, 'db'),
    endedBefore: endedBeforeFlag(stringFlag(args, 'ended-before'), Date.now()),
    dryRun: booleanFlag(args, 'dry-run'),
    json: booleanFlag(args, 'json'),
  };
}

/** Runs `tasks prune`; a usage error is thrown as `CliUsageError` (the caller reports it). */
export async function runTasksPrune(argv: string[]): Promise<number> {
  const flags = parseFlags(argv);
  const opened = openExistingDatabase(flags.db, 'read');
  let owner: ReturnType<typeof liveOwner>;
  try {
    requireComponent(opened, 'a2a', 'A2A broker tables');
    owner = liveOwner(opened.db, opened.path);
  } finally {
    opened.db.close();
  }
  const params = { endedBefore: flags.endedBefore, dryRun: flags.dryRun };
  let result: PruneResult;
  let via: 'socket' | 'file';
  try {
    if (owner !== undefined) {
      if (owner.socket === null) {
        process.stderr.write(
          `switchboard tasks prune: ${opened.path} is owned by a broker that serves no socket (pid ${owner.pid} on ${owner.host}): ` +
            'stop it and prune again, or run it with --listen (or --task-retention)\n',
        );
        return 1;
      }
      const client = await connect({
        socket: owner.socket,
        client: { name: 'switchboard-tasks-prune', version: VERSION },
      });
      try {
        result = (await client.call('broker.tasks.prune', params)) as PruneResult;
      } finally {
        await client.close();
      }
      via = 'socket';
    } else {
      const broker = createBroker({ path: opened.path });
      try {
        result = await broker.pruneTasks(params);
      } finally {
        await broker.close();
      }
      via = 'file';
    }
  } catch (error) {
    const err = error as Error & { code?: unknown };
    process.stderr.write(
      `switchboard tasks prune: ${err.message}${err.code === undefined ? '' : ` (${String(err.code)})`}\n`,
    );
    return 1;
  }
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ db: opened.path, via, ...result })}\n`);
    return 0;
  }
  process.stdout.write(`${describePrune(result, opened.path, via).join('\n')}\n`);
  return 0;
}

function count(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;
}

function describePrune(result: PruneResult, path: string, via: 'socket' | 'file'): string[] {
  const r = result.removed;
  const verb = result.dryRun ? 'Would remove' : 'Removed';
  const lines = [
    `${verb} ${count(r.tasks, 'task')} that ended before ${result.endedBefore} from ${path}` +
      ` (${via === 'socket' ? 'by its running broker' : 'the file had no running broker'}):`,
    `  ${count(r.messages, 'message')}, ${count(r.artifacts, 'artifact')}, ${count(r.pushConfigs, 'push config')}, ${count(r.events, 'event')}`,
  ];
  const kept = result.kept.referenced + result.kept.workItems;
  if (kept > 0) {
    lines.push(
      `Kept ${count(kept, 'ended task')}: ${result.kept.referenced} named by a live task's history, ` +
        `${result.kept.workItems} of work items that have not ended`,
    );
  }
  if (!result.dryRun) lines.push(`Gave back ${count(result.freedPages, 'page')} to the file system.`);
  return lines;
}
