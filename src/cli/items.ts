import { SqliteCoordinatorStore } from '../persistence/coordinator/sqlite-store.js';
import { WORKFLOW_RUN_STATES } from '../protocol/workflow.js';
import type { ItemOutput } from '../protocol/item-output.js';
import type { Part } from '../protocol/parts.js';
import { outputSummary } from '../workflow/item-output.js';
import type { HopRecord, ItemRecord, ItemState, TreeUsage } from '../workflow/records.js';
import type { CliCommand } from './command.js';
import {
  ITEM_CONTROL_HELP,
  ITEM_CONTROL_OPTIONS,
  ITEM_CONTROL_USAGE,
  parseControlFlags,
  runItemControl,
} from './item-controls.js';
import { branchOf, ownUsage, parentOf, siblingOrder, subtreeHops, treeOrder } from '../workflow/item-tree.js';
import {
  CliUsageError,
  type FlagSpec,
  booleanFlag,
  choiceFlag,
  countFlag,
  listOrShow,
  parseCommandArgs,
  reportUsageError,
  stringFlag,
} from './command-args.js';
import { type OpenedDatabase, openExistingDatabase, requireComponent } from './read-database.js';
import { isPostgresUrl, readOnPostgres } from './read-postgres.js';
import { formatDuration, formatEpoch, formatUsd, renderTable } from './table.js';
import { hopErrorLines } from './hop-errors.js';
import { sqliteBusLookup } from '../bus/sqlite/message-states.js';
import { type BusMessageLookup, type BusWait, busWaitsOf } from '../workflow/bus-waits.js';

const MAX_LIMIT = 100_000;

export const ITEMS_USAGE = `Usage: switchboard items list --db PATH|URL [--state S] [--limit N] [--tree] [--json]
       switchboard items show ID --db PATH|URL [--json]
${ITEM_CONTROL_USAGE}

The Coordinator's work items: state, workflow, stage, hops, cost, elapsed
time and what each ended with (its output: the last stage's parts and
artifacts, or the failure, or the cancellation). Outputs are kept with the
items: the Context Engine's retention never forgets them. The database is
opened read-only and never migrated, so it can be read beside a running
Coordinator.

  list   every work item, oldest first: id, state, workflow, stage, hops,
         tokens, cost, elapsed time, and its output in a line
  show   one work item: state, workflow, stage, usage, times, what it
         waits for on the bus while running or suspended (each hop or
         query out: its role, since when and for how long and, on the
         file's own SQLite bus, whether it is queued, held by a worker,
         dead-lettered or missing), failure or
         approval, its hops (state, model, tokens, cost, time), its child
         work items (parallel branches, map elements, workflow stages) and
         its whole output. An item's usage is its rollup: its own hops'
         and its children's as they end; show also prints its own, and
         "rolled up", live: its hops' and every descendant's charged so
         far, while children still run.
${ITEM_CONTROL_HELP}

Options:
  --db PATH      the SQLite file the Coordinator wrote (required; never
                 created), or postgres://USER[:PASSWORD]@HOST:PORT/DB: the
                 PostgreSQL database of a Coordinator run with that --db
  --state S      list: only items in this state: pending, running,
                 awaiting-approval, suspended, completed, failed, canceled
  --limit N      list: at most N items (default 1000)
  --tree         list: each child work item under its parent, indented
                 (in JSON each item gets "parentId" and "depth")
  --json         list: {"total","items":[item]}; show: {"item","hops",
                 "waiting":[{itemId,workflow,itemState,kind,hop,attempt,
                 stage,role,since,ageMs,timeouts,bus}],...};
                 an item is the Coordinator's record ("id","taskId",
                 "workflow","state","stage","hop","hops","usage","failure",
                 "approval","createdAt","finishedAt","output",...) with
                 "elapsedMs" (created to finished, or to now)
${ITEM_CONTROL_OPTIONS}
  -h, --help     show this help

Exit status of cancel and retry: 0 when sent (retry: when the new item was
made) or when there was nothing to do; 1 when refused (unknown item, not
failed, unknown stage, refused by the Coordinator) or the database or bus
cannot be read; 2 for a usage error.
Exit status: 0 on success; 1 when the database cannot be read (no such
file, not a switchboard database, no Coordinator tables, another schema
version, a PostgreSQL that does not answer) or show names no work item; 2
for a usage error.`;

