import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { type Browser, type Page, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { submitApproval } from '../../src/actors/coordinator/intake.js';
import { SqliteQueue } from '../../src/bus/sqlite/queue.js';
import { postgresGate } from '../postgres-availability.js';
import { redisGate } from '../redis-availability.js';
import {
  type ConsoleProcess,
  demoDatabase,
  postgresDeployment,
  runCli,
  startConsole,
  tempDir,
  until,
} from './helpers.js';

// The console in a real headless browser (Debian's chromium driven by
// playwright-core): the demo's database, then a live Coordinator and worker
// whose item waits at the approval gate until a click approves it.

const { runPostgres } = await postgresGate();
const { runRedis } = await redisGate();

const CHROMIUM = process.env.SWITCHBOARD_CHROMIUM ?? '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
if (!available && process.env.CI === 'true') {
  throw new Error(`no chromium at ${CHROMIUM}: .ci/run installs it (apt-get install -y chromium)`);
}
/** The views' screenshots in the docs are rewritten when this is set (else they go to a temp dir). */
const SCREENSHOTS =
  process.env.UPDATE_SCREENSHOTS === '1' ? new URL('../../docs/console/', import.meta.url).pathname : '';

const bin = new URL('../../bin/switchboard.js', import.meta.url).pathname;
let browser: Browser;
let tmp: ReturnType<typeof tempDir>;
const children: ChildProcess[] = [];
const consoles: ConsoleProcess[] = [];

beforeAll(async () => {
  if (!available) return;
  tmp = tempDir();
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  for (const c of consoles) await c.stop();
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  tmp?.cleanup();
});

async function shot(page: Page, name: string): Promise<void> {
  const dir = SCREENSHOTS || join(tmp.dir, 'shots');
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: join(dir, `${name}.png`), fullPage: false });
}

/** A page that records every host it requests. */
async function openPage(): Promise<{ page: Page; hosts: Set<string> }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const hosts = new Set<string>();
  page.on('request', (request) => hosts.add(new URL(request.url()).host));
  return { page, hosts };
}

function start(args: string[]): ChildProcess {
  const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr?.resume();
  children.push(child);
  return child;
}

function itemState(db: string, id: string): string | undefined {
  const d = new Database(db, { readonly: true, fileMustExist: true });
  try {
    return (d.prepare('SELECT state FROM coord_items WHERE id = ?').get(id) as { state: string } | undefined)?.state;
  } finally {
    d.close();
  }
}

/**
 * On a console over a live deployment whose item `itemId` waits at the
 * approval gate and whose `$approvals` queue holds one dead letter (a
 * decision for no item): a click without the token is refused; with it the
 * item is approved and its completion arrives live; the dead letter is
 * replayed from the queues view. Nothing is loaded from anywhere else.
 */
async function approveAndReplay(
  server: ConsoleProcess,
  itemId: string,
  stateOf: () => Promise<string | undefined>,
  /** Screenshots of the approvals and queues views (the SQLite variant's are the docs'). */
  shots: boolean,
): Promise<void> {
  // The stray decision's dead letter names the item it was for (not the message's key).
  const letters = (await (await fetch(new URL('/api/dead-letters?role=%24approvals', server.url))).json()) as {
    deadLetters: { itemId: string | null }[];
  };
  expect(letters.deadLetters.map((l) => l.itemId)).toEqual(['no-such-item']);

  // Without the token: the click is refused, and nothing changes.
  const anonymous = await openPage();
  await anonymous.page.goto(`${server.url}#/approvals`);
  await anonymous.page.locator('[data-action="approve"]').click();
  await anonymous.page.locator('#notice').getByText('access token').waitFor();
  expect(await stateOf()).toBe('awaiting-approval');
  await anonymous.page.context().close();

  // With the token (taken from the printed address's fragment): approve on the item's page.
  const { page, hosts } = await openPage();
  await page.goto(server.tokenUrl);
  await page.locator('#token-state').getByText('actions enabled').waitFor();
  await page.goto(`${server.url}#/approvals`);
  await page.locator('[data-action="approve"]').waitFor();
  if (shots) await shot(page, 'approvals');
  await page.goto(`${server.url}#/items/${encodeURIComponent(itemId)}`);
  await page.locator('h1 .state.awaiting-approval').waitFor();
  let loads = 0;
  page.on('load', () => {
    loads++;
  });
  await page.locator('[data-action="approve"]').click();
  await page.locator('#notice').getByText(`approval of ${itemId} sent`).waitFor();
  // The completion arrives through the live updates: no reload.
  await page.locator('h1 .state.completed').waitFor({ timeout: 120_000 });
  expect(loads).toBe(0);
  expect(await stateOf()).toBe('completed');
  const audit = await page.locator('#audit').textContent();
  expect(audit).toContain('release-manager');

  // The dead letter, replayed from the queues view.
  await page.goto(`${server.url}#/queues`);
  await page.locator('[data-action="replay"]').first().waitFor();
  // The approval's notice stayed with the item's view.
  expect(await page.locator('#notice').textContent()).toBe('');
  if (shots) await shot(page, 'queues');
  await page.locator('[data-action="replay"]').first().click();
  await page.locator('#notice').getByText('1 dead letter replayed').waitFor();
  expect([...hosts]).toEqual([new URL(server.url).host]);
  await page.context().close();
}

