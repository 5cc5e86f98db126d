import { deadLetterCounts } from '../bus/sqlite/dead-letter-roles.js';
import type { RedisQueue } from '../bus/redis/queue.js';
import { SqliteQueue } from '../bus/sqlite/queue.js';
import type { DeadLetter, WorkQueue } from '../bus/work-queue.js';
import { SchemaVersionError } from '../persistence/kernel/migrations.js';
import { RoleSchema } from '../protocol/work-envelope.js';
import {
  BUS_FLAGS,
  type BusChoice,
  describeBus,
  openBus,
  parseBusChoice,
  requireRedisBusWithPostgres,
} from './bus-option.js';
import type { CliCommand } from './command.js';
import {
  CliUsageError,
  type FlagSpec,
  booleanFlag,
  countFlag,
  parseCommandArgs,
  reportUsageError,
  stringFlag,
  stringListFlag,
  databaseFileFlag,
} from './command-args.js';
import { type OpenedDatabase, openExistingDatabase, requireComponent } from './read-database.js';
import { formatEpoch, renderTable } from './table.js';

export const DEFAULT_REPLAY_BATCH = 500;
const LIST_PAGE = 10_000;

export const DLQ_USAGE = `Usage: switchboard dlq list --db PATH|--bus URL [--role R] [--limit N] [--json]
       switchboard dlq show ID --db PATH|--bus URL [--role R] [--json]
       switchboard dlq replay --db PATH|--bus URL --role R [--id ID ...] [--batch N] [--json]

The dead-letter queue of the work bus: messages that failed past their
retry policy (a non-retryable error, attempts exhausted, a lease that kept
expiring). The bus is the SQLite one in the --db file, or with --bus the
Redis Streams bus (where a Coordinator on PostgreSQL keeps its dead
letters: its --db postgres://... needs the --bus it runs with).

  list     the dead letters, oldest first: id, role, deliveries, the last
           error, when it died, and the hop it carried (work item, hop,
           attempt). Reads only.
  show     one dead letter in full: its role, deliveries, times, keys,
           last error and the envelope it carried. Reads only.
  replay   moves dead letters of one role back to ready with a fresh
           attempt count (all of the role's, or the ones named by --id), a
           batch per transaction; a running worker of the role picks them up.
           Prints progress on stderr when there is more than one batch. With
           --id, every id must be a dead letter of the role, or nothing is
           replayed.

Options:
  --db PATH    the SQLite file holding the work bus (never created); or a
               Coordinator's postgres://... URL, which needs --bus
  --bus URL    the Redis Streams bus: redis://HOST:PORT[/DB] (the dead
               letters are read and replayed there; --db is then optional)
  --bus-prefix NAME
               key prefix of the deployment on Redis (default switchboard)
  --role R     the role (queue); list, show: only this role (default: every
               role with dead letters); replay: required
  --id ID      replay: a message id as list shows it; repeat for several
               (default: every dead letter of the role)
  --limit N    list: at most N letters per role (default 100, at most 10000)
  --batch N    replay: letters per transaction (default ${DEFAULT_REPLAY_BATCH})
  --json       list: {"counts":{role:n},"deadLetters":[{id,role,deliveries,
               lastError,publishedAt,deadAt,taskKey,idempotencyKey,envelope}]};
               show: {"deadLetter":{...as in list}};
               replay: {"role","replayed","ids"}
  -h, --help   show this help

Exit status: 0 on success; 1 when show or --id names a message that is not
a dead letter (of the role; nothing is replayed) or Redis does not answer;
2 for a usage error or a file that is not a switchboard database with a
work bus.`;

interface DlqFlags {
  sub: 'list' | 'show' | 'replay';
  /** show: the message id. */
  id: string | undefined;
  bus: BusChoice;
  role: string | undefined;
  ids: string[] | undefined;
  limit: number;
  batch: number;
  json: boolean;
}

/** Every flag the command accepts (each is documented in its --help; a test checks it). */
export const DLQ_FLAGS: FlagSpec = {
  db: { type: 'string' },
  ...BUS_FLAGS,
  role: { type: 'string' },
  id: { type: 'string', multiple: true },
  limit: { type: 'string' },
  batch: { type: 'string' },
  json: { type: 'boolean' },
};

