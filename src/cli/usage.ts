import { SqliteCoordinatorStore } from '../persistence/coordinator/sqlite-store.js';
import type { TreeUsage, UsageGroup, UsageGrouping } from '../workflow/records.js';
import { SchemaVersionError } from '../persistence/kernel/migrations.js';
import type { CliCommand } from './command.js';
import { branchOf, parentOf } from '../workflow/item-tree.js';
import {
  CliUsageError,
  type FlagSpec,
  booleanFlag,
  choiceFlag,
  parseCommandArgs,
  reportUsageError,
  stringFlag,
} from './command-args.js';
import { type OpenedDatabase, openExistingDatabase, requireComponent } from './read-database.js';
import { isPostgresUrl, readOnPostgres } from './read-postgres.js';
import type { ItemRecord } from '../workflow/records.js';
import { formatDuration, formatUsd, renderTable } from './table.js';

/** What `--by` takes: `item` groups by work item (`task`, the unit of accounting, is its older name). */
const BY_CHOICES = ['agent', 'model', 'item', 'task'] as const;
type By = (typeof BY_CHOICES)[number];

/** The store's grouping of a `--by` choice. */
function groupingOf(by: By): UsageGrouping {
  return by === 'item' ? 'task' : by;
}

export const USAGE_USAGE = `Usage: switchboard usage --db PATH|URL [--by agent|model|item] [--item ID] [--json]

What the Coordinator's work cost: hops, input and output tokens, cost in
US dollars and hop time (the time workers spent running hops, summed),
grouped by agent (the role that ran the hop), model, or work item,
largest cost first, with the total. By item, each group is the item's own
hops; a child work item (a parallel branch, a map element, a workflow
stage) names its parent, and "with children" is the item's rolled-up cost,
live: its hops' and every descendant's charged so far, children still
running counted. Read from the Coordinator's usage
records (one per accrual; a hop that suspended and resumed accrues twice
and counts once). The database is opened read-only.

Options:
  --db PATH          the SQLite file the Coordinator wrote (required; never
                     created), or postgres://USER[:PASSWORD]@HOST:PORT/DB:
                     the PostgreSQL database of a Coordinator run with it
  --by GROUPING      agent, model or item (default: agent; task is item's
                     older name)
  --item ID          only this work item
  --json             print {"by","groups":[{"key","hops","inputTokens",
                     "outputTokens","costUsd","elapsedMs"}],"total":{...}} on
                     stdout (--by item adds "state", "workflow", "parentId"
                     "rolledUp": the item's usage with its child work
                     items', live, beside its own hops' in the group, and
                     "rolledUpHops": the run hops of its subtree so far)
  -h, --help         show this help

Exit status: 0 on success; 1 when --item names no work item or a PostgreSQL
does not answer; 2 for a usage error or a database that is not a switchboard
database with Coordinator tables.`;

interface UsageFlags {
  db: string | undefined;
  /** As asked (the JSON's `by` says it back). */
  by: By;
  grouping: UsageGrouping;
  item: string | undefined;
  json: boolean;
}

/** Every flag the command accepts (each is documented in its --help; a test checks it). */
export const USAGE_FLAGS: FlagSpec = {
  db: { type: 'string' },
  by: { type: 'string' },
  item: { type: 'string' },
  json: { type: 'boolean' },
};

function parseFlags(argv: string[]): UsageFlags {
  const args = parseCommandArgs(argv, USAGE_FLAGS, 0);
  const by = choiceFlag(args, 'by', BY_CHOICES, 'agent');
  return {
    db: stringFlag(args, 'db'),
    by,
    grouping: groupingOf(by),
    item: stringFlag(args, 'item'),
    json: booleanFlag(args, 'json'),
  };
}

type Total = Omit<UsageGroup, 'key'>;

function sum(groups: readonly UsageGroup[]): Total {
  const total: Total = { hops: 0, inputTokens: 0, outputTokens: 0, costUsd: 0, elapsedMs: 0 };
  for (const g of groups) {
    total.hops += g.hops;
    total.inputTokens += g.inputTokens;
    total.outputTokens += g.outputTokens;
    total.costUsd += g.costUsd;
    total.elapsedMs += g.elapsedMs;
  }
  total.costUsd = Math.round(total.costUsd * 1e9) / 1e9;
  return total;
}

function report(opened: OpenedDatabase, flags: UsageFlags): number {
  const store = new SqliteCoordinatorStore(opened.db, { readOnly: true });
  const filter = flags.item === undefined ? {} : { itemId: flags.item };
  if (flags.item !== undefined && store.getItem(flags.item) === undefined) {
    process.stderr.write(`switchboard usage: no work item ${flags.item} in ${opened.path}\n`);
    return 1;
  }
  // One snapshot for the groups and the total, even while a Coordinator writes.
  const { groups, total } = opened.db
    .transaction(() => {
      const groups = store.usageBy(flags.grouping, filter);
      // A hop belongs to one work item: the per-task groups add up to the exact hop count.
      const total = sum(flags.grouping === 'task' ? groups : store.usageBy('task', filter));
      return { groups, total };
    })
    .deferred();
  const items = new Map(
    flags.grouping === 'task' ? groups.map((g) => [g.key, store.getItem(g.key)] as const) : ([] as const),
  );
  const trees = flags.grouping === 'task' ? store.treeUsage(groups.map((g) => g.key)) : new Map<string, TreeUsage>();
  return print(groups, total, items, trees, flags);
}

