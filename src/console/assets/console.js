// The switchboard console's page: plain DOM, no framework, nothing loaded
// from elsewhere. It reads the JSON API of the process that served it and
// re-reads the open view when that process reports a change (server-sent
// events). Actions carry the access token, taken once from the address's
// fragment (#token=...) and kept for this tab only.

import { h, state, usd } from './dom.js';
import { childTree, partsView, stageDiagram, valueView, waitingColumns } from './item-view.js';

const view = document.getElementById('view');
const notice = document.getElementById('notice');
const TOKEN_KEY = 'switchboard.console.token';

const fragment = new URLSearchParams(location.hash.slice(1));
if (fragment.has('token')) {
  sessionStorage.setItem(TOKEN_KEY, fragment.get('token'));
  history.replaceState(null, '', `${location.pathname}#/items`);
}
const token = () => sessionStorage.getItem(TOKEN_KEY);
/** Who the token acts as: `{ user: NAME }` for a user's own token, `{ user: null }` for the shared one. */
let me = null;
const tokenState = document.getElementById('token-state');
tokenState.textContent = token() ? 'checking the token…' : 'read-only (no token)';
if (token()) {
  fetch('/api/me', { headers: { authorization: `Bearer ${token()}` } })
    .then(async (res) => {
      const body = await res.json();
      if (!res.ok) throw new Error(body.error ?? `HTTP ${res.status}`);
      me = body;
      tokenState.textContent = me.user ? `actions enabled as ${me.user}` : 'actions enabled (shared token)';
      render();
    })
    .catch(() => {
      tokenState.textContent = 'token refused (revoked or unknown): read-only';
    });
}

const ms = (n) =>
  n === null || n === undefined ? '' : n < 1000 ? `${Math.round(n)} ms` : `${(n / 1000).toFixed(1)} s`;
const time = (t) => (t ? new Date(t).toLocaleTimeString() : '');

/** What the reads of the current render returned, without the fields that change with the clock alone. */
let reads = [];
const VOLATILE = new Set(['at', 'elapsedMs', 'lagMs', 'idleMs', 'ageMs']);

async function api(path, init) {
  const res = await fetch(path, init);
  const body = await res.json().catch(() => ({ error: `HTTP ${res.status}` }));
  if (!res.ok) throw new Error(body.error ?? `HTTP ${res.status}`);
  if (init === undefined) reads.push(JSON.stringify(body, (key, value) => (VOLATILE.has(key) ? undefined : value)));
  return body;
}

async function act(path, body, done) {
  notice.className = '';
  notice.textContent = '';
  try {
    const headers = { 'content-type': 'application/json' };
    if (token()) headers.authorization = `Bearer ${token()}`;
    const result = await api(path, { method: 'POST', headers, body: JSON.stringify(body) });
    notice.className = 'good';
    notice.textContent = done(result);
  } catch (error) {
    notice.textContent = error.message;
  }
  render();
}

function withId(id, el) {
  el.id = id;
  return el;
}

function table(columns, rows, onRow) {
  return h(
    'table',
    {},
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        columns.map((c) => h('th', { class: c.num ? 'num' : undefined }, c.title)),
      ),
    ),
    h(
      'tbody',
      {},
      rows.length === 0
        ? h('tr', {}, h('td', { colspan: columns.length, class: 'muted' }, 'none'))
        : rows.map((row) =>
            h(
              'tr',
              { class: onRow ? 'clickable' : undefined, onclick: onRow ? () => onRow(row) : undefined },
              columns.map((c) => h('td', { class: c.num ? 'num' : undefined }, c.cell(row))),
            ),
          ),
    ),
  );
}

// ---- diagrams, drawn from the machines' transition tables ----

let machines;
async function machine(id) {
  machines ??= (await api('/api/machines')).machines;
  return machines.find((m) => m.id === id);
}