interface ItemsFlags {
  sub: 'list' | 'show';
  id: string | undefined;
  db: string | undefined;
  state: ItemState | undefined;
  limit: number;
  tree: boolean;
  json: boolean;
}

/** Every flag the command accepts (each is documented in its --help; a test checks it). */
export const ITEMS_FLAGS: FlagSpec = {
  db: { type: 'string' },
  state: { type: 'string' },
  limit: { type: 'string' },
  tree: { type: 'boolean' },
  json: { type: 'boolean' },
};

function parseFlags(argv: string[]): ItemsFlags {
  const args = parseCommandArgs(argv, ITEMS_FLAGS, 2);
  const { sub, id } = listOrShow(args, 'a work item id', 'items');

  if (sub === 'show' && (args.values.state !== undefined || args.values.limit !== undefined || args.values.tree)) {
    throw new CliUsageError('--state, --limit and --tree are for list');
  }
  const state = args.values.state === undefined ? undefined : choiceFlag(args, 'state', WORKFLOW_RUN_STATES, 'running');
  return {
    sub,
    id,
    db: stringFlag(args, 'db'),
    state,
    limit: countFlag(args, 'limit', 1000, MAX_LIMIT),
    tree: booleanFlag(args, 'tree'),
    json: booleanFlag(args, 'json'),
  };
}

/** A database problem: exit 1 with the reason (not a usage error: the command line was right). */
class UnreadableDatabase extends Error {}

/** Opens the file read-only and the Coordinator's tables without migrating them. */
function openItems(flags: ItemsFlags): { opened: OpenedDatabase; store: SqliteCoordinatorStore } {
  let opened: OpenedDatabase;
  try {
    opened = openExistingDatabase(flags.db, 'read');
  } catch (error) {
    if (error instanceof CliUsageError && flags.db !== undefined) throw new UnreadableDatabase(error.message);
    throw error;
  }
  try {
    requireComponent(opened, 'coordinator', 'Coordinator tables');
    return { opened, store: new SqliteCoordinatorStore(opened.db, { readOnly: true }) };
  } catch (error) {
    opened.db.close();
    throw new UnreadableDatabase(`${opened.path}: ${(error as Error)?.message ?? String(error)}`);
  }
}

/** Created to finished (or to now, while it runs). */
function elapsedMs(item: ItemRecord, now: number): number {
  return Math.max(0, (item.finishedAt ?? now) - item.createdAt);
}

/** Its tokens; a child's from its live subtree usage (`tree`) when there is one. */
function tokens(item: ItemRecord | HopRecord, tree?: TreeUsage): string {
  const usage = tree?.usage ?? item.usage;
  return String(usage.inputTokens + usage.outputTokens);
}

