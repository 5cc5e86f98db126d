import { request } from 'node:http';
import { createServer } from 'node:net';
import Database from 'better-sqlite3';
import pg from 'pg';
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresGate } from '../postgres-availability.js';
import { TcpProxy } from '../persistence/tcp-proxy.js';
import { REDIS_URL, redisGate } from '../redis-availability.js';
import {
  type ConsoleProcess,
  type PostgresDeployment,
  demoDatabase,
  postgresDeployment,
  runCli,
  startConsole,
  tempDir,
  until,
} from './helpers.js';

// The console's HTTP API through a real `switchboard console` process, on
// both stores: the demo's SQLite file, and a Coordinator's PostgreSQL
// database (its items run to completion by a real Coordinator on Redis).

const { runPostgres } = await postgresGate();
const { runRedis } = await redisGate();

/** What a store's variant of the suite knows of its data. */
interface Fixture {
  consoleArgs: string[];
  /** What an action could change: every bus row or queue, the audit head, every item's state. */
  fingerprint(): Promise<string>;
  /** The continuation tokens of an item's hops (secrets that must not leave the console). */
  continuations(itemId: string): Promise<string[]>;
  /** Arguments that point `switchboard approve` at the bus. */
  busArgs: string[];
  /** The audit rows the chain holds, when the fixture knows (the demo's: 72). */
  chainEntries: number | undefined;
  bus: string;
  cleanup(): Promise<void>;
}

async function sqliteFixture(): Promise<Fixture> {
  const tmp = tempDir();
  const db = await demoDatabase(tmp.dir);
  const read = <T>(run: (d: Database.Database) => T): T => {
    const d = new Database(db, { readonly: true });
    try {
      return run(d);
    } finally {
      d.close();
    }
  };
  return {
    consoleArgs: ['--db', db],
    fingerprint: async () =>
      read((d) =>
        JSON.stringify([
          d.prepare('SELECT * FROM bus_jobs ORDER BY seq').all(),
          d.prepare('SELECT seq, hash FROM audit_head').all(),
          d.prepare('SELECT id, state FROM coord_items ORDER BY id').all(),
        ]),
      ),
    continuations: async (itemId) =>
      read(
        (d) =>
          d
            .prepare('SELECT continuation FROM coord_hops WHERE continuation IS NOT NULL AND item_id = ?')
            .all(itemId) as { continuation: string }[],
      ).map((r) => r.continuation),
    busArgs: ['--db', db],
    chainEntries: 72,
    bus: 'sqlite',
    cleanup: async () => tmp.cleanup(),
  };
}

/** Two items of the demo's workflow run to completion by a Coordinator on PostgreSQL and Redis, which then stops. */
async function postgresFixture(deployment: PostgresDeployment): Promise<Fixture> {
  const coordinator = await deployment.startCoordinator(['--auto-approve', 'release-manager']);
  const submitted = await runCli([
    'submit',
    ...deployment.bus,
    '--workflow',
    'dev-sdlc',
    '--input',
    'Add rate limiting',
    '--id',
    'pg',
    '--count',
    '2',
  ]);
  if (submitted.code !== 0) throw new Error(submitted.stderr);
  await deployment.waitForItems(
    (items) => items.length === 2 && items.every((i) => i.state === 'completed'),
    'both items to complete',
  );
  coordinator.child.kill('SIGTERM');
  await coordinator.exited;
  const query = async <T>(text: string, params: unknown[] = []): Promise<T[]> => {
    const client = new pg.Client({ connectionString: deployment.url });
    await client.connect();
    try {
      return (await client.query(text, params)).rows as T[];
    } finally {
      await client.end();
    }
  };
  const prefix = deployment.bus[3] as string;
  return {
    consoleArgs: ['--db', deployment.url, ...deployment.bus],
    async fingerprint() {
      const redis = createClient({ url: REDIS_URL });
      await redis.connect();
      const keys: string[] = [];
      try {
        for await (const found of redis.scanIterator({ MATCH: `{${prefix}}*`, COUNT: 1000 })) keys.push(...found);
        keys.sort();
        const sizes = await Promise.all(keys.map(async (k) => `${k}:${await redis.type(k)}`));
        return JSON.stringify([
          sizes,
          await query('SELECT seq, hash FROM audit_head'),
          await query('SELECT id, state FROM coord_items ORDER BY id'),
        ]);
      } finally {
        await redis.close();
      }
    },
    continuations: async (itemId) =>
      (
        await query<{ continuation: string }>(
          'SELECT continuation FROM coord_hops WHERE continuation IS NOT NULL AND item_id = $1',
          [itemId],
        )
      ).map((r) => r.continuation),
    busArgs: deployment.bus,
    chainEntries: undefined,
    bus: 'redis',
    cleanup: async () => {},
  };
}

