import { SqliteCoordinatorStore } from '../persistence/coordinator/sqlite-store.js';
import type { HopRecord, ItemRecord } from '../workflow/records.js';
import { countTasks, listTaskIds } from '../persistence/a2a/task-list.js';
import { A2AStore, type TaskHead } from '../persistence/a2a/store.js';
import { SchemaVersionError } from '../persistence/kernel/migrations.js';
import type { Part } from '../protocol/parts.js';
import { TASK_STATES, type Task, type TaskState } from '../protocol/task.js';
import type { CliCommand } from './command.js';
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
import { type OpenedPostgres, inSnapshot, isPostgresUrl, readOnPostgres } from './read-postgres.js';
import { type TaskView, taskViewsOfItems } from '../workflow/task-view.js';
import { formatDuration, formatEpoch, formatUsd, renderTable } from './table.js';
import { TASKS_PRUNE_USAGE, runTasksPrune } from './tasks-prune.js';
import { TASKS_STATS_USAGE, runTasksStats } from './tasks-stats.js';

const MAX_LIMIT = 100_000;

export const TASKS_USAGE = `Usage: switchboard tasks list --db PATH|URL [--state S] [--limit N] [--json]
       switchboard tasks show ID --db PATH|URL [--history N] [--json]
       switchboard tasks prune --ended-before DURATION|DATE --db PATH [--dry-run] [--json]
       switchboard tasks stats --db PATH [--json]

The broker's A2A tasks. Where the Coordinator's tables are in the same
database, each task is linked to what it is for: a work item's task
(requester: the human edge; worker: the Coordinator) lists its hops' child
tasks; a hop's task names its parent (the work item's task), hop number,
stage and role. The database is opened read-only.

With --db postgres://... (a Coordinator's PostgreSQL database) there is no
broker file: the tasks are derived from the work item and hop rows, read
in one snapshot (a work item's task, requester edge, worker coordinator;
a hop's task, requester coordinator, worker its role; the task id is the
broker's where the rows recorded one, else the item's or hop's id). The
rows keep no messages: show prints no history or artifacts, --history is
refused, and the JSON's "contextId" and "agentContextId" are null and its
"task" is {"id","state","requesterName","agentName","createdAt",
"updatedAt"}.

  list   every task, oldest first: id, state, requester, worker, parent,
         what it is (work item or hop), last update
  show   one task: status, parties, times, its links, the hops of a work
         item (state, model, tokens, cost, time), its history and artifacts
  prune  remove the tasks that ended before a time, through the file's
         broker (its options below)
  stats  rows and bytes per table of the broker's file (below)

Options:
  --db PATH      the SQLite file the broker wrote (required; never created),
                 or postgres://USER[:PASSWORD]@HOST:PORT/DB: the PostgreSQL
                 database of a Coordinator run with that --db
  --state S      list: only tasks in this state (${TASK_STATES.join(', ')})
  --limit N      list: at most N tasks (default 1000)
  --history N    show: only the last N messages (default: all; not with a
                 PostgreSQL URL)
  --json         list: {"total","tasks":[{"id","state","contextId",
                 "requesterName","agentContextId","agentName","createdAt",
                 "updatedAt","parentTaskId","childTaskIds","link"}]};
                 show: {"task","parentTaskId","childTaskIds","link",
                 "workItem","hops"} (the task as tasks/get returns it)
  -h, --help     show this help

Exit status: 0 on success; 1 when show names no task or a PostgreSQL does
not answer; 2 for a usage error, a file that is not a switchboard database
with a broker, or tables of another schema version.

${TASKS_PRUNE_USAGE}

${TASKS_STATS_USAGE}`;

interface TasksFlags {
  sub: 'list' | 'show';
  id: string | undefined;
  db: string | undefined;
  state: TaskState | undefined;
  limit: number;
  history: number | undefined;
  json: boolean;
}

/** Every flag the command accepts (each is documented in its --help; a test checks it). */
export const TASKS_FLAGS: FlagSpec = {
  db: { type: 'string' },
  state: { type: 'string' },
  limit: { type: 'string' },
  history: { type: 'string' },
  json: { type: 'boolean' },
};