function cut(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function partLine(part: Part): string {
  switch (part.kind) {
    case 'text':
      return part.text;
    case 'data':
      return JSON.stringify(part.data);
    case 'file':
      return `[file ${part.file.name ?? ''}${part.file.mimeType === undefined ? '' : ` ${part.file.mimeType}`}${part.file.uri === undefined ? `, ${part.file.bytes?.length ?? 0} base64 chars` : ` ${part.file.uri}`}]`;
  }
}

/** An output in full (show). */
export function outputLines(output: ItemOutput | null): string[] {
  if (output === null) return ['Output: none yet (the item has not ended)'];
  const at = `stage ${output.stage ?? '-'}, hop ${output.hop}`;
  if (output.state === 'failed') {
    return [
      `Output (failed at ${at}):`,
      `  code:       ${output.code}`,
      `  message:    ${output.message}`,
      ...(output.error === null ? [] : [`  hop error:  ${output.error.type}: ${output.error.message}`]),
    ];
  }
  if (output.state === 'canceled') {
    return [
      `Output (canceled at ${at}):`,
      `  by:         ${output.by ?? '-'}`,
      `  reason:     ${output.reason ?? '-'}`,
    ];
  }
  const out = [`Output (completed at ${at}${output.role === null ? '' : `, by ${output.role}`}):`];
  if (output.parts.length === 0) out.push('  (no parts)');
  for (const part of output.parts)
    out.push(
      ...partLine(part)
        .split('\n')
        .map((l) => `  ${l}`),
    );
  if (output.artifacts.length > 0) {
    out.push('', `Artifacts (${output.artifacts.length}):`);
    for (const a of output.artifacts) {
      out.push(`  ${a.artifactId}${a.name === undefined ? '' : ` (${a.name})`}:`);
      for (const part of a.parts)
        out.push(
          ...partLine(part)
            .split('\n')
            .map((l) => `    ${l}`),
        );
    }
  }
  return out;
}

function listItems(opened: OpenedDatabase, store: SqliteCoordinatorStore, flags: ItemsFlags): number {
  const filter = flags.state === undefined ? {} : { state: flags.state };
  // One snapshot for the rows and the count, even while a Coordinator writes.
  const { items, total } = opened.db
    .transaction(() => ({ items: store.listItems({ ...filter, limit: flags.limit }), total: store.countItems(filter) }))
    .deferred();
  return printList(items, total, flags);
}

function printList(listed: readonly ItemRecord[], total: number, flags: ItemsFlags): number {
  const now = Date.now();
  const rows = flags.tree ? treeOrder(listed) : listed.map((item) => ({ item, depth: 0 }));
  const items = rows.map((r) => r.item);
  if (flags.json) {
    const out = rows.map(({ item, depth }) => ({
      ...item,
      elapsedMs: elapsedMs(item, now),
      ...(flags.tree ? { parentId: parentOf(item), depth } : {}),
    }));
    process.stdout.write(`${JSON.stringify({ total, items: out })}\n`);
    return 0;
  }
  if (items.length === 0) {
    process.stdout.write(`No work items${flags.state === undefined ? '' : ` in state ${flags.state}`}.\n`);
    return 0;
  }
  const lines = renderTable(
    [
      { header: 'work item' },
      { header: 'state' },
      { header: 'workflow' },
      { header: 'stage' },
      { header: 'hops', align: 'right' },
      { header: 'tokens', align: 'right' },
      { header: 'cost', align: 'right' },
      { header: 'elapsed', align: 'right' },
      { header: 'output', maxWidth: 60 },
    ],
    rows.map(({ item, depth }) => [
      depth === 0 ? item.id : `${'  '.repeat(depth - 1)}└ ${branchOf(item) ?? ''} ${item.id}`,
      item.state,
      `${item.workflow.id}@${item.workflow.version}`,
      item.stage ?? '-',
      String(item.hops),
      tokens(item),
      formatUsd(item.usage.costUsd),
      formatDuration(elapsedMs(item, now)),
      cut(outputSummary(item.output), 60),
    ]),
  );
  process.stdout.write(`${lines.join('\n')}\n`);
  if (items.length < total) process.stdout.write(`\nShowing ${items.length} of ${total} (--limit N).\n`);
  return 0;
}

function hopTable(hops: readonly HopRecord[]): string[] {
  return renderTable(
    [
      { header: '#', align: 'right' },
      { header: 'hop', align: 'right' },
      { header: 'kind' },
      { header: 'stage' },
      { header: 'role' },
      { header: 'state' },
      { header: 'model' },
      { header: 'tokens', align: 'right' },
      { header: 'cost', align: 'right' },
      { header: 'time', align: 'right' },
      { header: 'error', maxWidth: 50 },
    ],
    hops.map((h) => [
      String(h.seq),
      String(h.hop),
      h.kind,
      h.stage,
      h.role,
      h.state,
      h.model ?? '-',
      tokens(h),
      formatUsd(h.usage.costUsd),
      formatDuration(h.usage.elapsedMs),
      h.error === null ? '' : `${h.error.type}: ${h.error.message}`,
    ]),
  );
}

function showItem(opened: OpenedDatabase, store: SqliteCoordinatorStore, flags: ItemsFlags): number {
  const id = flags.id!;
  const found = opened.db
    .transaction(() => {
      const item = store.getItem(id);
      if (item === undefined) return undefined;
      const all = store.listItems({ limit: MAX_LIMIT });
      const children = all.filter((c) => parentOf(c) === id);
      const trees = store.treeUsage([id, ...children.map((c) => c.id)]);
      return { item, hops: store.listHops(id), children, all, trees };
    })
    .deferred();
  // Where its hops' messages are: the file's own bus (a file with no bus table tells nothing).
  return printItem(found, opened.path, flags, sqliteBusLookup(opened.db, Date.now()));
}

/** Where a hop's message is, in words. */
const BUS_WORDS: Record<NonNullable<BusWait['bus']>, string> = {
  queued: 'queued, not taken yet',
  delayed: 'queued, after its retry backoff',
  held: 'held by a worker',
  dead: 'dead-lettered',
  missing: 'not on the bus (lost: its timeout publishes it again)',
};

/** One line per hop (or query) the item waits for on the bus. */
function waitingLines(waits: readonly BusWait[]): string[] {
  return waits.map((w, i) => {
    const what = w.kind === 'query' ? `query of hop ${w.hop}` : `hop ${w.hop}`;
    const where = w.bus === null ? '' : `; ${BUS_WORDS[w.bus]}`;
    return (
      `  ${i === 0 ? 'waiting:    ' : '            '}${what} (stage ${w.stage}, attempt ${w.attempt}) on role ${w.role}, ` +
      `out ${formatDuration(w.ageMs)} since ${formatEpoch(w.since)}` +
      `${w.timeouts > 0 ? `, timed out ${w.timeouts}x` : ''}${where}`
    );
  });
}

function printItem(
  found:
    | {
        item: ItemRecord;
        hops: HopRecord[];
        children: ItemRecord[];
        all: ItemRecord[];
        /** The live subtree usage of the item and its children (absent: nothing charged, or kept before it was). */
        trees: ReadonlyMap<string, TreeUsage>;
      }
    | undefined,
  where: string,
  flags: ItemsFlags,
  lookup?: BusMessageLookup,
): number {
  const id = flags.id!;
  if (found === undefined) {
    process.stderr.write(
      `switchboard items: no work item ${id} in ${where} (list them with: switchboard items list --db ${where})\n`,
    );
    return 1;
  }
  const { item, hops, all, trees } = found;
  // Its children in the order it started them (by hop, then position), in the table and in --json.
  const children = siblingOrder(found.children);
  const tree = trees.get(item.id) ?? null;
  const now = Date.now();
  const elapsed = elapsedMs(item, now);
  const own = ownUsage(hops);
  const waiting = busWaitsOf(item, hops, now, lookup);
  const rolledHops = (i: ItemRecord) => subtreeHops(i, all);
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify({ item: { ...item, elapsedMs: elapsed }, hops, waiting, ownUsage: own, ownHops: item.hops, subtreeHops: rolledHops(item), rolledUp: tree, children: children.map((c) => ({ id: c.id, branch: branchOf(c), state: c.state, workflow: c.workflow, usage: c.usage, hops: c.hops, subtreeHops: rolledHops(c), rolledUp: trees.get(c.id) ?? null })) })}\n`,
    );
    return 0;
  }
  const out = [
    `Work item ${item.id}`,
    `  state:      ${item.state}`,
    `  workflow:   ${item.workflow.id}@${item.workflow.version}`,
    `  stage:      ${item.stage ?? '-'} (hop ${item.hop})`,
    `  hops:       ${children.length > 0 ? `${rolledHops(item)} (${item.hops} its own, the rest its children's)` : item.hops}`,
    `  usage:      ${item.usage.inputTokens} in / ${item.usage.outputTokens} out tokens, ${formatUsd(item.usage.costUsd)}, ` +
      `${formatDuration(item.usage.elapsedMs)} hop time`,
    `  elapsed:    ${formatDuration(elapsed)}${item.finishedAt === null ? ' (running)' : ''}`,
    `  created:    ${formatEpoch(item.createdAt)}`,
    `  finished:   ${formatEpoch(item.finishedAt)}`,
    `  task:       ${item.taskId ?? '-'}`,
  ];
  out.push(...waitingLines(waiting));
  if (item.failure !== null) out.push(`  failure:    ${item.failure.code}: ${item.failure.reason}`);
  if (item.approval !== null) {
    const who = item.approval.approvers === null ? 'an approver' : item.approval.approvers.join(' or ');
    out.push(
      `  approval:   ${item.approval.source} at ${item.approval.stage}, waits for ${who}: ${item.approval.reason}`,
    );
  }
  if (children.length > 0) {
    out.push(
      `  own usage:  ${own.inputTokens} in / ${own.outputTokens} out tokens, ${formatUsd(own.costUsd)} (its hops; the usage above adds its ${children.length} children's as they end)`,
    );
    if (tree !== null) {
      out.push(
        `  rolled up:  ${tree.usage.inputTokens} in / ${tree.usage.outputTokens} out tokens, ${formatUsd(tree.usage.costUsd)}, ` +
          `${tree.hops} hops (live: its hops and every descendant's, charged so far)`,
      );
    }
  }
  if (hops.length > 0) out.push('', `Hops (${hops.length}):`, ...hopTable(hops).map((l) => `  ${l}`));
  out.push(...hopErrorLines(hops));
  if (children.length > 0) {
    const rows = renderTable(
      [
        { header: 'branch' },
        { header: 'work item' },
        { header: 'state' },
        { header: 'workflow' },
        { header: 'hops', align: 'right' },
        { header: 'tokens', align: 'right' },
        { header: 'cost', align: 'right' },
      ],
      children.map((c) => [
        branchOf(c) ?? '-',
        c.id,
        c.state,
        `${c.workflow.id}@${c.workflow.version}`,
        String(rolledHops(c)),
        tokens(c, trees.get(c.id)),
        formatUsd((trees.get(c.id)?.usage ?? c.usage).costUsd),
      ]),
    );
    out.push(
      '',
      `Child work items (${children.length}; show each with: switchboard items show ID):`,
      ...rows.map((l) => `  ${l}`),
    );
  }
  out.push('', ...outputLines(item.output));
  process.stdout.write(`${out.join('\n')}\n`);
  return 0;
}