describe.skipIf(!available)('the console in a browser', () => {
  it("shows the demo's items, one item's timeline with its audit verified, and the machines", async () => {
    const db = await demoDatabase(tmp.dir);
    const server = await startConsole(['--db', db, '--read-only']);
    consoles.push(server);
    const { page, hosts } = await openPage();
    await page.goto(server.url);
    await page.locator('tbody tr.clickable').first().waitFor();
    expect(await page.locator('tbody tr.clickable').count()).toBe(2);
    await expect.poll(() => page.locator('.live.on').count()).toBe(1);
    await shot(page, 'items');
    await page.locator('tbody tr.clickable').first().click();
    await page.getByText('chain verified (72 entries)').waitFor();
    // Seven hops, the question's answer shown, the run's diagram with its state highlighted.
    const hopsTable = page.locator('#hops').first();
    expect(await hopsTable.locator('tbody tr').count()).toBe(7);
    expect(await hopsTable.textContent()).toContain('Use PostgreSQL');
    expect(await page.locator('svg[aria-label="workflow-run machine"] g.node.current').getAttribute('data-state')).toBe(
      'completed',
    );
    expect(await page.locator('#output').textContent()).toMatch(/^Output \S/);
    await shot(page, 'item');
    await page.goto(`${server.url}#/machines`);
    await page.locator('svg[aria-label="task machine"]').waitFor();
    await shot(page, 'machines');
    await page.goto(`${server.url}#/tasks`);
    await page.locator('tbody tr.clickable').first().click();
    // The task's view renders after the click: wait for its diagram, then exactly one state is current.
    await page.locator('svg[aria-label="task machine"] g.node.current').first().waitFor();
    expect(await page.locator('svg[aria-label="task machine"] g.node.current').count()).toBe(1);
    expect([...hosts]).toEqual([new URL(server.url).host]);
    await page.context().close();
  }, 240_000);

  it('approves a waiting item by a click and shows its completion live; refuses an action without the token; replays a dead letter', async () => {
    const dir = join(tmp.dir, 'live');
    mkdirSync(dir);
    const db = join(dir, 'switchboard.db');
    const coordinator = start(['coordinator', '--db', db, '--log-level', 'warn']);
    await until(() => existsSync(db), 30_000, 'the coordinator to create its database');
    start([
      'worker',
      '--db',
      db,
      ...['architect', 'coding', 'testing', 'devops'].flatMap((r) => ['--role', r]),
      '--handler',
      'demo',
      '--log-level',
      'warn',
    ]);
    const submitted = await runCli([
      'submit',
      '--db',
      db,
      '--workflow',
      'dev-sdlc',
      '--input',
      'Add an audit page',
      '--id',
      'b1',
    ]);
    expect(submitted.code, submitted.stderr).toBe(0);
    let itemId = '';
    await until(
      () => {
        const d = new Database(db, { readonly: true });
        try {
          const row = d.prepare('SELECT id, state FROM coord_items').get() as { id: string; state: string } | undefined;
          itemId = row?.id ?? '';
          return row?.state === 'awaiting-approval';
        } catch {
          return false;
        } finally {
          d.close();
        }
      },
      120_000,
      'the item to wait at the approval gate',
    );
    // A decision for an item that does not exist (approve refuses to send it; published as an older client would):
    // the Coordinator dead-letters it on $approvals.
    const queue = new SqliteQueue({ database: db });
    try {
      await submitApproval(queue, { itemId: 'no-such-item', approver: 'release-manager', decision: 'approve' });
    } finally {
      await queue.close();
    }
    await until(
      () => {
        const d = new Database(db, { readonly: true });
        try {
          return d.prepare("SELECT 1 FROM bus_jobs WHERE role = '$approvals' AND state = 'dead'").get() !== undefined;
        } finally {
          d.close();
        }
      },
      60_000,
      'the stray decision to be dead-lettered',
    );

    const server = await startConsole(['--db', db]);
    consoles.push(server);
    await approveAndReplay(server, itemId, async () => itemState(db, itemId), true);
    coordinator.kill('SIGTERM');
  }, 360_000);
});

