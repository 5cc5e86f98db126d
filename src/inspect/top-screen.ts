import type { TaskState } from '../protocol/task.js';
import type { SystemSnapshot } from './system-snapshot.js';

/**
 * The screen of `switchboard top`: a snapshot turned into lines that fit the
 * terminal. Plain text, with ANSI styles only when `color` is on (a TTY).
 */
export interface ScreenOptions {
  /** What is shown (title bar): the database, and the bus when it is not in the file. */
  db: string;
  /** Where the queues come from, when not from the database (`redis://host:port (prefix p)`). */
  queueSource?: string;
  width: number;
  /** Rows available; sections are cut to fit (null: no limit). */
  height: number | null;
  intervalMs: number;
  color: boolean;
  /** Shown in the title bar when the last read failed. */
  error?: string;
}

type Style = 'bold' | 'dim' | 'inverse' | 'green' | 'yellow' | 'red' | 'cyan' | 'none';
type Segment = { text: string; style?: Style };
type Line = Segment[];

const CODES: Record<Style, string> = {
  bold: '\x1b[1m',
  dim: '\x1b[2m',
  inverse: '\x1b[7m',
  green: '\x1b[32m',
  yellow: '\x1b[33m',
  red: '\x1b[31m',
  cyan: '\x1b[36m',
  none: '',
};
const RESET = '\x1b[0m';

const TASK_STATE_STYLE: Record<TaskState, Style> = {
  submitted: 'cyan',
  working: 'yellow',
  'input-required': 'yellow',
  'auth-required': 'yellow',
  completed: 'green',
  canceled: 'dim',
  failed: 'red',
  rejected: 'red',
};

const ITEM_STATE_STYLE: Record<string, Style> = {
  pending: 'cyan',
  running: 'yellow',
  'awaiting-approval': 'yellow',
  suspended: 'yellow',
  completed: 'green',
  failed: 'red',
  canceled: 'dim',
};

export function renderScreen(snapshot: SystemSnapshot, options: ScreenOptions): string[] {
  const width = Math.max(20, options.width);
  const lines: Line[] = [];
  const clock = new Date(snapshot.at).toISOString().slice(11, 19);
  lines.push([
    {
      text: padRight(` switchboard top  ${options.db}  ${clock} UTC  every ${options.intervalMs} ms  q: quit`, width),
      style: 'inverse',
    },
  ]);
  if (options.error !== undefined) lines.push([{ text: `read failed: ${options.error}`, style: 'red' }]);

  const sections: { head: Line[]; rows: Line[]; empty?: string }[] = [];
  if (snapshot.tasks !== null) {
    const t = snapshot.tasks;
    const counts: Line = [{ text: `TASKS ${t.total}  `, style: 'bold' }];
    for (const [state, n] of Object.entries(t.byState) as [TaskState, number][]) {
      counts.push(
        { text: `${state} `, style: 'none' },
        { text: `${n}`, style: n > 0 ? TASK_STATE_STYLE[state] : 'dim' },
      );
      counts.push({ text: '  ' });
    }
    sections.push({
      head: [counts, [{ text: row(['TASK', 'STATE', 'WORKER', 'REQUESTER', 'IDLE'], TASK_WIDTHS), style: 'bold' }]],
      rows: t.live.map((task) => [
        { text: cell(task.taskId, TASK_WIDTHS[0]) },
        { text: cell(task.state, TASK_WIDTHS[1]), style: TASK_STATE_STYLE[task.state] },
        { text: row([task.worker, task.requester, duration(task.idleMs)], TASK_WIDTHS.slice(2)) },
      ]),
      empty: '  no live task',
    });
  }
  if (snapshot.queues !== null) {
    sections.push({
      head: [
        [
          { text: `QUEUES ${snapshot.queues.length}`, style: 'bold' },
          ...(options.queueSource === undefined
            ? []
            : [{ text: `  on ${options.queueSource}`, style: 'dim' as const }]),
        ],
        [
          {
            text:
              cell('ROLE', QUEUE_WIDTHS[0]) +
              ['READY', 'DELAYED', 'IN FLIGHT', 'DEAD', 'DONE']
                .map((h, i) => rightCell(h, QUEUE_WIDTHS[i + 1]))
                .join('') +
              'OLDEST',
            style: 'bold',
          },
        ],
      ],
      rows: snapshot.queues.map((q) => [
        { text: row([q.role, q.depth, q.delayed, q.inFlight], QUEUE_WIDTHS.slice(0, 4)) },
        { text: rightCell(String(q.deadLetters), QUEUE_WIDTHS[4]), style: q.deadLetters > 0 ? 'red' : 'none' },
        {
          text:
            rightCell(q.done === null ? '-' : String(q.done), QUEUE_WIDTHS[5]) +
            cell(q.depth > 0 ? duration(q.lagMs) : '-', QUEUE_WIDTHS[6]),
        },
      ]),
      empty: '  no queue',
    });
  }
  if (snapshot.items !== null) {
    const items = snapshot.items;
    const counts: Line = [
      {
        text: `WORK ITEMS ${Object.values(items.byState).reduce((a, b) => a + b, 0)}  cost ${usd(items.costUsd)}  tokens ${items.inputTokens}/${items.outputTokens}  `,
        style: 'bold',
      },
    ];
    for (const [state, n] of Object.entries(items.byState)) {
      counts.push({ text: `${state} ` }, { text: `${n}`, style: ITEM_STATE_STYLE[state] ?? 'none' }, { text: '  ' });
    }
    sections.push({
      head: [
        counts,
        [
          {
            text: row(['ITEM', 'WORKFLOW', 'STATE', 'STAGE', 'HOP', 'COST', 'TOKENS IN/OUT', 'IDLE'], ITEM_WIDTHS),
            style: 'bold',
          },
        ],
      ],
      rows: items.rows.map((item) => [
        {
          // A child is drawn under its parent: indented, by where it sits (its id is its parent's and that).
          text: row(
            [item.depth === 0 ? item.id : `${'  '.repeat(item.depth - 1)}└ ${item.branch ?? item.id}`, item.workflow],
            ITEM_WIDTHS.slice(0, 2),
          ),
          style: item.finished ? 'dim' : 'none',
        },
        { text: cell(item.state, ITEM_WIDTHS[2]), style: ITEM_STATE_STYLE[item.state] ?? 'none' },
        {
          text: row(
            [
              item.stage ?? '-',
              `${item.hop}/${item.hops}`,
              usd(item.costUsd),
              `${item.inputTokens}/${item.outputTokens}`,
              item.finished ? '-' : duration(item.idleMs),
            ],
            ITEM_WIDTHS.slice(3),
          ),
          style: item.finished ? 'dim' : 'none',
        },
      ]),
      empty: '  no work item',
    });
  }
  if (sections.length === 0) {
    lines.push([], [{ text: 'no switchboard tables in this database yet (waiting for them)', style: 'dim' }]);
  }

  // Fit: every section keeps its head; rows share what is left (smallest
  // needs served first), and a cut list ends with "+N more".
  const fixed = lines.length + sections.reduce((n, s) => n + 1 + s.head.length, 0);
  const needs = sections.map((s) => Math.max(1, s.rows.length));
  const given = allot(needs, options.height === null ? Number.POSITIVE_INFINITY : Math.max(0, options.height - fixed));
  for (const [index, section] of sections.entries()) {
    lines.push([]);
    lines.push(...section.head);
    const room = given[index] ?? 0;
    if (section.rows.length === 0) {
      lines.push([{ text: section.empty ?? '', style: 'dim' }]);
    } else if (section.rows.length <= room) {
      lines.push(...section.rows);
    } else {
      const shown = Math.max(0, room - 1);
      lines.push(...section.rows.slice(0, shown));
      lines.push([{ text: `  +${section.rows.length - shown} more`, style: 'dim' }]);
    }
  }
  const out = lines.map((line) => draw(line, width, options.color));
  return options.height === null ? out : out.slice(0, options.height);
}