function parseFlags(argv: string[]): TasksFlags {
  const args = parseCommandArgs(argv, TASKS_FLAGS, 2);
  const { sub, id } = listOrShow(args, 'a task id', 'tasks');
  const state = args.values.state === undefined ? undefined : choiceFlag(args, 'state', TASK_STATES, 'working');
  if (sub === 'show' && (state !== undefined || args.values.limit !== undefined)) {
    throw new CliUsageError('--state and --limit are for list');
  }
  if (sub === 'list' && args.values.history !== undefined) throw new CliUsageError('--history is for show');
  const db = stringFlag(args, 'db');
  if (db !== undefined && isPostgresUrl(db) && args.values.history !== undefined) {
    throw new CliUsageError(
      "--history reads the broker's message history, which a PostgreSQL database does not keep (its rows hold " +
        "no messages): drop --history, or give the broker's SQLite file as --db PATH",
    );
  }
  return {
    sub,
    id,
    db,
    state,
    limit: countFlag(args, 'limit', 1000, MAX_LIMIT),
    history: args.values.history === undefined ? undefined : countFlag(args, 'history', 1, MAX_LIMIT),
    json: booleanFlag(args, 'json'),
  };
}

/** What a task is to the Coordinator: a work item's task, or a hop's child task. */
export type TaskLink =
  | { kind: 'work-item'; itemId: string; workflow: { id: string; version: number }; itemState: string }
  | {
      kind: 'hop';
      itemId: string;
      hopId: string;
      hop: number;
      attempt: number;
      hopKind: string;
      stage: string;
      role: string;
      hopState: string;
    };

interface Links {
  linkOf(taskId: string): TaskLink | undefined;
  parentOf(taskId: string): string | null;
  childrenOf(taskId: string): string[];
  item(itemId: string): ItemRecord | undefined;
  hops(itemId: string): HopRecord[];
}

const NO_LINKS: Links = {
  linkOf: () => undefined,
  parentOf: () => null,
  childrenOf: () => [],
  item: () => undefined,
  hops: () => [],
};

/** The links between tasks, read through the Coordinator's public reads (when its tables are there). */
function readLinks(opened: OpenedDatabase): Links {
  if (!opened.components.has('coordinator')) return NO_LINKS;
  try {
    return coordinatorLinks(new SqliteCoordinatorStore(opened.db, { readOnly: true }));
  } catch (error) {
    // The broker's tasks are still worth listing: say why the links are missing.
    const why = error instanceof SchemaVersionError ? error.message : (error as Error)?.message;
    process.stderr.write(
      `switchboard tasks: cannot read the Coordinator's tables (${why}): no work item or hop links\n`,
    );
    return NO_LINKS;
  }
}

function coordinatorLinks(store: SqliteCoordinatorStore): Links {
  const items = store.listItems({ limit: MAX_LIMIT });
  const hopsOf = new Map(items.map((item) => [item.id, store.listHops(item.id)]));
  return linksOfRows(items, hopsOf, (row) => row.taskId);
}

/**
 * The links between the tasks of `items` and their hops; `taskIdOf` names a
 * row's task (the broker's task id, or with derived tasks the row's own id
 * where it recorded none).
 */
function linksOfRows(
  rows: readonly ItemRecord[],
  hopsOf: ReadonlyMap<string, HopRecord[]>,
  taskIdOf: (row: ItemRecord | HopRecord) => string | null,
): Links {
  const links = new Map<string, TaskLink>();
  const parents = new Map<string, string>();
  const children = new Map<string, string[]>();
  const items = new Map<string, ItemRecord>();
  for (const item of rows) {
    items.set(item.id, item);
    const hops = hopsOf.get(item.id) ?? [];
    const itemTaskId = taskIdOf(item);
    if (itemTaskId !== null) {
      links.set(itemTaskId, {
        kind: 'work-item',
        itemId: item.id,
        workflow: item.workflow,
        itemState: item.state,
      });
    }
    const kids: string[] = [];
    for (const hop of hops) {
      const hopTaskId = taskIdOf(hop);
      if (hopTaskId === null) continue;
      links.set(hopTaskId, {
        kind: 'hop',
        itemId: item.id,
        hopId: hop.id,
        hop: hop.hop,
        attempt: hop.attempt,
        hopKind: hop.kind,
        stage: hop.stage,
        role: hop.role,
        hopState: hop.state,
      });
      if (itemTaskId !== null) parents.set(hopTaskId, itemTaskId);
      kids.push(hopTaskId);
    }
    if (itemTaskId !== null) children.set(itemTaskId, kids);
  }
  return {
    linkOf: (taskId) => links.get(taskId),
    parentOf: (taskId) => parents.get(taskId) ?? null,
    childrenOf: (taskId) => children.get(taskId) ?? [],
    item: (itemId) => items.get(itemId),
    hops: (itemId) => hopsOf.get(itemId) ?? [],
  };
}