/** `--db postgres://...`: the same reads of the Coordinator's PostgreSQL tables. */
async function runItemsOnPostgres(url: string, flags: ItemsFlags): Promise<number> {
  return readOnPostgres(url, 'items', async (store, opened) => {
    if (flags.sub === 'list') {
      const filter = flags.state === undefined ? {} : { state: flags.state };
      const items = await store.readItems({ ...filter, limit: flags.limit });
      return printList(items, await store.countItems(filter), flags);
    }
    const item = await store.readItem(flags.id!);
    const all = item === undefined ? [] : await store.readItems({ limit: MAX_LIMIT });
    const children = item === undefined ? [] : all.filter((c) => parentOf(c) === item.id);
    const trees = item === undefined ? new Map() : await store.readTreeUsage([item.id, ...children.map((c) => c.id)]);
    return printItem(
      item === undefined ? undefined : { item, hops: await store.readHops(item.id), children, all, trees },
      opened.where,
      flags,
    );
  });
}

async function runItems(argv: string[]): Promise<number> {
  const sub = argv.find((a) => !a.startsWith('-'));
  if (sub === 'cancel' || sub === 'retry') {
    let control: ReturnType<typeof parseControlFlags>;
    try {
      control = parseControlFlags(argv);
    } catch (error) {
      if (error instanceof CliUsageError) return reportUsageError('items', error, ITEMS_USAGE);
      throw error;
    }
    return runItemControl(control);
  }
  let flags: ItemsFlags;
  let opened: { opened: OpenedDatabase; store: SqliteCoordinatorStore };
  try {
    flags = parseFlags(argv);
    if (flags.db !== undefined && isPostgresUrl(flags.db)) return await runItemsOnPostgres(flags.db, flags);
    opened = openItems(flags);
  } catch (error) {
    if (error instanceof UnreadableDatabase) {
      process.stderr.write(`switchboard items: ${error.message}\n`);
      return 1;
    }
    if (error instanceof CliUsageError) return reportUsageError('items', error, ITEMS_USAGE);
    throw error;
  }
  try {
    return flags.sub === 'list'
      ? listItems(opened.opened, opened.store, flags)
      : showItem(opened.opened, opened.store, flags);
  } finally {
    opened.opened.db.close();
  }
}

export const itemsCommand: CliCommand = {
  name: 'items',
  summary: "list or show the Coordinator's work items: state, hops, cost, elapsed time, output",
  usage: ITEMS_USAGE,
  run: runItems,
};