describe.runIf(available && runPostgres && runRedis)('the console in a browser on PostgreSQL and Redis', () => {
  it('approves a waiting item by a click and sees its completion live; replays a dead letter; shows the derived tasks with the viewed one highlighted', async () => {
    const deployment = await postgresDeployment();
    try {
      await deployment.startCoordinator();
      const submitted = await runCli([
        'submit',
        ...deployment.bus,
        '--workflow',
        'dev-sdlc',
        '--input',
        'Add an audit page',
        '--id',
        'pgb',
      ]);
      expect(submitted.code, submitted.stderr).toBe(0);
      const [waiting] = await deployment.waitForItems(
        (items) => items.length === 1 && items[0]?.state === 'awaiting-approval',
        'the item to wait at the approval gate',
      );
      const itemId = waiting?.id as string;
      // A decision for an item that does not exist: the Coordinator dead-letters it on $approvals.
      const stray = await runCli([
        'approve',
        ...deployment.bus,
        '--item',
        'no-such-item',
        '--approver',
        'release-manager',
      ]);
      expect(stray.code, stray.stderr).toBe(0);
      const server = await startConsole(['--db', deployment.url, ...deployment.bus]);
      consoles.push(server);
      await until(
        async () => {
          const res = await fetch(new URL('/api/dead-letters?role=%24approvals', server.url));
          return ((await res.json()) as { deadLetters: unknown[] }).deadLetters.length === 1;
        },
        60_000,
        'the stray decision to be dead-lettered',
      );
      const stateOf = async () => {
        const r = await runCli(['items', 'show', itemId, '--db', deployment.url, '--json']);
        return (JSON.parse(r.stdout) as { item: { state: string } }).item.state;
      };
      await approveAndReplay(server, itemId, stateOf, false);

      // Another process's commit (a new item) reaches an open page through the poll of the audit head: no reload.
      const { page, hosts } = await openPage();
      await page.goto(server.url);
      await expect.poll(() => page.locator('tbody tr.clickable').count(), { timeout: 30_000 }).toBe(1);
      let loads = 0;
      page.on('load', () => {
        loads++;
      });
      const another = await runCli([
        'submit',
        ...deployment.bus,
        '--workflow',
        'dev-sdlc',
        '--input',
        'More',
        '--id',
        'pgc',
      ]);
      expect(another.code, another.stderr).toBe(0);
      await expect.poll(() => page.locator('tbody tr.clickable').count(), { timeout: 60_000 }).toBe(2);
      expect(loads).toBe(0);

      // The tasks, derived from the rows: a note says so; a click highlights the task's state in the machine.
      await page.goto(`${server.url}#/tasks`);
      await page.locator('#tasks-note').getByText('derived from the rows of the newest 50 work items').waitFor();
      const rows = page.locator('tbody tr.clickable');
      await rows.first().waitFor();
      // The item's task and its hops' tasks (seven stage hops and queries of the demo's workflow).
      expect(await rows.count()).toBeGreaterThan(1);
      const hopRow = rows.filter({ hasText: 'architect' }).first();
      const taskId = (await hopRow.locator('code').textContent()) as string;
      const taskState = (await hopRow.locator('.state').textContent()) as string;
      await hopRow.click();
      await page.getByText(`Task ${taskId} is ${taskState}.`).waitFor();
      const current = page.locator('svg[aria-label="task machine"] g.node.current');
      expect(await current.count()).toBe(1);
      expect(await current.getAttribute('data-state')).toBe(taskState);
      await shot(page, 'tasks-postgres');
      expect([...hosts]).toEqual([new URL(server.url).host]);
      await page.context().close();
      // The page never saw the database's password, nor did the console's output.
      expect(server.stdout + server.stderr()).not.toContain(deployment.secret);
    } finally {
      await deployment.cleanup();
    }
  }, 360_000);
});