const STORES = [
  { store: 'sqlite', run: true },
  { store: 'postgres', run: runPostgres && runRedis },
] as const;

for (const { store, run } of STORES) {
  describe.runIf(run)(`the console API on ${store}`, () => {
    let fixture: Fixture;
    let deployment: PostgresDeployment | undefined;
    let console_: ConsoleProcess;

    beforeAll(async () => {
      if (store === 'postgres') deployment = await postgresDeployment();
      fixture = deployment === undefined ? await sqliteFixture() : await postgresFixture(deployment);
      console_ = await startConsole(fixture.consoleArgs);
    }, 240_000);

    afterAll(async () => {
      await console_?.stop();
      await fixture?.cleanup();
      await deployment?.cleanup();
    });

    /** A GET through node:http, which sends the Host header as given (fetch does not let a caller set it). */
    function get(path: string, headers: Record<string, string> = {}) {
      return new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
        const req = request(new URL(path, console_.url), { headers }, (res) => {
          let text = '';
          res.setEncoding('utf8').on('data', (c: string) => {
            text += c;
          });
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown> }),
          );
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
      expect(((await get('/api/items?limit=1&offset=1')).body.items as { id: string }[]).map((i) => i.id)).toEqual([
        items[1]?.id,
      ]);
      const overview = await get('/api/overview');
      expect(overview.body).toMatchObject({ coordinator: true, store, bus: fixture.bus, workflows: ['dev-sdlc'] });
      expect(overview.body.items).toMatchObject({ byState: { completed: 2 } });
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
      expect(body.chain).toMatchObject({ ok: true, entries: fixture.chainEntries ?? expect.any(Number) });
      const audit = body.audit as { kind: string }[];
      expect(audit.length).toBeGreaterThan(10);
      expect(audit.map((r) => r.kind)).toEqual(expect.arrayContaining(['item-created', 'approval', 'item-completed']));
      // Neither continuation tokens nor idempotency keys leave the console.
      const secrets = await fixture.continuations(first?.id as string);
      expect(secrets.length).toBeGreaterThan(0);
      const text = JSON.stringify(body);
      for (const continuation of secrets) expect(text).not.toContain(continuation);
    });

    it('serves the queues, the tasks and agents, and both machines as graphs', async () => {
      const queues = (await get('/api/queues')).body.queues as { role: string; deadLetters: number }[];
      expect(queues.map((q) => q.role)).toEqual(expect.arrayContaining(['architect', 'coding', 'testing', 'devops']));
      const tasks = await get('/api/tasks');
      expect((tasks.body.tasks as unknown[]).length).toBeGreaterThan(0);
      if (store === 'sqlite') {
        expect((tasks.body.agents as { name: string }[]).length).toBeGreaterThan(0);
        expect(tasks.body.note).toBeNull();
        expect(JSON.stringify(tasks.body)).not.toMatch(/token/i);
      } else {
        // No broker file: each item is a task (edge -> coordinator), each hop a child task (coordinator -> role).
        const derived = tasks.body.tasks as { state: string; worker: string; requester: string; contextId: string }[];
        expect(derived).toHaveLength(2 + 2 * 7);
        // Both items completed; each hop ended (a hop that failed and went back is a failed child task).
        expect(derived.filter((t) => t.requester === 'edge').map((t) => t.state)).toEqual(['completed', 'completed']);
        expect(derived.every((t) => t.state === 'completed' || t.state === 'failed')).toBe(true);
        expect(derived.filter((t) => t.requester === 'edge').map((t) => t.worker)).toEqual([
          'coordinator',
          'coordinator',
        ]);
        expect(new Set(derived.filter((t) => t.requester === 'coordinator').map((t) => t.worker))).toEqual(
          new Set(['architect', 'coding', 'testing', 'devops']),
        );
        expect(tasks.body.agents).toEqual([]);
        expect(String(tasks.body.note)).toMatch(/derived from the rows of the newest 50 work items/);
        expect(((await get('/api/tasks?state=working')).body.tasks as unknown[]).length).toBe(0);
      }
      const machines = (await get('/api/machines')).body.machines as {
        id: string;
        states: string[];
        edges: unknown[];
      }[];
      expect(machines.map((m) => m.id)).toEqual(['task', 'workflow-run']);
      expect(machines[0]?.states).toContain('input-required');
      expect(machines[1]?.states).toContain('awaiting-approval');
      for (const m of machines) expect(m.edges.length).toBeGreaterThan(5);
    });

    it('answers malformed requests with 4xx and a message that says what to do, changing nothing', async () => {
      const before = await fixture.fingerprint();
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
        [post('/api/items/cancel', '{}', json), 401, /access token/],
        [
          post('/api/items/cancel', JSON.stringify({ itemId: 'x' }), authorized()),
          400,
          /shared console token names no one: give by/,
        ],
        [post('/api/items/cancel', JSON.stringify({ itemId: 'nope', by: 'ops' }), authorized()), 404, /no work item/],
        [
          post('/api/items/cancel', JSON.stringify({ itemId: first?.id, by: 'ops' }), authorized()),
          409,
          /already ended completed: nothing to cancel/,
        ],
        [post('/api/other', '{}', authorized()), 404, /no action/],
      ];
      for (const [call, status, message] of cases) {
        const answer = await call;
        expect(answer.status, JSON.stringify(answer.body)).toBe(status);
        expect(String(answer.body.error)).toMatch(message);
      }
      const put = await fetch(new URL('/api/items', console_.url), { method: 'PUT' });
      expect(put.status).toBe(405);
      expect(await fixture.fingerprint()).toBe(before);
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

    it('pushes a change event when another process commits', async () => {
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
      // Another process writes: a request lands on the bus (the file's bus, or Redis's $items queue).
      const submit = await runCli([
        'submit',
        ...fixture.busArgs,
        '--workflow',
        'dev-sdlc',
        '--input',
        'x',
        '--timeout',
        '1',
      ]);
      expect(submit.code, submit.stderr).toBe(0);
      await read((t) => t.length > first.length && t.slice(first.length).includes('event: change'));
      controller.abort();
    });
  });
}

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