function describeLink(link: TaskLink | undefined): string {
  if (link === undefined) return '-';
  if (link.kind === 'work-item') return `work item ${link.itemId}`;
  const what = link.hopKind === 'query' ? `query from hop ${link.hop}` : `hop ${link.hop}`;
  return `${what} ${link.stage}${link.role === link.stage ? '' : ` (${link.role})`}${link.attempt > 1 ? ` attempt ${link.attempt}` : ''}`;
}

/** A task as list prints it: the broker's task head, or a task derived from the rows (no context ids). */
interface TaskRow {
  id: string;
  state: TaskState;
  contextId: string | null;
  requesterName: string;
  agentContextId: string | null;
  agentName: string;
  createdAt: string;
  updatedAt: string;
}

function rowOfHead(h: TaskHead): TaskRow {
  return {
    id: h.taskId,
    state: h.state,
    contextId: h.contextId,
    requesterName: h.requesterName,
    agentContextId: h.agentContextId,
    agentName: h.agentName,
    createdAt: h.createdAt,
    updatedAt: h.updatedAt,
  };
}

function rowOfView(v: TaskView): TaskRow {
  return {
    id: v.id,
    state: v.state,
    contextId: null,
    requesterName: v.requester,
    agentContextId: null,
    agentName: v.worker,
    createdAt: new Date(v.createdAt).toISOString(),
    updatedAt: new Date(v.updatedAt).toISOString(),
  };
}

function listTasks(opened: OpenedDatabase, flags: TasksFlags): number {
  const store = new A2AStore(opened.db);
  const { heads, total, links } = opened.db
    .transaction(() => {
      const filter = flags.state === undefined ? {} : { state: flags.state };
      const ids = listTaskIds(opened.db, { ...filter, limit: flags.limit });
      const heads = ids.map((id) => store.taskHead(id)).filter((h): h is TaskHead => h !== undefined);
      return { heads, total: countTasks(opened.db, filter), links: readLinks(opened) };
    })
    .deferred();
  return printTaskList(heads.map(rowOfHead), total, links, flags);
}

function printTaskList(rows: readonly TaskRow[], total: number, links: Links, flags: TasksFlags): number {
  if (flags.json) {
    const tasks = rows.map((row) => ({
      ...row,
      parentTaskId: links.parentOf(row.id),
      childTaskIds: links.childrenOf(row.id),
      link: links.linkOf(row.id) ?? null,
    }));
    process.stdout.write(`${JSON.stringify({ total, tasks })}\n`);
    return 0;
  }
  if (rows.length === 0) {
    process.stdout.write(`No tasks${flags.state === undefined ? '' : ` in state ${flags.state}`}.\n`);
    return 0;
  }
  const lines = renderTable(
    [
      { header: 'task' },
      { header: 'state' },
      { header: 'requester', maxWidth: 24 },
      { header: 'worker', maxWidth: 24 },
      { header: 'parent' },
      { header: 'for', maxWidth: 60 },
      { header: 'updated' },
    ],
    rows.map((row) => [
      row.id,
      row.state,
      row.requesterName,
      row.agentName,
      links.parentOf(row.id) ?? '-',
      describeLink(links.linkOf(row.id)),
      row.updatedAt,
    ]),
  );
  process.stdout.write(`${lines.join('\n')}\n`);
  if (rows.length < total) process.stdout.write(`\nShowing ${rows.length} of ${total} (--limit N).\n`);
  return 0;
}

function partSummary(part: Part): string {
  switch (part.kind) {
    case 'text':
      return part.text.length > 300 ? `${part.text.slice(0, 299)}…` : part.text;
    case 'data':
      return `[data, ${JSON.stringify(part.data).length} chars]`;
    case 'file':
      return `[file ${part.file.name ?? ''}${part.file.mimeType === undefined ? '' : ` ${part.file.mimeType}`}${part.file.uri === undefined ? `, ${part.file.bytes?.length ?? 0} base64 chars` : ` ${part.file.uri}`}]`;
  }
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
      { header: 'task' },
    ],
    hops.map((h) => [
      String(h.seq),
      String(h.hop),
      h.kind,
      h.stage,
      h.role,
      h.state,
      h.model ?? '-',
      String(h.usage.inputTokens + h.usage.outputTokens),
      formatUsd(h.usage.costUsd),
      formatDuration(h.usage.elapsedMs),
      h.taskId ?? '-',
    ]),
  );
}

