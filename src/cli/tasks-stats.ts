import { statSync } from 'node:fs';
import { A2A_TABLES } from '../persistence/a2a/schema.js';
import { type FileSpace, fileSpace } from '../persistence/a2a/space.js';
import { type FlagSpec, booleanFlag, parseCommandArgs, stringFlag } from './command-args.js';
import { openExistingDatabase, requireComponent } from './read-database.js';
import { renderTable } from './table.js';

/** `switchboard tasks stats`: the rows and bytes of each broker table (read-only). */

export const TASKS_STATS_USAGE = `Usage: switchboard tasks stats --db PATH [--json]

The rows and bytes of each table of the broker's file (with its indexes),
the file's size, its free pages and its auto-vacuum mode. Bytes are exact
(SQLite's dbstat) where the SQLite build has it, else shares of the used
pages by the rows' payload ("source": "pages"). The file is opened
read-only: a running broker is not disturbed.

  --db PATH   the broker's SQLite file (required; never created)
  --json      {"db","fileBytes","walBytes","source","pageSize","pageCount",
              "freePages","autoVacuum","tables":[{"table","rows",
              "tableBytes","indexBytes","payloadBytes"}]}

Exit status: 0 on success; 2 for a usage error or a file without a broker.`;

/** Every flag of `tasks stats` (each is documented in its --help). */
export const TASKS_STATS_FLAGS: FlagSpec = {
  db: { type: 'string' },
  json: { type: 'boolean' },
};

/** Runs `tasks stats`; a usage error is thrown as `CliUsageError` (the caller reports it). */
export function runTasksStats(argv: string[]): number {
  const args = parseCommandArgs(argv, TASKS_STATS_FLAGS, 0);
  const opened = openExistingDatabase(stringFlag(args, 'db'), 'read');
  let space: FileSpace;
  try {
    requireComponent(opened, 'a2a', 'A2A broker tables');
    space = opened.db.transaction(() => fileSpace(opened.db, A2A_TABLES)).deferred();
  } finally {
    opened.db.close();
  }
  const fileBytes = statSync(opened.path).size;
  const walBytes = sizeOf(`${opened.path}-wal`);
  if (booleanFlag(args, 'json')) {
    process.stdout.write(`${JSON.stringify({ db: opened.path, fileBytes, walBytes, ...space })}\n`);
    return 0;
  }
  const lines = renderTable(
    [
      { header: 'table' },
      { header: 'rows', align: 'right' },
      { header: 'table bytes', align: 'right' },
      { header: 'index bytes', align: 'right' },
      { header: 'bytes/row', align: 'right' },
    ],
    space.tables.map((t) => [
      t.table,
      t.rows.toLocaleString('en-US'),
      t.tableBytes.toLocaleString('en-US'),
      t.indexBytes.toLocaleString('en-US'),
      t.rows === 0 ? '-' : Math.round((t.tableBytes + t.indexBytes) / t.rows).toLocaleString('en-US'),
    ]),
  );
  const tasks = space.tables.find((t) => t.table === 'a2a_tasks')?.rows ?? 0;
  const used = (space.pageCount - space.freePages) * space.pageSize;
  process.stdout.write(
    [
      `${opened.path}: ${fileBytes.toLocaleString('en-US')} bytes (WAL ${walBytes.toLocaleString('en-US')}), ` +
        `${space.pageCount.toLocaleString('en-US')} pages of ${space.pageSize}, ${space.freePages.toLocaleString('en-US')} free; ` +
        `auto-vacuum ${space.autoVacuum}; bytes from ${space.source === 'dbstat' ? 'dbstat' : 'page shares (no dbstat)'}`,
      ...lines,
      tasks === 0 ? 'No tasks.' : `${Math.round(used / tasks).toLocaleString('en-US')} bytes of the file per task.`,
    ].join('\n') + '\n',
  );
  return 0;
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}