const MESSAGE_ID = /^[0-9]{1,15}$/;

function parseFlags(argv: string[]): DlqFlags {
  const args = parseCommandArgs(argv, DLQ_FLAGS, 2);
  const [sub, id] = args.positionals;
  if (sub === undefined) throw new CliUsageError("missing subcommand: 'list', 'show ID' or 'replay'");
  if (sub !== 'list' && sub !== 'show' && sub !== 'replay')
    throw new CliUsageError(`unknown subcommand '${sub}' (expected list, show or replay)`);
  if (sub === 'show') {
    if (id === undefined) throw new CliUsageError('show needs a message id as list shows it: dlq show ID --db PATH');
    if (!MESSAGE_ID.test(id)) throw new CliUsageError(`show needs a message id as 'dlq list' shows it (got '${id}')`);
  } else if (id !== undefined) throw new CliUsageError(`unexpected argument '${id}'`);
  const role = stringFlag(args, 'role');
  if (role !== undefined) {
    const parsed = RoleSchema.safeParse(role);
    if (!parsed.success) throw new CliUsageError(`--role: ${parsed.error.issues[0]?.message ?? 'not a role'}`);
  }
  const ids = stringListFlag(args, 'id');
  for (const id of ids ?? []) {
    if (!MESSAGE_ID.test(id)) throw new CliUsageError(`--id must be a message id as 'dlq list' shows it (got '${id}')`);
  }
  if (sub !== 'replay') {
    if (ids !== undefined) throw new CliUsageError('--id is for replay');
    if (args.values.batch !== undefined) throw new CliUsageError('--batch is for replay');
  } else if (role === undefined) throw new CliUsageError('replay needs --role R');
  if (sub !== 'list' && args.values.limit !== undefined) throw new CliUsageError('--limit is for list');
  const db = databaseFileFlag(args);
  if (db === undefined && stringFlag(args, 'bus') === undefined) {
    throw new CliUsageError('--db PATH is required (or --bus redis://HOST:PORT for the dead letters of a Redis bus)');
  }
  requireRedisBusWithPostgres(args, db);
  return {
    sub,
    id,
    bus: parseBusChoice(args, db),
    role,
    ids: ids === undefined ? undefined : [...new Set(ids)],
    limit: countFlag(args, 'limit', 100, LIST_PAGE),
    batch: countFlag(args, 'batch', DEFAULT_REPLAY_BATCH, LIST_PAGE),
    json: booleanFlag(args, 'json'),
  };
}

/** The bus whose dead letters are read: the SQLite file's, or Redis's. */
interface DeadLetterSource {
  queue: WorkQueue;
  /** Roles with dead letters and how many, by role name. */
  counts(): Promise<{ role: string; count: number }[]>;
  close(): Promise<void>;
}

function sqliteSource(opened: OpenedDatabase): DeadLetterSource {
  const queue = new SqliteQueue({ database: opened.db });
  return { queue, counts: async () => deadLetterCounts(opened.db), close: () => queue.close() };
}

function redisSource(queue: RedisQueue): DeadLetterSource {
  return {
    queue,
    counts: async () =>
      (await queue.statsOfAllRoles())
        .filter((stats) => stats.deadLetters > 0)
        .map((stats) => ({ role: stats.role, count: stats.deadLetters })),
    close: () => queue.close(),
  };
}

function letterJson(letter: DeadLetter): Record<string, unknown> {
  return {
    id: letter.id,
    role: letter.role,
    deliveries: letter.deliveries,
    lastError: letter.lastError,
    publishedAt: letter.publishedAt,
    deadAt: letter.deadAt,
    taskKey: letter.taskKey ?? null,
    idempotencyKey: letter.idempotencyKey,
    envelope: letter.envelope,
  };
}

/** What the letter carried, without its body: kind, work item, hop, attempt. */
function carried(letter: DeadLetter): string {
  const h = letter.envelope.headers;
  const what = letter.envelope.kind === 'result' ? `result (${letter.envelope.outcome})` : 'work';
  return `${what} item ${h.runId} hop ${h.hop}#${h.attempt}`;
}

