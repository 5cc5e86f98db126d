// The item view's drawings: the workflow's own stages with the item's path
// on them, its child work items as a tree, and parts and audit data as
// readable tables. Plain DOM and SVG, drawn from what GET /api/items/ID
// returns.
import { h, state, svg, usd } from './dom.js';

/**
 * The stages in columns by their distance from the start (following the
 * next rules), each run's ends as small end nodes; the stages the item
 * visited, the one it is at and the one it failed at are marked, and the
 * edges it took are drawn bold.
 */
export function stageDiagram(workflow, path) {
  const names = workflow.stages.map((s) => s.name);
  const depth = new Map([[workflow.start, 0]]);
  const queue = [workflow.start];
  while (queue.length > 0) {
    const name = queue.shift();
    const stage = workflow.stages.find((s) => s.name === name);
    for (const rule of stage?.next ?? []) {
      if (!rule.end && !depth.has(rule.to)) {
        depth.set(rule.to, depth.get(name) + 1);
        queue.push(rule.to);
      }
    }
  }
  for (const n of names) if (!depth.has(n)) depth.set(n, 0);
  const ends = [...new Set(workflow.stages.flatMap((s) => s.next.filter((r) => r.end).map((r) => r.to)))];
  const lastColumn = Math.max(...depth.values()) + 1;
  const columns = [];
  for (const n of names) {
    columns[depth.get(n)] ??= [];
    columns[depth.get(n)].push(n);
  }
  columns[lastColumn] = ends.map((e) => `end:${e}`);
  const W = 170;
  const H = 58;
  const GAP_X = 70;
  const GAP_Y = 26;
  const pos = new Map();
  for (const [x, col] of columns.entries()) {
    for (const [y, n] of (col ?? []).entries()) pos.set(n, { x: 20 + x * (W + GAP_X), y: 20 + y * (H + GAP_Y) });
  }
  const width = 40 + columns.length * (W + GAP_X);
  const height = 40 + Math.max(...columns.map((c) => c?.length ?? 0)) * (H + GAP_Y);
  const visits = new Map();
  for (const v of path.visits) visits.set(v.stage, (visits.get(v.stage) ?? 0) + 1);
  const taken = new Set();
  for (let i = 1; i < path.visits.length; i++) taken.add(`${path.visits[i - 1].stage}\u0000${path.visits[i].stage}`);
  const lastVisit = path.visits.at(-1)?.stage;
  const root = svg('svg', {
    class: 'stages',
    width,
    height,
    viewBox: `0 0 ${width} ${height}`,
    role: 'img',
    'aria-label': 'workflow stages',
  });
  root.append(
    svg(
      'defs',
      {},
      svg(
        'marker',
        { id: 'arrow-stages', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto' },
        svg('path', { d: 'M0,0 L10,5 L0,10 z', fill: '#98a2b3' }),
      ),
    ),
  );
  for (const stage of workflow.stages) {
    for (const rule of stage.next) {
      const target = rule.end ? `end:${rule.to}` : rule.to;
      const a = pos.get(stage.name);
      const b = pos.get(target);
      if (!a || !b) continue;
      const wasTaken =
        taken.has(`${stage.name}\u0000${rule.to}`) || (rule.end && lastVisit === stage.name && path.current === null);
      const forward = b.x > a.x;
      const x1 = forward ? a.x + W : a.x + W / 2;
      const y1 = forward ? a.y + H / 2 : a.y + H;
      const x2 = forward ? b.x : b.x + W / 2;
      const y2 = forward ? b.y + H / 2 : b.y + H;
      const d = forward
        ? `M${x1},${y1} C${x1 + 35},${y1} ${x2 - 35},${y2} ${x2},${y2}`
        : `M${x1},${y1} C${x1},${y1 + 40} ${x2},${y2 + 40} ${x2},${y2}`;
      const label = `${rule.on}${rule.when ? ` when ${rule.when}` : ''} → ${rule.end ? `end: ${rule.to}` : rule.to}`;
      root.append(
        svg(
          'path',
          {
            class: `edge${wasTaken ? ' taken' : ''}`,
            d,
            'marker-end': 'url(#arrow-stages)',
            'data-from': stage.name,
            'data-to': target,
          },
          svg('title', {}, label),
        ),
      );
    }
  }
  for (const stage of workflow.stages) {
    const p = pos.get(stage.name);
    const count = visits.get(stage.name) ?? 0;
    const classes = [
      'stage',
      count > 0 ? 'visited' : '',
      stage.name === path.current ? 'current' : '',
      stage.name === path.failed ? 'failed' : '',
    ];
    const what =
      stage.kind === 'parallel'
        ? `parallel: ${stage.branches.map((b) => b.split(':')[0]).join(', ')}`
        : stage.kind === 'map'
          ? `map: ${stage.runs}`
          : stage.kind === 'workflow'
            ? `workflow: ${stage.runs}`
            : `role: ${stage.runs}`;
    root.append(
      svg(
        'g',
        { class: classes.join(' ').replace(/\s+/g, ' ').trim(), 'data-stage': stage.name, 'data-visits': count },
        svg('rect', { x: p.x, y: p.y, width: W, height: H, rx: 8 }),
        svg(
          'text',
          { x: p.x + W / 2, y: p.y + 22, 'text-anchor': 'middle', class: 'name' },
          `${stage.approvers ? '⚑ ' : ''}${stage.name}${count > 1 ? ` ×${count}` : ''}`,
        ),
        svg('text', { x: p.x + W / 2, y: p.y + 42, 'text-anchor': 'middle', class: 'kind' }, what),
        svg(
          'title',
          {},
          [
            stage.name,
            what,
            stage.branches.length > 0 ? `branches: ${stage.branches.join('; ')}` : '',
            stage.approvers ? `approvers: ${stage.approvers.join(', ')}` : '',
            count > 0 ? `visited ${count} time(s)` : 'not visited',
          ]
            .filter(Boolean)
            .join('\n'),
        ),
      ),
    );
  }
  for (const end of ends) {
    const p = pos.get(`end:${end}`);
    root.append(
      svg(
        'g',
        { class: 'end', 'data-end': end },
        svg('rect', { x: p.x, y: p.y + 12, width: W, height: H - 24, rx: 17 }),
        svg('text', { x: p.x + W / 2, y: p.y + H / 2 + 4, 'text-anchor': 'middle' }, `end: ${end}`),
      ),
    );
  }
  return root;
}

/** The child work items, indented by depth, each with its state and cost, linking to its own view. */
export function childTree(children) {
  return h(
    'table',
    { id: 'children' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', {}, 'child'),
        h('th', {}, 'branch'),
        h('th', {}, 'workflow'),
        h('th', {}, 'state'),
        h('th', { class: 'num' }, 'own cost'),
        h('th', { class: 'num' }, 'with its children'),
      ),
    ),
    h(
      'tbody',
      {},
      children.map((c) =>
        h(
          'tr',
          { 'data-child': c.id, 'data-depth': c.depth },
          h(
            'td',
            { style: undefined, class: `depth-${Math.min(c.depth, 6)}` },
            h('a', { href: `#/items/${encodeURIComponent(c.id)}` }, h('code', {}, c.id)),
          ),
          h('td', {}, c.branch ?? ''),
          h('td', {}, c.workflow),
          h('td', {}, state(c.state)),
          h('td', { class: 'num' }, usd(c.ownCostUsd)),
          h('td', { class: 'num' }, usd(c.costUsd)),
        ),
      ),
    ),
  );
}