/** Lays the states out in columns by distance from the initial state, edges as arrows. */
function diagram(graph, current) {
  // Live states by their distance from the initial state, the final states in a last column.
  const depth = new Map([[graph.initial, 0]]);
  const queue = [graph.initial];
  while (queue.length > 0) {
    const s = queue.shift();
    for (const e of graph.edges) {
      if (e.from === s && !depth.has(e.to) && !graph.final.includes(e.to)) {
        depth.set(e.to, depth.get(s) + 1);
        queue.push(e.to);
      }
    }
  }
  const last = Math.max(...depth.values()) + 1;
  for (const s of graph.states) if (!depth.has(s)) depth.set(s, graph.final.includes(s) ? last : 0);
  const columns = [];
  for (const s of graph.states) {
    const column = depth.get(s);
    columns[column] ??= [];
    columns[column].push(s);
  }
  const W = 150;
  const H = 46;
  const pos = new Map();
  for (const [x, col] of columns.entries()) {
    for (const [y, s] of col.entries()) pos.set(s, { x: 20 + x * (W + 60), y: 20 + y * (H + 30) });
  }
  const width = 40 + columns.length * (W + 60);
  const height = 40 + Math.max(...columns.map((c) => c.length)) * (H + 30);
  const ns = 'http://www.w3.org/2000/svg';
  const s = (tag, attrs, ...kids) => {
    const el = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
    el.append(...kids);
    return el;
  };
  const svg = s('svg', {
    class: 'machine',
    width,
    height,
    viewBox: `0 0 ${width} ${height}`,
    role: 'img',
    'aria-label': `${graph.id} machine`,
    'data-current': current ?? '',
  });
  svg.append(
    s(
      'defs',
      {},
      s(
        'marker',
        {
          id: `arrow-${graph.id}`,
          viewBox: '0 0 10 10',
          refX: 9,
          refY: 5,
          markerWidth: 7,
          markerHeight: 7,
          orient: 'auto',
        },
        s('path', { d: 'M0,0 L10,5 L0,10 z', fill: '#98a2b3' }),
      ),
    ),
  );
  for (const e of graph.edges) {
    const a = pos.get(e.from);
    const b = pos.get(e.to);
    if (!a || !b) continue;
    const cls = `edge${e.from === current ? ' from-current' : ''}`;
    const title = s('title', {});
    title.textContent = `${e.from} → ${e.to}: ${e.labels.join(', ')}`;
    if (e.from === e.to) {
      svg.append(
        s(
          'path',
          { class: cls, d: `M${a.x + 30},${a.y} c0,-18 40,-18 40,0`, 'marker-end': `url(#arrow-${graph.id})` },
          title,
        ),
      );
      continue;
    }
    const forward = b.x > a.x;
    const x1 = forward ? a.x + W : a.x + W / 2;
    const y1 = forward ? a.y + H / 2 : a.y + (b.y > a.y ? H : 0);
    const x2 = forward ? b.x : b.x + W / 2;
    const y2 = forward ? b.y + H / 2 : b.y + (b.y > a.y ? 0 : H);
    const bend = forward ? 0 : 40;
    svg.append(
      s(
        'path',
        {
          class: cls,
          d: `M${x1},${y1} C${x1 + 30 + bend},${y1} ${x2 - 30 + bend},${y2} ${x2},${y2}`,
          'marker-end': `url(#arrow-${graph.id})`,
        },
        title,
      ),
    );
  }
  for (const state of graph.states) {
    const p = pos.get(state);
    const label = s('text', { x: p.x + W / 2, y: p.y + H / 2 + 4, 'text-anchor': 'middle' });
    label.textContent = state;
    const classes = ['node', graph.final.includes(state) ? 'final' : '', state === current ? 'current' : ''];
    svg.append(
      s(
        'g',
        { class: classes.join(' ').trim(), 'data-state': state },
        s('rect', { x: p.x, y: p.y, width: W, height: H, rx: 8 }),
        label,
      ),
    );
  }
  return svg;
}

// ---- views ----

const ITEM_STATES = ['pending', 'running', 'suspended', 'awaiting-approval', 'completed', 'failed', 'canceled'];
const filters = { state: '', workflow: '', q: '' };
/** Items per page of the list, and the page shown (0: the newest). */
const PAGE = 50;
let page = 0;

