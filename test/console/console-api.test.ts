import { request } from 'node:http';
import { createServer } from 'node:net';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConsoleProcess, demoDatabase, runCli, startConsole, tempDir } from './helpers.js';

// The console's HTTP API on the demo's database, through a real `switchboard console` process.

let tmp: ReturnType<typeof tempDir>;
let db: string;
let console_: ConsoleProcess;

beforeAll(async () => {
  tmp = tempDir();
  db = await demoDatabase(tmp.dir);
  console_ = await startConsole(['--db', db]);
}, 180_000);

afterAll(async () => {
  await console_?.stop();
  tmp?.cleanup();
});

/** A GET through node:http, which sends the Host header as given (fetch does not let a caller set it). */
function get(path: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
    const req = request(new URL(path, console_.url), { headers }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c: string) => {
        text += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown> }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function post(path: string, body: string, headers: Record<string, string> = {}) {
  const res = await fetch(new URL(path, console_.url), { method: 'POST', body, headers });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const json = { 'content-type': 'application/json' };
const authorized = () => ({ ...json, authorization: `Bearer ${console_.token}` });

/** What an action could change: every bus row, the audit head, every item's state. */
function fingerprint(): string {
  const d = new Database(db, { readonly: true });
  try {
    return JSON.stringify([
      d.prepare('SELECT * FROM bus_jobs ORDER BY seq').all(),
      d.prepare('SELECT seq, hash FROM audit_head').all(),
      d.prepare('SELECT id, state FROM coord_items ORDER BY id').all(),
    ]);
  } finally {
    d.close();
  }
}

describe('the console API on the demo database', () => {
  it('lists the items with their state, hops and cost, and filters them', async () => {
    const { status, body } = await get('/api/items');
    expect(status).toBe(200);
    const items = body.items as { id: string; state: string; hops: number; costUsd: number; workflow: string }[];
    expect(items).toHaveLength(2);
    for (const item of items) {
      expect(item).toMatchObject({ state: 'completed', hops: 7, workflow: 'dev-sdlc@1' });
      expect(item.costUsd).toBeGreaterThan(0);
      // The item's output: the devops stage's answer, in one line.
      expect((item as unknown as { output: { state: string; summary: string } }).output).toMatchObject({
        state: 'completed',
        summary: expect.stringMatching(/\S/),
      });
    }
    expect(((await get('/api/items?state=completed')).body.items as unknown[]).length).toBe(2);
    expect(((await get('/api/items?state=running')).body.items as unknown[]).length).toBe(0);
    expect(((await get('/api/items?workflow=other')).body.items as unknown[]).length).toBe(0);
    expect(((await get('/api/items?workflow=dev-sdlc&state=completed')).body.items as unknown[]).length).toBe(2);
    // Newest first; a limit keeps the newest.
    const created = (items as unknown as { createdAt: number }[]).map((i) => i.createdAt);
    expect(created).toEqual([...created].sort((a, b) => b - a));
    const newest = (await get('/api/items?limit=1')).body.items as { id: string }[];
    expect(newest.map((i) => i.id)).toEqual([items[0]?.id]);
    const overview = await get('/api/overview');
    expect(overview.body).toMatchObject({ coordinator: true, bus: 'sqlite', workflows: ['dev-sdlc'] });
  });

  it("shows one item's timeline: hops, audit rows and the chain's verification, with no token in it", async () => {
    const [first] = (await get('/api/items')).body.items as { id: string }[];
    const { status, body } = await get(`/api/items/${first?.id}`);
    expect(status).toBe(200);
    const hops = body.hops as { kind: string; role: string; state: string; answer: string | null }[];
    expect(hops).toHaveLength(7);
    expect(hops.map((h) => h.role)).toEqual([
      'architect',
      'coding',
      'architect',
      'testing',
      'coding',
      'testing',
      'devops',
    ]);
    const query = hops.find((h) => h.kind === 'query');
    expect(query?.answer).toBeTruthy();
    expect(body.chain).toMatchObject({ ok: true, entries: 72 });
    const audit = body.audit as { kind: string }[];
    expect(audit.length).toBeGreaterThan(10);
    expect(audit.map((r) => r.kind)).toEqual(expect.arrayContaining(['item-created', 'approval', 'item-completed']));
    // Neither continuation tokens nor idempotency keys leave the console.
    const d = new Database(db, { readonly: true });
    const secrets = d
      .prepare('SELECT continuation FROM coord_hops WHERE continuation IS NOT NULL AND item_id = ?')
      .all(first?.id) as { continuation: string }[];
    d.close();
    expect(secrets.length).toBeGreaterThan(0);
    const text = JSON.stringify(body);
    for (const { continuation } of secrets) expect(text).not.toContain(continuation);
  });

  it('serves the queues, the tasks and agents, and both machines as graphs', async () => {
    const queues = (await get('/api/queues')).body.queues as { role: string; deadLetters: number }[];
    expect(queues.map((q) => q.role)).toEqual(expect.arrayContaining(['architect', 'coding', 'testing', 'devops']));
    const tasks = await get('/api/tasks');
    expect((tasks.body.tasks as unknown[]).length).toBeGreaterThan(0);
    expect((tasks.body.agents as { name: string }[]).length).toBeGreaterThan(0);
    expect(JSON.stringify(tasks.body)).not.toMatch(/token/i);
    const machines = (await get('/api/machines')).body.machines as { id: string; states: string[]; edges: unknown[] }[];
    expect(machines.map((m) => m.id)).toEqual(['task', 'workflow-run']);
    expect(machines[0]?.states).toContain('input-required');
    expect(machines[1]?.states).toContain('awaiting-approval');
    for (const m of machines) expect(m.edges.length).toBeGreaterThan(5);
  });

  it('answers malformed requests with 4xx and a message that says what to do, changing nothing', async () => {
    const before = fingerprint();
    const [first] = (await get('/api/items')).body.items as { id: string }[];
    const cases: [Promise<{ status: number; body: Record<string, unknown> }>, number, RegExp][] = [
      [get('/api/nothing'), 404, /no API at/],
      [get('/nothing'), 404, /open \//],
      [get('/api/items?state=sleeping'), 400, /state/],
      [get('/api/items?limit=0'), 400, /limit/],
      [get('/api/items?color=red'), 400, /color/],
      [get('/api/overview?x=1'), 400, /takes none/],
      [get('/api/items/no-such-item'), 404, /no work item/],
      [get('/api/tasks?state=asleep'), 400, /unknown task state/],
      [get('/api/dead-letters'), 400, /role/],
      [post('/api/approvals', '{}', json), 401, /access token/],
      [post('/api/approvals', '{}', { ...json, authorization: 'Bearer wrong' }), 401, /access token/],
      [post('/api/approvals', 'not json', authorized()), 400, /not JSON/],
      [post('/api/approvals', '{}', { authorization: `Bearer ${console_.token}` }), 415, /application\/json/],
      [post('/api/approvals', '{"itemId":1}', authorized()), 400, /bad approval/],
      [
        post(
          '/api/approvals',
          JSON.stringify({ itemId: 'x', approver: 'a', decision: 'approve', extra: 1 }),
          authorized(),
        ),
        400,
        /bad approval/,
      ],
      [
        post('/api/approvals', JSON.stringify({ itemId: 'nope', approver: 'a', decision: 'approve' }), authorized()),
        404,
        /no work item/,
      ],
      [
        post(
          '/api/approvals',
          JSON.stringify({ itemId: first?.id, approver: 'release-manager', decision: 'approve' }),
          authorized(),
        ),
        409,
        /not waiting for an approval/,
      ],
      [post('/api/approvals', JSON.stringify({ pad: 'x'.repeat(70_000) }), authorized()), 413, /over 65536 bytes/],
      [post('/api/dead-letters/replay', JSON.stringify({ role: '' }), authorized()), 400, /bad replay/],
      [post('/api/other', '{}', authorized()), 404, /no action/],
    ];
    for (const [call, status, message] of cases) {
      const answer = await call;
      expect(answer.status, JSON.stringify(answer.body)).toBe(status);
      expect(String(answer.body.error)).toMatch(message);
    }
    const put = await fetch(new URL('/api/items', console_.url), { method: 'PUT' });
    expect(put.status).toBe(405);
    expect(fingerprint()).toBe(before);
  });

  it('answers only pages it serves itself (Host and Origin checked), with a strict content policy', async () => {
    const port = new URL(console_.url).port;
    expect((await get('/api/items', { host: `evil.example:${port}` })).status).toBe(403);
    expect((await get('/api/items', { origin: 'http://evil.example' })).status).toBe(403);
    expect((await get('/api/items', { origin: `http://127.0.0.1:${port}` })).status).toBe(200);
    const page = await fetch(console_.url);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    const html = await page.text();
    // Everything the page loads is its own.
    expect(html).not.toMatch(/https?:\/\//);
    for (const asset of ['/assets/console.js', '/assets/console.css']) {
      const res = await fetch(new URL(asset, console_.url));
      expect(res.status).toBe(200);
      expect(await res.text()).not.toMatch(/https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
    }
  });

  it('pushes a change event when another process commits to the file', async () => {
    const controller = new AbortController();
    const res = await fetch(new URL('/api/events', console_.url), { signal: controller.signal });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const read = async (until: (t: string) => boolean) => {
      while (!until(text)) {
        const { value, done } = await reader.read();
        if (done) break;
        text += decoder.decode(value);
      }
    };
    await read((t) => t.includes('event: change'));
    const first = text;
    // Another process writes the file: a dead letter's replay of an empty role still bumps nothing, so write a row.
    const approve = await runCli(['approve', '--db', db, '--item', 'someone', '--approver', 'x']);
    expect(approve.code, approve.stderr).toBe(0);
    await read((t) => t.length > first.length && t.slice(first.length).includes('event: change'));
    controller.abort();
  });
});

describe('switchboard console refuses to start without what it needs', () => {
  it('a missing database, an unreachable bus, a bad --listen, a port in use', async () => {
    const t = tempDir();
    try {
      const missing = await runCli(['console', '--db', `${t.dir}/none.db`, '--listen', '127.0.0.1:0']);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toMatch(/no database at .*none\.db/);
      const db2 = await demoDatabase(t.dir);
      const bus = await runCli(['console', '--db', db2, '--bus', 'redis://127.0.0.1:1', '--listen', '127.0.0.1:0']);
      expect(bus.code).toBe(1);
      expect(bus.stderr).toMatch(/cannot reach the bus redis:\/\/127\.0\.0\.1:1/);
      const listen = await runCli(['console', '--db', db2, '--listen', 'nowhere']);
      expect(listen.code).toBe(2);
      expect(listen.stderr).toMatch(/--listen must be HOST:PORT/);
      const taken = createServer();
      await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
      const port = (taken.address() as { port: number }).port;
      const inUse = await runCli(['console', '--db', db2, '--listen', `127.0.0.1:${port}`]);
      taken.close();
      expect(inUse.code).toBe(1);
      expect(inUse.stderr).toMatch(/cannot listen on 127\.0\.0\.1:\d+: EADDRINUSE/);
    } finally {
      t.cleanup();
    }
  }, 180_000);
});
