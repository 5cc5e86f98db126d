import { addConsoleUser, ConsoleUserError, revokeConsoleUser } from '../console/console-users.js';
import { migrate } from '../persistence/kernel/migrations.js';
import { migratePg } from '../persistence/kernel/postgres-migrations.js';
import { openPgPool, safePostgresUrl } from '../persistence/kernel/postgres.js';
import {
  type ConsoleUserTable,
  postgresConsoleUsers,
  sqliteConsoleUsers,
} from '../persistence/coordinator/console-users.js';
import { COORDINATOR_PG_SCHEMA } from '../persistence/coordinator/postgres-schema.js';
import { COORDINATOR_SCHEMA } from '../persistence/coordinator/sqlite-schema.js';
import { ConsoleUserNameSchema } from '../protocol/console-api.js';
import { CliUsageError, booleanFlag, parseCommandArgs, reportUsageError, stringFlag } from './command-args.js';
import { openExistingDatabase } from './read-database.js';
import { isPostgresUrl } from './read-postgres.js';
import { formatEpoch, renderTable } from './table.js';

export const CONSOLE_USERS_USAGE = `Usage: switchboard console users add NAME --db PATH|postgres://...
       switchboard console users list --db PATH|postgres://... [--json]
       switchboard console users revoke NAME --db PATH|postgres://...

The console's users: each approver holds an access token of their own. add
mints one (32 random bytes), prints it once and stores only its SHA-256 in
the Coordinator's database (the table coord_console_users; the command
migrates the Coordinator's schema if it is older). Open the console with
#token=TOKEN: every approval or denial sent with it is that user's, and the
audit names them. revoke refuses the token from the next action on (add the
name again to give it a new one). list shows the names, when each was
added and whether it is revoked; never a token.

Options:
  --db PATH     the switchboard SQLite file (must exist), or the Coordinator's
                PostgreSQL database postgres://USER[:PASSWORD]@HOST:PORT/DB
  --json        list: one JSON object {users: [{name, createdAt, revokedAt}]}
  -h, --help    show this help

Exit status: 0 on success; 1 when the name already holds a live token (add),
is unknown or already revoked (revoke), or the database cannot be opened; 2
for a usage error.`;

const FLAGS = { db: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } as const;

/** `switchboard console users ...`: add, list, revoke. */
export async function runConsoleUsers(argv: string[]): Promise<number> {
  let action: 'add' | 'list' | 'revoke';
  let name = '';
  let db: string;
  let json: boolean;
  try {
    const args = parseCommandArgs(argv, FLAGS, 2);
    if (booleanFlag(args, 'help')) {
      process.stdout.write(`${CONSOLE_USERS_USAGE}\n`);
      return 0;
    }
    const [verb, who] = args.positionals;
    if (verb !== 'add' && verb !== 'list' && verb !== 'revoke') {
      throw new CliUsageError(`console users takes add NAME, list or revoke NAME (got '${verb ?? ''}')`);
    }
    action = verb;
    if (action === 'list') {
      if (who !== undefined) throw new CliUsageError(`console users list takes no name (got '${who}')`);
    } else {
      const parsed = ConsoleUserNameSchema.safeParse(who);
      if (who === undefined) throw new CliUsageError(`console users ${action} needs a NAME`);
      if (!parsed.success) throw new CliUsageError(`bad NAME '${who}': ${parsed.error.issues[0]?.message}`);
      name = parsed.data;
    }
    json = booleanFlag(args, 'json');
    if (json && action !== 'list') throw new CliUsageError('--json goes with list only');
    const given = stringFlag(args, 'db');
    if (given === undefined)
      throw new CliUsageError('--db is required: the database of the Coordinator the console shows');
    db = given;
  } catch (error) {
    if (error instanceof CliUsageError) return reportUsageError('console users', error, CONSOLE_USERS_USAGE);
    throw error;
  }
  let opened: { users: ConsoleUserTable; close(): Promise<void> };
  try {
    opened = await openUsers(db);
  } catch (error) {
    if (error instanceof CliUsageError) return reportUsageError('console users', error, CONSOLE_USERS_USAGE);
    process.stderr.write(`switchboard console users: ${(error as Error).message}\n`);
    return 1;
  }
  try {
    if (action === 'add') {
      const token = await addConsoleUser(opened.users, name);
      process.stdout.write(
        `console user ${name} added; their access token (shown only now, stored only as its SHA-256):\n${token}\nOpen the console's address with #token=${token}\n`,
      );
    } else if (action === 'revoke') {
      await revokeConsoleUser(opened.users, name);
      process.stdout.write(`console user ${name} revoked: their token is refused from now on\n`);
    } else {
      const users = await opened.users.list();
      if (json) process.stdout.write(`${JSON.stringify({ users })}\n`);
      else if (users.length === 0)
        process.stdout.write('no console users (add one: switchboard console users add NAME)\n');
      else {
        const rows = users.map((u) => [
          u.name,
          formatEpoch(u.createdAt),
          u.revokedAt === null ? 'live' : `revoked ${formatEpoch(u.revokedAt)}`,
        ]);
        process.stdout.write(
          `${renderTable([{ header: 'NAME' }, { header: 'ADDED' }, { header: 'TOKEN' }], rows).join('\n')}\n`,
        );
      }
    }
    return 0;
  } catch (error) {
    if (!(error instanceof ConsoleUserError)) throw error;
    process.stderr.write(`switchboard console users: ${error.message}\n`);
    return 1;
  } finally {
    await opened.close();
  }
}

/** The users' table, its schema migrated (the Coordinator's component, as the Coordinator would on start). */
async function openUsers(db: string): Promise<{ users: ConsoleUserTable; close(): Promise<void> }> {
  if (isPostgresUrl(db)) {
    const pool = await openPgPool(db, { max: 1, user: 'switchboard console users' });
    try {
      await migratePg(pool, COORDINATOR_PG_SCHEMA);
    } catch (error) {
      await pool.end().catch(() => {});
      throw new Error(`cannot migrate ${safePostgresUrl(db)}: ${(error as Error).message}`);
    }
    return { users: postgresConsoleUsers(pool), close: () => pool.end() };
  }
  const file = openExistingDatabase(db, 'write');
  try {
    migrate(file.db, COORDINATOR_SCHEMA);
  } catch (error) {
    file.db.close();
    throw error;
  }
  return {
    users: sqliteConsoleUsers(file.db),
    close: async () => {
      file.db.close();
    },
  };
}