async function itemsView() {
  const overview = await api('/api/overview');
  const query = new URLSearchParams();
  if (filters.state) query.set('state', filters.state);
  if (filters.workflow) query.set('workflow', filters.workflow);
  if (filters.q) query.set('q', filters.q);
  // One more than a page: whether there is a next one.
  query.set('limit', String(PAGE + 1));
  query.set('offset', String(page * PAGE));
  const { items: read } = await api(`/api/items?${query}`);
  const items = read.slice(0, PAGE);
  const more = read.length > PAGE;
  const counts = overview.items?.byState ?? {};
  const select = (name, values) =>
    h(
      'select',
      {
        name,
        onchange: (e) => {
          filters[name] = e.target.value;
          page = 0;
          render();
        },
      },
      h('option', { value: '' }, `every ${name}`),
      values.map((v) => h('option', { value: v, selected: filters[name] === v }, v)),
    );
  return [
    h('h1', {}, 'Work items'),
    h(
      'div',
      { class: 'cards' },
      ITEM_STATES.filter((s) => counts[s]).map((s) => h('div', { class: 'card' }, h('b', {}, counts[s]), s)),
      h('div', { class: 'card' }, h('b', {}, usd(overview.items?.costUsd)), 'spent'),
    ),
    h(
      'div',
      { class: 'filters' },
      h('input', {
        type: 'search',
        name: 'q',
        placeholder: 'search id, workflow, state',
        value: filters.q,
        onkeydown: (e) => {
          if (e.key !== 'Enter') return;
          filters.q = e.target.value.trim();
          page = 0;
          e.target.blur();
          render();
        },
      }),
      select('state', ITEM_STATES),
      select('workflow', overview.workflows ?? []),
      h(
        'span',
        { class: 'pager' },
        h(
          'button',
          {
            'data-action': 'previous-page',
            disabled: page === 0,
            onclick: () => {
              page = Math.max(0, page - 1);
              render();
            },
          },
          '← newer',
        ),
        h('span', { id: 'page' }, `page ${page + 1}`),
        h(
          'button',
          {
            'data-action': 'next-page',
            disabled: !more,
            onclick: () => {
              page += 1;
              render();
            },
          },
          'older →',
        ),
      ),
    ),
    table(
      [
        { title: 'item', cell: (i) => h('code', {}, i.id) },
        { title: 'workflow', cell: (i) => i.workflow },
        { title: 'state', cell: (i) => state(i.state) },
        { title: 'stage', cell: (i) => i.stage ?? '' },
        { title: 'hops', num: true, cell: (i) => i.hops },
        { title: 'cost', num: true, cell: (i) => usd(i.costUsd) },
        { title: 'elapsed', num: true, cell: (i) => ms(i.elapsedMs) },
        { title: 'output', cell: (i) => outputCell(i) },
      ],
      items,
      (i) => {
        location.hash = `#/items/${encodeURIComponent(i.id)}`;
      },
    ),
    (overview.waiting ?? []).length > 0 ? h('h2', {}, `Waiting on the bus (${overview.waiting.length})`) : null,
    (overview.waiting ?? []).length > 0 ? withId('waiting', table(waitingColumns(true), overview.waiting)) : null,
  ];
}

function outputCell(item) {
  if (item.failure) return h('span', { class: 'muted' }, `${item.failure.code}: ${item.failure.reason}`);
  if (item.output)
    return item.output.summary.length > 120 ? `${item.output.summary.slice(0, 120)}…` : item.output.summary;
  return '';
}

function decideBox(item) {
  const approvers = item.approval?.approvers;
  const who = me?.user
    ? h('span', { class: 'as' }, `as ${me.user}`)
    : approvers
      ? h(
          'select',
          { name: 'approver' },
          approvers.map((a) => h('option', { value: a }, a)),
        )
      : h('input', { name: 'approver', placeholder: 'your name', required: true });
  const reason = h('input', { name: 'reason', placeholder: 'reason (with deny)' });
  const send = (decision) => () => {
    // A user's token is the approver: the server takes the name from it.
    const body = me?.user ? { itemId: item.id, decision } : { itemId: item.id, approver: who.value, decision };
    if (decision === 'deny' && reason.value) body.reason = reason.value;
    act(
      '/api/approvals',
      body,
      (r) =>
        `${decision === 'approve' ? 'approval' : 'denial'} of ${item.id} sent${r.duplicate ? ' (already sent)' : ''}`,
    );
  };
  return h(
    'div',
    { class: 'decide' },
    h(
      'span',
      {},
      `${item.approval?.source === 'governance' ? 'Governance' : 'Gate'} at ${item.approval?.stage}: ${item.approval?.reason}`,
    ),
    who,
    h('button', { class: 'primary', onclick: send('approve'), 'data-action': 'approve' }, 'Approve'),
    reason,
    h('button', { class: 'danger', onclick: send('deny'), 'data-action': 'deny' }, 'Deny'),
  );
}

