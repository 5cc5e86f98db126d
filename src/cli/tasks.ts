import { SqliteCoordinatorStore } from '../persistence/coordinator/store.js';
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
import { formatDuration, formatEpoch, formatUsd, renderTable } from './table.js';

const MAX_LIMIT = 100_000;

export const TASKS_USAGE = `Usage: switchboard tasks list --db PATH [--state S] [--limit N] [--json]
       switchboard tasks show ID --db PATH [--history N] [--json]

The broker's A2A tasks. Where the Coordinator's tables are in the same
database, each task is linked to what it is for: a work item's task
(requester: the human edge; worker: the Coordinator) lists its hops' child
tasks; a hop's task names its parent (the work item's task), hop number,
stage and role. The database is opened read-only.

  list   every task, oldest first: id, state, requester, worker, parent,
         what it is (work item or hop), last update
  show   one task: status, parties, times, its links, the hops of a work
         item (state, model, tokens, cost, time), its history and artifacts

Options:
  --db PATH      the SQLite file the broker wrote (required; never created)
  --state S      list: only tasks in this state (${TASK_STATES.join(', ')})
  --limit N      list: at most N tasks (default 1000)
  --history N    show: only the last N messages (default: all)
  --json         list: {"total","tasks":[{"id","state","contextId",
                 "requesterName","agentContextId","agentName","createdAt",
                 "updatedAt","parentTaskId","childTaskIds","link"}]};
                 show: {"task","parentTaskId","childTaskIds","link",
                 "workItem","hops"} (the task as tasks/get returns it)
  -h, --help     show this help

Exit status: 0 on success; 1 when show names no task; 2 for a usage error or
a file that is not a switchboard database with a broker.`;

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
  return {
    sub,
    id,
    db: stringFlag(args, 'db'),
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
  const links = new Map<string, TaskLink>();
  const parents = new Map<string, string>();
  const children = new Map<string, string[]>();
  const items = new Map<string, ItemRecord>();
  const hopsOf = new Map<string, HopRecord[]>();
  for (const item of store.listItems({ limit: MAX_LIMIT })) {
    items.set(item.id, item);
    const hops = store.listHops(item.id);
    hopsOf.set(item.id, hops);
    if (item.taskId !== null) {
      links.set(item.taskId, {
        kind: 'work-item',
        itemId: item.id,
        workflow: item.workflow,
        itemState: item.state,
      });
    }
    const kids: string[] = [];
    for (const hop of hops) {
      if (hop.taskId === null) continue;
      links.set(hop.taskId, {
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
      if (item.taskId !== null) parents.set(hop.taskId, item.taskId);
      kids.push(hop.taskId);
    }
    if (item.taskId !== null) children.set(item.taskId, kids);
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

function party(contextId: string, name: string): string {
  return `${name}@${contextId}`;
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
  if (flags.json) {
    const tasks = heads.map((h) => ({
      id: h.taskId,
      state: h.state,
      contextId: h.contextId,
      requesterName: h.requesterName,
      agentContextId: h.agentContextId,
      agentName: h.agentName,
      createdAt: h.createdAt,
      updatedAt: h.updatedAt,
      parentTaskId: links.parentOf(h.taskId),
      childTaskIds: links.childrenOf(h.taskId),
      link: links.linkOf(h.taskId) ?? null,
    }));
    process.stdout.write(`${JSON.stringify({ total, tasks })}\n`);
    return 0;
  }
  if (heads.length === 0) {
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
    heads.map((h) => [
      h.taskId,
      h.state,
      h.requesterName,
      h.agentName,
      links.parentOf(h.taskId) ?? '-',
      describeLink(links.linkOf(h.taskId)),
      h.updatedAt,
    ]),
  );
  process.stdout.write(`${lines.join('\n')}\n`);
  if (heads.length < total) process.stdout.write(`\nShowing ${heads.length} of ${total} (--limit N).\n`);
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
  const { task, links } = found;
  const link = links.linkOf(id);
  const item = link === undefined ? undefined : links.item(link.itemId);
  const hops = link?.kind === 'work-item' ? links.hops(link.itemId) : [];
  const parentTaskId = links.parentOf(id);
  const childTaskIds = links.childrenOf(id);
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify({
        task,
        parentTaskId,
        childTaskIds,
        link: link ?? null,
        workItem: item ?? null,
        hops: link?.kind === 'hop' ? links.hops(link.itemId).filter((h) => h.id === link.hopId) : hops,
      })}\n`,
    );
    return 0;
  }
  process.stdout.write(`${describeTask(task, link, item, parentTaskId, childTaskIds, hops, links).join('\n')}\n`);
  return 0;
}

function describeTask(
  task: Task,
  link: TaskLink | undefined,
  item: ItemRecord | undefined,
  parentTaskId: string | null,
  childTaskIds: readonly string[],
  hops: readonly HopRecord[],
  links: Links,
): string[] {
  const out = [
    `Task ${task.id}`,
    `  state:      ${task.status.state} (since ${task.status.timestamp})`,
    `  requester:  ${party(task.contextId, task.requesterName)}`,
    `  worker:     ${party(task.agentContextId, task.agentName)}`,
    `  created:    ${task.createdAt}`,
    `  updated:    ${task.updatedAt}`,
  ];
  const statusText = task.status.message?.parts.map(partSummary).join(' ');
  if (statusText !== undefined) out.push(`  status:     ${statusText}`);
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
  out.push('', `History (${task.history.length} message${task.history.length === 1 ? '' : 's'}):`);
  for (const m of task.history) {
    out.push(`  ${m.timestamp}  ${m.role} ${m.from}: ${m.parts.map(partSummary).join(' ')}`);
  }
  if (task.artifacts.length > 0) {
    out.push('', `Artifacts (${task.artifacts.length}):`);
    for (const a of task.artifacts) {
      out.push(`  ${a.artifactId}${a.name === undefined ? '' : ` ${a.name}`}: ${a.parts.map(partSummary).join(' ')}`);
    }
  }
  return out;
}

async function runTasks(argv: string[]): Promise<number> {
  let flags: TasksFlags;
  let opened: OpenedDatabase;
  try {
    flags = parseFlags(argv);
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
  summary: "list or show the broker's A2A tasks, linked to work items and hops",
  usage: TASKS_USAGE,
  run: runTasks,
};