function print(
  groups: readonly UsageGroup[],
  total: Total,
  items: ReadonlyMap<string, ItemRecord | undefined>,
  trees: ReadonlyMap<string, TreeUsage>,
  flags: UsageFlags,
): number {
  // An item's usage with its children's: live (charged so far, children still running counted), else as they ended.
  const rolledUp = (key: string, item: ItemRecord | undefined) => trees.get(key)?.usage ?? item?.usage ?? null;
  if (flags.json) {
    const out = groups.map((g) => {
      if (flags.grouping !== 'task') return g;
      const item = items.get(g.key);
      return {
        ...g,
        state: item?.state ?? null,
        workflow: item?.workflow ?? null,
        parentId: item === undefined ? null : parentOf(item),
        rolledUp: rolledUp(g.key, item),
        rolledUpHops: trees.get(g.key)?.hops ?? null,
      };
    });
    process.stdout.write(`${JSON.stringify({ by: flags.by, groups: out, total })}\n`);
    return 0;
  }
  if (groups.length === 0) {
    process.stdout.write(`No usage recorded${flags.item === undefined ? '' : ` for work item ${flags.item}`}.\n`);
    return 0;
  }
  const numbers = (g: Total) => [
    String(g.hops),
    String(g.inputTokens),
    String(g.outputTokens),
    String(g.inputTokens + g.outputTokens),
    formatUsd(g.costUsd),
    formatDuration(g.elapsedMs),
  ];
  const extra =
    flags.grouping === 'task'
      ? [
          { header: 'state' },
          { header: 'workflow' },
          { header: 'parent' },
          { header: 'with children', align: 'right' as const },
        ]
      : [];
  const lines = renderTable(
    [
      { header: flags.grouping === 'task' ? 'work item' : flags.grouping },
      ...extra,
      { header: 'hops', align: 'right' },
      { header: 'in tok', align: 'right' },
      { header: 'out tok', align: 'right' },
      { header: 'tokens', align: 'right' },
      { header: 'cost', align: 'right' },
      { header: 'hop time', align: 'right' },
    ],
    groups.map((g) => {
      const item = items.get(g.key);
      const cells =
        flags.grouping === 'task'
          ? [
              item?.state ?? '?',
              item === undefined ? '?' : `${item.workflow.id}@${item.workflow.version}`,
              item === undefined ? '?' : parentOf(item) === null ? '-' : `${branchOf(item)} of ${parentOf(item)}`,
              item === undefined ? '?' : formatUsd(rolledUp(g.key, item)!.costUsd),
            ]
          : [];
      return [g.key, ...cells, ...numbers(g)];
    }),
    [['total', ...extra.map(() => ''), ...numbers(total)]],
  );
  process.stdout.write(`${lines.join('\n')}\n`);
  return 0;
}

/** `--db postgres://...`: the same report from the Coordinator's PostgreSQL tables. */
function reportOnPostgres(url: string, flags: UsageFlags): Promise<number> {
  return readOnPostgres(url, 'usage', async (store, opened) => {
    const filter = flags.item === undefined ? {} : { itemId: flags.item };
    if (flags.item !== undefined && (await store.readItem(flags.item)) === undefined) {
      process.stderr.write(`switchboard usage: no work item ${flags.item} in ${opened.where}\n`);
      return 1;
    }
    const groups = await store.readUsageBy(flags.grouping, filter);
    const total = sum(flags.grouping === 'task' ? groups : await store.readUsageBy('task', filter));
    const items = new Map<string, ItemRecord | undefined>();
    if (flags.grouping === 'task') for (const g of groups) items.set(g.key, await store.readItem(g.key));
    const trees =
      flags.grouping === 'task' ? await store.readTreeUsage(groups.map((g) => g.key)) : new Map<string, TreeUsage>();
    return print(groups, total, items, trees, flags);
  });
}

async function runUsage(argv: string[]): Promise<number> {
  let flags: UsageFlags;
  let opened: OpenedDatabase;
  try {
    flags = parseFlags(argv);
    if (flags.db !== undefined && isPostgresUrl(flags.db)) return await reportOnPostgres(flags.db, flags);
    opened = openExistingDatabase(flags.db, 'read');
  } catch (error) {
    if (error instanceof CliUsageError) return reportUsageError('usage', error, USAGE_USAGE);
    throw error;
  }
  try {
    requireComponent(opened, 'coordinator', 'Coordinator tables');
    return report(opened, flags);
  } catch (error) {
    if (error instanceof CliUsageError) return reportUsageError('usage', error, USAGE_USAGE);
    if (error instanceof SchemaVersionError) {
      process.stderr.write(`switchboard usage: ${error.message}\n`);
      return 2;
    }
    throw error;
  } finally {
    opened.db.close();
  }
}

export const usageCommand: CliCommand = {
  name: 'usage',
  summary: 'cost, tokens, hop time and hops, by agent, model or work item',
  usage: USAGE_USAGE,
  run: runUsage,
};