function cancelBox(item) {
  // A user's token is who cancels: the server takes the name from it.
  const by = me?.user
    ? h('span', { class: 'as' }, `as ${me.user}`)
    : h('input', { name: 'by', placeholder: 'your name', required: true });
  const reason = h('input', { name: 'cancel-reason', placeholder: 'why (optional)' });
  const send = () => {
    const body = me?.user ? { itemId: item.id } : { itemId: item.id, by: by.value };
    if (reason.value) body.reason = reason.value;
    act('/api/items/cancel', body, (r) => `cancel of ${item.id} sent${r.duplicate ? ' (already sent)' : ''}`);
  };
  return h(
    'div',
    { class: 'decide' },
    h('span', {}, 'Cancel this item and its child items:'),
    by,
    reason,
    h('button', { class: 'danger', onclick: send, 'data-action': 'cancel' }, 'Cancel item'),
  );
}

async function itemView(id) {
  const detail = await api(`/api/items/${encodeURIComponent(id)}`);
  const { item, hops, waiting, streamed, audit, chain, input, result, workflow, path, children } = detail;
  const run = await machine('workflow-run');
  return [
    h('h1', {}, 'Work item ', h('code', {}, item.id), ' ', state(item.state)),
    h(
      'div',
      { class: 'cards' },
      h('div', { class: 'card' }, h('b', {}, item.workflow), 'workflow'),
      h('div', { class: 'card' }, h('b', {}, item.stage ?? '—'), 'stage'),
      h('div', { class: 'card' }, h('b', {}, item.hops), 'hops'),
      h('div', { class: 'card' }, h('b', {}, usd(item.costUsd)), `${item.inputTokens + item.outputTokens} tokens`),
      h('div', { class: 'card' }, h('b', {}, ms(item.elapsedMs)), 'elapsed'),
    ),
    item.state === 'awaiting-approval' ? h('div', { class: 'panel' }, decideBox(item)) : null,
    ['completed', 'failed', 'canceled'].includes(item.state) ? null : h('div', { class: 'panel' }, cancelBox(item)),
    item.failure ? h('div', { class: 'panel' }, h('b', {}, item.failure.code), ` ${item.failure.reason}`) : null,
    // The item's actions (approve, deny above; more go here).
    h('div', { class: 'actions', id: 'item-actions' }),
    h('h2', {}, 'Input'),
    h('div', { class: 'panel', id: 'input' }, partsView(input)),
    item.output
      ? h(
          'div',
          { class: 'panel', id: 'output' },
          h('b', {}, 'Output '),
          // The summary is the parts' text when there are parts: shown once, as parts.
          result && result.parts.length > 0 ? null : item.output.summary,
          result ? h('div', { class: 'parts' }, partsView(result.parts)) : null,
          result?.artifacts.map((a) =>
            h('div', { class: 'artifact' }, h('b', {}, `Artifact ${a.name}`), partsView(a.parts)),
          ),
        )
      : null,
    // What its hops stream while they run (a model agent's answer as it is written); redrawn as it grows.
    (streamed ?? []).length > 0 ? h('h2', {}, 'Streamed') : null,
    (streamed ?? []).length > 0
      ? h(
          'div',
          { class: 'panel', id: 'streamed' },
          streamed.map((a) => h('div', { class: 'artifact' }, h('b', {}, a.name), partsView(a.parts))),
        )
      : null,
    h('h2', {}, 'Stages', workflow ? h('span', { class: 'muted' }, ` of ${workflow.id}@${workflow.version}`) : null),
    workflow
      ? stageDiagram(workflow, path)
      : h('p', { class: 'muted' }, 'The workflow definition this item ran on is not kept in this database.'),
    h(
      'p',
      { class: 'muted', id: 'path' },
      path.visits.length === 0 ? 'No stage visited yet.' : `Path: ${path.visits.map((v) => v.stage).join(' → ')}`,
    ),
    children.length > 0 ? h('h2', {}, `Child work items (${children.length})`) : null,
    children.length > 0 ? childTree(children) : null,
    (waiting ?? []).length > 0 ? h('h2', {}, 'Waiting on the bus') : null,
    (waiting ?? []).length > 0 ? withId('waiting', table(waitingColumns(false), waiting)) : null,
    h('h2', {}, 'Run'),
    diagram(run, item.state),
    h('h2', {}, 'Hops'),
    withId(
      'hops',
      table(
        [
          { title: '#', num: true, cell: (x) => x.seq },
          { title: 'hop', num: true, cell: (x) => x.hop },
          { title: 'kind', cell: (x) => x.kind },
          { title: 'stage', cell: (x) => x.stage },
          { title: 'role', cell: (x) => x.role },
          { title: 'attempt', num: true, cell: (x) => x.attempt },
          { title: 'outcome', cell: (x) => state(x.state) },
          { title: 'model', cell: (x) => x.model ?? '' },
          { title: 'tokens', num: true, cell: (x) => x.inputTokens + x.outputTokens },
          { title: 'cost', num: true, cell: (x) => usd(x.costUsd) },
          { title: 'time', num: true, cell: (x) => ms(x.elapsedMs) },
          {
            title: 'error / answer',
            cell: (x) =>
              x.error
                ? h(
                    'div',
                    {},
                    `${x.error.type}: ${x.error.message}`,
                    x.error.stack
                      ? h('details', { class: 'stack' }, h('summary', {}, 'stack'), h('pre', {}, x.error.stack))
                      : null,
                  )
                : (x.answer ?? ''),
          },
        ],
        hops,
      ),
    ),
    h(
      'h2',
      {},
      'Audit ',
      h(
        'span',
        { class: `chain ${chain.ok ? 'ok' : 'bad'}` },
        chain.ok ? `chain verified (${chain.entries} entries)` : `chain broken: ${chain.problem}`,
      ),
    ),
    withId(
      'audit',
      table(
        [
          { title: 'seq', num: true, cell: (r) => r.seq },
          { title: 'at', cell: (r) => r.at },
          { title: 'kind', cell: (r) => r.kind },
          { title: 'hop', num: true, cell: (r) => r.hop ?? '' },
          { title: 'actor', cell: (r) => r.actor },
          { title: 'data', cell: (r) => h('div', { class: 'data' }, valueView(r.data)) },
        ],
        audit,
      ),
    ),
  ];
}