/** What show prints of a task: the broker's whole task, or one derived from the rows (no messages). */
interface ShownTask {
  /** The JSON's "task". */
  json: unknown;
  header: TaskRow & { since: string; statusText: string | undefined };
  /** null: the rows keep none (PostgreSQL). */
  history: Task['history'] | null;
  artifacts: Task['artifacts'];
}

function shownOfTask(task: Task): ShownTask {
  return {
    json: task,
    header: {
      id: task.id,
      state: task.status.state,
      contextId: task.contextId,
      requesterName: task.requesterName,
      agentContextId: task.agentContextId,
      agentName: task.agentName,
      createdAt: task.createdAt,
      updatedAt: task.updatedAt,
      since: task.status.timestamp,
      statusText: task.status.message?.parts.map(partSummary).join(' '),
    },
    history: task.history,
    artifacts: task.artifacts,
  };
}

function shownOfView(view: TaskView): ShownTask {
  const row = rowOfView(view);
  const { contextId: _c, agentContextId: _a, ...json } = row;
  return { json, header: { ...row, since: row.updatedAt, statusText: undefined }, history: null, artifacts: [] };
}

function showTask(opened: OpenedDatabase, flags: TasksFlags): number {
  const store = new A2AStore(opened.db);
  const id = flags.id!;
  const found = opened.db
    .transaction(() => {
      const head = store.taskHead(id);
      if (head === undefined) return undefined;
      return { task: store.loadTask(head, flags.history), links: readLinks(opened) };
    })
    .deferred();
  if (found === undefined) {
    process.stderr.write(`switchboard tasks: no task ${id} in ${opened.path}\n`);
    return 1;
  }
  return printTask(shownOfTask(found.task), found.links, flags);
}

function printTask(shown: ShownTask, links: Links, flags: TasksFlags): number {
  const id = shown.header.id;
  const link = links.linkOf(id);
  const item = link === undefined ? undefined : links.item(link.itemId);
  const hops = link?.kind === 'work-item' ? links.hops(link.itemId) : [];
  const parentTaskId = links.parentOf(id);
  const childTaskIds = links.childrenOf(id);
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify({
        task: shown.json,
        parentTaskId,
        childTaskIds,
        link: link ?? null,
        workItem: item ?? null,
        hops: link?.kind === 'hop' ? links.hops(link.itemId).filter((h) => h.id === link.hopId) : hops,
      })}\n`,
    );
    return 0;
  }
  process.stdout.write(`${describeTask(shown, link, item, parentTaskId, childTaskIds, hops, links).join('\n')}\n`);
  return 0;
}

function party(contextId: string | null, name: string): string {
  return contextId === null ? name : `${name}@${contextId}`;
}

function describeTask(
  shown: ShownTask,
  link: TaskLink | undefined,
  item: ItemRecord | undefined,
  parentTaskId: string | null,
  childTaskIds: readonly string[],
  hops: readonly HopRecord[],
  links: Links,
): string[] {
  const task = shown.header;
  const out = [
    `Task ${task.id}`,
    `  state:      ${task.state} (since ${task.since})`,
    `  requester:  ${party(task.contextId, task.requesterName)}`,
    `  worker:     ${party(task.agentContextId, task.agentName)}`,
    `  created:    ${task.createdAt}`,
    `  updated:    ${task.updatedAt}`,
  ];
  if (task.statusText !== undefined) out.push(`  status:     ${task.statusText}`);
  if (parentTaskId !== null) out.push(`  parent:     ${parentTaskId}`);
  if (link !== undefined) out.push(`  for:        ${describeLink(link)}`);
  if (item !== undefined) {
    const failure = item.failure === null ? '' : ` (${item.failure.code}: ${item.failure.reason})`;
    out.push(
      `  work item:  ${item.id}: ${item.workflow.id}@${item.workflow.version}, ${item.state}${failure}, ${item.hops} hops, ` +
        `${item.usage.inputTokens + item.usage.outputTokens} tokens, ${formatUsd(item.usage.costUsd)}, ` +
        `${formatDuration(item.usage.elapsedMs)} hop time, created ${formatEpoch(item.createdAt)}`,
    );
  }
  if (link?.kind === 'hop') {
    const hop = links.hops(link.itemId).find((h) => h.id === link.hopId);
    if (hop !== undefined) {
      out.push(
        `  hop:        ${hop.state}, model ${hop.model ?? '-'}, ${hop.usage.inputTokens} in / ${hop.usage.outputTokens} out tokens, ` +
          `${formatUsd(hop.usage.costUsd)}, ${formatDuration(hop.usage.elapsedMs)}` +
          (hop.error === null ? '' : `, error ${hop.error.type}: ${hop.error.message}`),
      );
    }
  }
  if (hops.length > 0) {
    out.push(
      '',
      `Hops (${hops.length}; ${childTaskIds.length} with a child task):`,
      ...hopTable(hops).map((l) => `  ${l}`),
    );
  }
  const history = shown.history;
  if (history === null) {
    out.push('', 'History: not kept (the PostgreSQL rows hold no messages; the broker keeps them in memory)');
  } else {
    out.push('', `History (${history.length} message${history.length === 1 ? '' : 's'}):`);
    for (const m of history) {
      out.push(`  ${m.timestamp}  ${m.role} ${m.from}: ${m.parts.map(partSummary).join(' ')}`);
    }
  }
  if (shown.artifacts.length > 0) {
    out.push('', `Artifacts (${shown.artifacts.length}):`);
    for (const a of shown.artifacts) {
      out.push(`  ${a.artifactId}${a.name === undefined ? '' : ` ${a.name}`}: ${a.parts.map(partSummary).join(' ')}`);
    }
  }
  return out;
}

/** The tasks derived from every work item and hop row, read in one snapshot, with their links. */
async function readDerivedTasks(opened: OpenedPostgres): Promise<{ views: TaskView[]; links: Links }> {
  const { items, hopsOf } = await inSnapshot(opened, async (store) => {
    const items = await store.readItems({ limit: MAX_LIMIT });
    return { items, hopsOf: await store.readHopsOfItems(items.map((item) => item.id)) };
  });
  // Oldest first, like the broker's list (an item's task before its hops' on a tie).
  const views = taskViewsOfItems(items, (itemId) => hopsOf.get(itemId) ?? []).sort((a, b) => a.createdAt - b.createdAt);
  return { views, links: linksOfRows(items, hopsOf, (row) => row.taskId ?? row.id) };
}

/** `--db postgres://...`: the tasks derived from the Coordinator's PostgreSQL rows. */
function runTasksOnPostgres(url: string, flags: TasksFlags): Promise<number> {
  return readOnPostgres(url, 'tasks', async (_store, opened) => {
    const { views, links } = await readDerivedTasks(opened);
    if (flags.sub === 'list') {
      const matching = flags.state === undefined ? views : views.filter((v) => v.state === flags.state);
      return printTaskList(matching.slice(0, flags.limit).map(rowOfView), matching.length, links, flags);
    }
    const view = views.find((v) => v.id === flags.id);
    if (view === undefined) {
      process.stderr.write(`switchboard tasks: no task ${flags.id} in ${opened.where}\n`);
      return 1;
    }
    return printTask(shownOfView(view), links, flags);
  });
}