async function list(source: DeadLetterSource, flags: DlqFlags): Promise<number> {
  const { queue } = source;
  const counts = (await source.counts()).filter((c) => flags.role === undefined || c.role === flags.role);
  const letters: DeadLetter[] = [];
  for (const { role } of counts) letters.push(...(await queue.deadLetters.list(role, { limit: flags.limit })));
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify({
        counts: Object.fromEntries(counts.map((c) => [c.role, c.count])),
        deadLetters: letters.map(letterJson),
      })}\n`,
    );
    return 0;
  }
  const total = counts.reduce((n, c) => n + c.count, 0);
  if (total === 0) {
    process.stdout.write(`No dead letters${flags.role === undefined ? '' : ` for role ${flags.role}`}.\n`);
    return 0;
  }
  const summary = counts.map((c) => `${c.role}: ${c.count}`).join(', ');
  process.stdout.write(`${total} dead letter${total === 1 ? '' : 's'} (${summary})\n\n`);
  const lines = renderTable(
    [
      { header: 'id', align: 'right' },
      { header: 'role' },
      { header: 'deliveries', align: 'right' },
      { header: 'dead at' },
      { header: 'carried' },
      { header: 'last error', maxWidth: 80 },
    ],
    letters.map((l) => [
      l.id,
      l.role,
      String(l.deliveries),
      formatEpoch(l.deadAt),
      carried(l),
      `${l.lastError.type}: ${l.lastError.message}`,
    ]),
  );
  process.stdout.write(`${lines.join('\n')}\n`);
  if (letters.length < total) {
    process.stdout.write(`\nShowing ${letters.length} of ${total} (at most ${flags.limit} per role: --limit N).\n`);
  }
  return 0;
}

/** The dead letter `id` (of `role`, or of any role), paging through each role's letters. */
async function findLetter(
  source: DeadLetterSource,
  id: string,
  role: string | undefined,
): Promise<DeadLetter | undefined> {
  const roles = role === undefined ? (await source.counts()).map((c) => c.role) : [role];
  for (const r of roles) {
    for (let offset = 0; ; offset += LIST_PAGE) {
      const page = await source.queue.deadLetters.list(r, { limit: LIST_PAGE, offset });
      const found = page.find((letter) => letter.id === id);
      if (found !== undefined) return found;
      if (page.length < LIST_PAGE) break;
    }
  }
  return undefined;
}

async function show(source: DeadLetterSource, flags: DlqFlags, where: string): Promise<number> {
  const id = flags.id!;
  const letter = await findLetter(source, id, flags.role);
  if (letter === undefined) {
    process.stderr.write(
      `switchboard dlq: no dead letter ${id}${flags.role === undefined ? '' : ` of role ${flags.role}`} in ${where} (see 'switchboard dlq list')\n`,
    );
    return 1;
  }
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ deadLetter: letterJson(letter) })}\n`);
    return 0;
  }
  const out = [
    `Dead letter ${letter.id}`,
    `  role:        ${letter.role}`,
    `  deliveries:  ${letter.deliveries}`,
    `  published:   ${formatEpoch(letter.publishedAt)}`,
    `  dead at:     ${formatEpoch(letter.deadAt)}`,
    `  carried:     ${carried(letter)}`,
    `  idempotency: ${letter.idempotencyKey}`,
    `  task key:    ${letter.taskKey ?? '-'}`,
    `  last error:  ${letter.lastError.type}: ${letter.lastError.message}`,
    '',
    'Envelope:',
    ...JSON.stringify(letter.envelope, null, 2)
      .split('\n')
      .map((line) => `  ${line}`),
  ];
  process.stdout.write(`${out.join('\n')}\n`);
  return 0;
}