async function approvalsView() {
  const { items, canAct } = await api('/api/approvals');
  return [
    h('h1', {}, 'Approvals waiting'),
    canAct ? null : h('p', { class: 'muted' }, 'This console has no bus: it cannot send decisions.'),
    items.length === 0 ? h('p', { class: 'muted' }, 'No work item waits for an approval.') : null,
    items.map((item) =>
      h(
        'div',
        { class: 'panel', 'data-item': item.id },
        h(
          'div',
          {},
          h('a', { href: `#/items/${encodeURIComponent(item.id)}` }, h('code', {}, item.id)),
          ` ${item.workflow}, waiting ${ms(Date.now() - item.updatedAt)}`,
        ),
        decideBox(item),
      ),
    ),
  ];
}

async function queuesView() {
  const { queues, bus } = await api('/api/queues');
  const out = [
    h('h1', {}, 'Queues', bus ? h('span', { class: 'muted' }, ` (${bus} bus)`) : null),
    table(
      [
        { title: 'role', cell: (q) => h('code', {}, q.role) },
        { title: 'ready', num: true, cell: (q) => q.depth },
        { title: 'delayed', num: true, cell: (q) => q.delayed },
        { title: 'in flight', num: true, cell: (q) => q.inFlight },
        { title: 'dead', num: true, cell: (q) => q.deadLetters },
        { title: 'oldest', num: true, cell: (q) => ms(q.lagMs) },
      ],
      queues,
    ),
  ];
  for (const q of queues.filter((x) => x.deadLetters > 0)) {
    const { deadLetters } = await api(`/api/dead-letters?role=${encodeURIComponent(q.role)}`);
    out.push(
      h(
        'h2',
        {},
        'Dead letters of ',
        h('code', {}, q.role),
        ' ',
        h(
          'button',
          {
            'data-action': 'replay-all',
            onclick: () =>
              act(
                '/api/dead-letters/replay',
                { role: q.role },
                (r) => `${r.replayed} dead letter(s) of ${q.role} replayed`,
              ),
          },
          'Replay all',
        ),
      ),
      table(
        [
          { title: 'id', cell: (d) => h('code', {}, d.id) },
          {
            title: 'item',
            cell: (d) =>
              d.itemId ? h('a', { href: `#/items/${encodeURIComponent(d.itemId)}` }, h('code', {}, d.itemId)) : '',
          },
          { title: 'hop', num: true, cell: (d) => d.hop ?? '' },
          { title: 'deliveries', num: true, cell: (d) => d.deliveries },
          { title: 'error', cell: (d) => `${d.error.type}: ${d.error.message}` },
          { title: 'dead since', cell: (d) => time(d.deadAt) },
          {
            title: '',
            cell: (d) =>
              h(
                'button',
                {
                  'data-action': 'replay',
                  onclick: () =>
                    act(
                      '/api/dead-letters/replay',
                      { role: q.role, ids: [d.id] },
                      (r) => `${r.replayed} dead letter replayed`,
                    ),
                },
                'Replay',
              ),
          },
        ],
        deadLetters,
      ),
    );
  }
  return out;
}