/** A value as the page shows it: an object as a key/value table, a list as items, text as text. */
export function valueView(value, depth = 0) {
  if (value === null || value === undefined) return h('span', { class: 'muted' }, 'null');
  if (typeof value !== 'object') return h('span', { class: 'value' }, String(value));
  if (depth > 4) return h('code', {}, JSON.stringify(value));
  if (Array.isArray(value)) {
    if (value.length === 0) return h('span', { class: 'muted' }, 'none');
    return h(
      'ol',
      { class: 'values' },
      value.map((v) => h('li', {}, valueView(v, depth + 1))),
    );
  }
  const entries = Object.entries(value);
  if (entries.length === 0) return h('span', { class: 'muted' }, 'none');
  return h(
    'table',
    { class: 'kv' },
    h(
      'tbody',
      {},
      entries.map(([k, v]) => h('tr', {}, h('th', {}, k), h('td', {}, valueView(v, depth + 1)))),
    ),
  );
}

/** Parts: text as text, data as a table, a file by its name and type. */
export function partsView(parts) {
  if (parts.length === 0) return h('p', { class: 'muted' }, 'no parts');
  return parts.map((p) =>
    p.kind === 'text'
      ? h('div', { class: 'part text' }, p.text)
      : p.kind === 'data'
        ? h('div', { class: 'part data' }, valueView(p.data))
        : h('div', { class: 'part file' }, `file ${p.name ?? '(unnamed)'}${p.mimeType ? ` (${p.mimeType})` : ''}`),
  );
}

/** A duration as the waiting table shows it: ms, s, min or h. */
export function age(n) {
  if (n < 1000) return `${Math.round(n)} ms`;
  if (n < 60_000) return `${(n / 1000).toFixed(1)} s`;
  if (n < 3_600_000) return `${Math.floor(n / 60_000)} min ${Math.floor((n % 60_000) / 1000)} s`;
  return `${Math.floor(n / 3_600_000)} h ${Math.floor((n % 3_600_000) / 60_000)} min`;
}

/** Where a hop's message is on the bus, in words (null: the bus was not read). */
const BUS_WORDS = {
  queued: 'queued, not taken yet',
  delayed: 'queued, after its retry backoff',
  held: 'held by a worker',
  dead: 'dead-lettered',
  missing: 'not on the bus (lost: its timeout publishes it again)',
};

/**
 * The columns of what items wait for on the bus: each hop (or query) out,
 * its role, since when and for how long, and where its message is.
 * `withItem` adds the item column (the list of every item's).
 */
export function waitingColumns(withItem) {
  return [
    // The item links to its view (the rows are not clickable: the items table above is the list to click).
    ...(withItem
      ? [
          {
            title: 'item',
            cell: (w) => h('a', { href: `#/items/${encodeURIComponent(w.itemId)}` }, h('code', {}, w.itemId)),
          },
        ]
      : []),
    { title: 'waits on', cell: (w) => (w.kind === 'query' ? `query of hop ${w.hop}` : `hop ${w.hop}`) },
    { title: 'stage', cell: (w) => w.stage },
    { title: 'role', cell: (w) => w.role },
    { title: 'attempt', num: true, cell: (w) => w.attempt },
    { title: 'since', cell: (w) => new Date(w.since).toLocaleTimeString() },
    { title: 'age', num: true, cell: (w) => age(w.ageMs) },
    { title: 'timeouts', num: true, cell: (w) => w.timeouts },
    {
      title: 'on the bus',
      cell: (w) => (w.bus === null ? h('span', { class: 'muted' }, 'not read') : BUS_WORDS[w.bus]),
    },
  ];
}