describe('switchboard console --db postgres://', () => {
  it('without --bus is the usage error of the coordinator command (exit 2); --read-only is refused', async () => {
    const url = 'postgres://postgres:pw-never-shown@127.0.0.1:1/none';
    const noBus = await runCli(['console', '--db', url, '--listen', '127.0.0.1:0']);
    expect(noBus.code).toBe(2);
    expect(noBus.stderr).toContain('--db postgres://... needs --bus redis://HOST:PORT');
    const readOnly = await runCli(['console', '--db', url, '--read-only', '--listen', '127.0.0.1:0']);
    expect(readOnly.code).toBe(2);
    expect(readOnly.stderr).toContain('takes no --read-only');
    for (const r of [noBus, readOnly]) expect(r.stdout + r.stderr).not.toContain('pw-never-shown');
  });

  it.runIf(runRedis)(
    'exits 1 with a clear message when PostgreSQL does not answer at start, the password nowhere',
    async () => {
      const r = await runCli([
        'console',
        '--db',
        'postgres://postgres:pw-never-shown@127.0.0.1:1/none',
        '--bus',
        REDIS_URL,
        '--listen',
        '127.0.0.1:0',
      ]);
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toContain('cannot reach PostgreSQL');
      expect(r.stderr).toContain('postgres://postgres@127.0.0.1:1/none');
      expect(r.stdout + r.stderr).not.toContain('pw-never-shown');
    },
  );

  it.runIf(runPostgres && runRedis)(
    'answers 503 while PostgreSQL is away, keeps serving, recovers once it is back; the password appears nowhere',
    async () => {
      const deployment = await postgresDeployment();
      const proxy = await TcpProxy.start('127.0.0.1', Number(new URL(deployment.url).port || 5432));
      let server: ConsoleProcess | undefined;
      try {
        // The tables exist once a Coordinator has started on the database.
        const coordinator = await deployment.startCoordinator();
        coordinator.child.kill('SIGTERM');
        await coordinator.exited;
        server = await startConsole(['--db', deployment.urlVia(proxy.port), ...deployment.bus]);
        const s = server;
        const read = async (path: string) => {
          const res = await fetch(new URL(path, s.url));
          return { status: res.status, text: await res.text() };
        };
        const paths = ['/api/overview', '/api/items', '/api/approvals', '/api/queues', '/api/tasks', '/api/items/x'];
        const seen: string[] = [s.stdout, (await read('/')).text];
        for (const path of paths) seen.push((await read(path)).text);
        expect((await read('/api/items')).status).toBe(200);

        // PostgreSQL goes away: every connection dropped, new ones go nowhere.
        proxy.cut();
        proxy.drop();
        const away = await read('/api/items');
        expect(away.status).toBe(503);
        expect(JSON.parse(away.text).error).toMatch(/PostgreSQL does not answer.*keeps serving/);
        expect(JSON.parse(away.text).error).toContain(deployment.safeUrl.replace(/:\d+\//, `:${proxy.port}/`));
        seen.push(away.text, (await read('/api/overview')).text);
        // The page itself is still served.
        expect((await read('/')).status).toBe(200);

        // The live poll notices too (once: one warning per outage).
        await until(() => s.stderr().includes('console could not read the database'), 30_000, 'the outage warning');
        proxy.heal();
        const deadline = Date.now() + 30_000;
        let back = await read('/api/items');
        while (back.status !== 200 && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 250));
          back = await read('/api/items');
        }
        expect(back.status).toBe(200);
        // The poll's next read logs the recovery (a request may have read again first).
        await until(() => s.stderr().includes('console reads the database again'), 30_000, 'the recovery line');
        expect(s.child.exitCode).toBeNull();
        await s.stop();
        seen.push(s.stderr());
        expect(s.stderr().split('console could not read the database')).toHaveLength(2);
        expect(s.stderr()).toContain('console reads the database again');
        for (const text of seen) expect(text).not.toContain(deployment.secret);
      } finally {
        await server?.stop();
        await proxy.close();
        await deployment.cleanup();
      }
    },
    180_000,
  );

  it.runIf(runPostgres && runRedis)(
    'answers 503 while Redis is away (queues, overview, dead letters), keeps serving and recovers',
    async () => {
      const deployment = await postgresDeployment();
      const redisPort = Number(new URL(REDIS_URL).port || 6379);
      const proxy = await TcpProxy.start('127.0.0.1', redisPort);
      let server: ConsoleProcess | undefined;
      try {
        const coordinator = await deployment.startCoordinator();
        coordinator.child.kill('SIGTERM');
        await coordinator.exited;
        const viaProxy = deployment.bus.map((arg) => (arg === REDIS_URL ? `redis://127.0.0.1:${proxy.port}` : arg));
        expect(viaProxy).not.toEqual(deployment.bus);
        server = await startConsole(['--db', deployment.url, ...viaProxy]);
        const s = server;
        const read = async (path: string) => {
          const res = await fetch(new URL(path, s.url));
          return { status: res.status, text: await res.text() };
        };
        expect((await read('/api/queues')).status).toBe(200);

        proxy.cut();
        proxy.drop();
        for (const path of ['/api/queues', '/api/overview']) {
          const away = await read(path);
          expect(away.status, `${path}: ${away.text}`).toBe(503);
          expect(JSON.parse(away.text).error).toMatch(/work bus does not answer.*keeps serving/);
          expect(JSON.parse(away.text).code).toBe('BUS_BACKEND');
        }
        // Reads that need only PostgreSQL still answer, and so does the page.
        expect((await read('/api/items')).status).toBe(200);
        expect((await read('/')).status).toBe(200);

        proxy.heal();
        const deadline = Date.now() + 30_000;
        let back = await read('/api/queues');
        while (back.status !== 200 && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 250));
          back = await read('/api/queues');
        }
        expect(back.status).toBe(200);
        expect(s.child.exitCode).toBeNull();
      } finally {
        await server?.stop();
        await proxy.close();
        await deployment.cleanup();
      }
    },
    180_000,
  );
});