let selectedTask = null;
async function tasksView() {
  const { tasks, agents, note } = await api('/api/tasks');
  const graph = await machine('task');
  const chosen = tasks.find((t) => t.taskId === selectedTask);
  return [
    h('h1', {}, note ? 'Tasks' : 'Broker tasks'),
    note ? h('p', { class: 'note', id: 'tasks-note' }, note) : null,
    diagram(graph, chosen?.state),
    h(
      'p',
      { class: 'muted' },
      chosen ? `Task ${chosen.taskId} is ${chosen.state}.` : 'Click a task to see its state in the machine.',
    ),
    table(
      [
        { title: 'task', cell: (t) => h('code', {}, t.taskId) },
        { title: 'state', cell: (t) => state(t.state) },
        { title: note ? 'item' : 'context', cell: (t) => t.contextId },
        { title: 'worker', cell: (t) => t.worker },
        { title: 'requester', cell: (t) => t.requester },
        { title: 'updated', cell: (t) => t.updatedAt },
      ],
      tasks,
      (t) => {
        selectedTask = t.taskId;
        render();
      },
    ),
    note ? null : h('h2', {}, 'Agents'),
    note
      ? null
      : table(
          [
            { title: 'name', cell: (a) => a.name },
            { title: 'context', cell: (a) => a.contextId },
            { title: 'kind', cell: (a) => a.kind },
            { title: 'live', cell: (a) => (a.live ? 'yes' : 'no') },
            { title: 'agent id', cell: (a) => h('code', {}, a.agentId) },
          ],
          agents,
        ),
  ];
}

async function machinesView() {
  return [
    h('h1', {}, 'Machines'),
    h('h2', {}, 'The A2A task'),
    diagram(await machine('task')),
    h('h2', {}, 'The workflow run'),
    diagram(await machine('workflow-run')),
  ];
}

// ---- routing and live updates ----

let rendering = Promise.resolve();
function render() {
  rendering = rendering.then(renderNow, renderNow);
  return rendering;
}

let shown = '';
async function renderNow() {
  reads = [];
  const route = location.hash.replace(/^#\//, '') || 'items';
  const [name, ...rest] = route.split('/');
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('active', a.dataset.route === name);
  try {
    const content =
      name === 'items' && rest.length > 0
        ? await itemView(decodeURIComponent(rest.join('/')))
        : name === 'approvals'
          ? await approvalsView()
          : name === 'queues'
            ? await queuesView()
            : name === 'tasks'
              ? await tasksView()
              : name === 'machines'
                ? await machinesView()
                : await itemsView();
    // A change elsewhere in the file (a heartbeat, another item) that this view does not show leaves it as it is:
    // the operator's selection, typing and a button under the pointer stay put.
    const signature = `${route}\n${reads.join('\n')}\n${selectedTask}\n${JSON.stringify(filters)}\n${page}\n${me?.user}`;
    // Keep what the operator is typing in an input across a live refresh.
    const typing = view.contains(document.activeElement) && document.activeElement.tagName === 'INPUT';
    if (signature !== shown && !typing) {
      shown = signature;
      view.replaceChildren(...[content].flat(Number.POSITIVE_INFINITY).filter(Boolean));
    }
  } catch (error) {
    shown = '';
    view.replaceChildren(h('p', { class: 'muted' }, error.message));
  }
  const approvals = await api('/api/approvals').catch(() => ({ items: [] }));
  document.getElementById('approval-count').textContent = approvals.items.length || '';
  document.body.dataset.rendered = String(Date.now());
}

window.addEventListener('hashchange', () => {
  // An action's notice belongs to the view it was taken in.
  notice.className = '';
  notice.textContent = '';
  render();
});
const live = document.getElementById('live');
const events = new EventSource('/api/events');
let pending;
events.addEventListener('change', () => {
  clearTimeout(pending);
  pending = setTimeout(render, 50);
});
events.addEventListener('open', () => {
  live.textContent = 'live';
  live.classList.add('on');
});
events.addEventListener('error', () => {
  live.textContent = 'reconnecting…';
  live.classList.remove('on');
});
render();