async function replay(source: DeadLetterSource, flags: DlqFlags): Promise<number> {
  const role = flags.role!;
  const { queue } = source;
  const progress = (done: number, total: number) => {
    if (!flags.json) process.stderr.write(`  replayed ${done}/${total}\n`);
  };
  let ids: string[];
  if (flags.ids !== undefined) {
    // Every id must be a dead letter of the role before anything moves.
    const wanted = new Set(flags.ids);
    const found = new Set<string>();
    for (let offset = 0; found.size < wanted.size; offset += LIST_PAGE) {
      const page = await queue.deadLetters.list(role, { limit: LIST_PAGE, offset });
      for (const letter of page) if (wanted.has(letter.id)) found.add(letter.id);
      if (page.length < LIST_PAGE) break;
    }
    const missing = flags.ids.filter((id) => !found.has(id));
    if (missing.length > 0) {
      process.stderr.write(
        `switchboard dlq: not dead letters of role ${role}: ${missing.join(', ')} (nothing was replayed; see 'switchboard dlq list --role ${role}')\n`,
      );
      return 1;
    }
    ids = flags.ids;
  } else {
    ids = [];
  }
  const total =
    flags.ids !== undefined ? ids.length : ((await source.counts()).find((c) => c.role === role)?.count ?? 0);
  if (total === 0) {
    if (flags.json) process.stdout.write(`${JSON.stringify({ role, replayed: 0, ids: [] })}\n`);
    else process.stdout.write(`No dead letters for role ${role}.\n`);
    return 0;
  }
  const many = total > flags.batch;
  const replayed: string[] = [];
  if (flags.ids !== undefined) {
    for (let i = 0; i < ids.length; i += flags.batch) {
      const batch = ids.slice(i, i + flags.batch);
      await queue.deadLetters.replay(role, { ids: batch });
      replayed.push(...batch);
      if (many) progress(replayed.length, total);
    }
  } else {
    // The letters dead at the start, oldest first, a batch at a time; one
    // that dies again while this runs is not replayed twice.
    while (replayed.length < total) {
      const page = await queue.deadLetters.list(role, { limit: Math.min(flags.batch, total - replayed.length) });
      if (page.length === 0) break;
      const batch = page.map((l) => l.id);
      const n = await queue.deadLetters.replay(role, { ids: batch });
      if (n === 0) break;
      replayed.push(...batch);
      if (many) progress(replayed.length, total);
    }
  }
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ role, replayed: replayed.length, ids: replayed })}\n`);
  } else {
    process.stdout.write(
      `Replayed ${replayed.length} dead letter${replayed.length === 1 ? '' : 's'} of role ${role}: ready for delivery with a fresh attempt count.\n`,
    );
  }
  return 0;
}

async function runDlq(argv: string[]): Promise<number> {
  let flags: DlqFlags;
  let opened: OpenedDatabase | undefined;
  try {
    flags = parseFlags(argv);
    if (flags.bus.kind === 'sqlite')
      opened = openExistingDatabase(flags.bus.path, flags.sub === 'replay' ? 'write' : 'read');
  } catch (error) {
    if (error instanceof CliUsageError) return reportUsageError('dlq', error, DLQ_USAGE);
    throw error;
  }
  let source: DeadLetterSource | undefined;
  try {
    if (opened !== undefined) {
      requireComponent(opened, 'bus', 'work bus');
      source = sqliteSource(opened);
    } else {
      try {
        source = redisSource((await openBus(flags.bus)) as RedisQueue);
      } catch (error) {
        process.stderr.write(`switchboard dlq: cannot open the bus: ${(error as Error).message}\n`);
        return 1;
      }
    }
    const where = opened?.path ?? describeBus(flags.bus);
    if (flags.sub === 'list') return await list(source, flags);
    if (flags.sub === 'show') return await show(source, flags, where);
    return await replay(source, flags);
  } catch (error) {
    if (error instanceof CliUsageError) return reportUsageError('dlq', error, DLQ_USAGE);
    if (error instanceof SchemaVersionError) {
      process.stderr.write(`switchboard dlq: ${error.message}\n`);
      return 2;
    }
    throw error;
  } finally {
    await source?.close();
    opened?.db.close();
  }
}

export const dlqCommand: CliCommand = {
  name: 'dlq',
  summary: "list, show or replay the work bus's dead letters (dlq list|show|replay)",
  usage: DLQ_USAGE,
  run: runDlq,
};