/** Splits `budget` rows between sections: the smallest needs are met first, the rest share evenly. */
function allot(needs: number[], budget: number): number[] {
  const given = needs.map(() => 0);
  let left = budget;
  const order = needs.map((need, index) => ({ need, index })).sort((a, b) => a.need - b.need);
  for (const [position, { need, index }] of order.entries()) {
    const share = Math.floor(left / (order.length - position));
    const rows = Math.max(1, Math.min(need, share));
    given[index] = rows;
    left -= rows;
  }
  return given;
}

const TASK_WIDTHS = [38, 16, 20, 20, 8];
const QUEUE_WIDTHS = [24, 8, 10, 12, 8, 10, 8];
const ITEM_WIDTHS = [38, 14, 18, 12, 6, 10, 14, 6];

function cell(value: string, width: number | undefined): string {
  const w = width ?? 10;
  return value.length >= w ? `${value.slice(0, w - 2)}… ` : value.padEnd(w);
}

function rightCell(value: string, width: number | undefined): string {
  return `${value.padStart((width ?? 8) - 2)}  `;
}

function row(values: (string | number)[], widths: number[]): string {
  return values
    .map((v, i) => (typeof v === 'number' ? `${String(v).padStart((widths[i] ?? 8) - 2)}  ` : cell(v, widths[i])))
    .join('');
}

function padRight(text: string, width: number): string {
  return text.length >= width ? text.slice(0, width) : text.padEnd(width);
}

function draw(line: Line, width: number, color: boolean): string {
  let out = '';
  let used = 0;
  for (const segment of line) {
    if (used >= width) break;
    const text = segment.text.slice(0, width - used);
    used += text.length;
    const style = segment.style ?? 'none';
    out += color && style !== 'none' ? `${CODES[style]}${text}${RESET}` : text;
  }
  return color ? out : out.trimEnd();
}

/** 850 ms, 12.3 s, 4m05s, 2h10m. */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.floor(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

function usd(value: number): string {
  return `$${value.toFixed(value < 1 ? 4 : 2)}`;
}