/** `tasks prune` and `tasks stats`: their own flags and help. */
async function runTasksMaintenance(sub: 'prune' | 'stats', argv: string[]): Promise<number> {
  const usage = sub === 'prune' ? TASKS_PRUNE_USAGE : TASKS_STATS_USAGE;
  try {
    return sub === 'prune' ? await runTasksPrune(argv) : runTasksStats(argv);
  } catch (error) {
    if (error instanceof CliUsageError) return reportUsageError(`tasks ${sub}`, error, usage);
    throw error;
  }
}

async function runTasks(argv: string[]): Promise<number> {
  if (argv[0] === 'prune' || argv[0] === 'stats') return runTasksMaintenance(argv[0], argv.slice(1));
  let flags: TasksFlags;
  let opened: OpenedDatabase;
  try {
    flags = parseFlags(argv);
    if (flags.db !== undefined && isPostgresUrl(flags.db)) return await runTasksOnPostgres(flags.db, flags);
    opened = openExistingDatabase(flags.db, 'read');
  } catch (error) {
    if (error instanceof CliUsageError) return reportUsageError('tasks', error, TASKS_USAGE);
    throw error;
  }
  try {
    requireComponent(opened, 'a2a', 'A2A broker tables');
    return flags.sub === 'list' ? listTasks(opened, flags) : showTask(opened, flags);
  } catch (error) {
    if (error instanceof CliUsageError) return reportUsageError('tasks', error, TASKS_USAGE);
    throw error;
  } finally {
    opened.db.close();
  }
}

export const tasksCommand: CliCommand = {
  name: 'tasks',
  summary: "list, show, prune or measure the broker's A2A tasks, linked to work items and hops",
  usage: TASKS_USAGE,
  run: runTasks,
};
