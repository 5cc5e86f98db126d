import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { type Browser, type Page, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConsoleProcess, runCli, startConsole, tempDir, until } from './helpers.js';

// The console in headless chromium: approvers as people (each with a token
// of their own, the audit naming the one who clicked, a revoked token
// refused), and a review-fanout item drawn on its workflow's own stages
// with its path and its tree of child work items.

const CHROMIUM = process.env.SWITCHBOARD_CHROMIUM ?? '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
if (!available && process.env.CI === 'true') {
  throw new Error(`no chromium at ${CHROMIUM}: .ci/run installs it (apt-get install -y chromium)`);
}

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

async function openPage(): Promise<{ page: Page; hosts: Set<string> }> {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
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

function read<T>(db: string, run: (d: Database.Database) => T): T {
  const d = new Database(db, { readonly: true, fileMustExist: true });
  try {
    return run(d);
  } finally {
    d.close();
  }
}

function tokenOf(stdout: string): string {
  const match = /^([0-9a-f]{64})$/m.exec(stdout);
  if (match === null) throw new Error(`no token in: ${stdout}`);
  return match[1] as string;
}

/** A workflow whose one stage waits for alice or bob. */
const GATED = {
  id: 'gated-release',
  version: 1,
  start: 'release',
  stages: {
    release: {
      role: 'devops',
      approval: { approvers: ['alice', 'bob'], reason: 'a person signs the release' },
      next: [{ on: 'succeeded', end: 'completed' }],
    },
  },
};

describe.skipIf(!available)('the console in a browser: people and trees', () => {
  it('two approvers with their own tokens: the audit names the one who clicked; a revoked token is refused', async () => {
    const dir = join(tmp.dir, 'people');
    mkdirSync(dir);
    const db = join(dir, 'switchboard.db');
    const workflow = join(dir, 'gated-release.json');
    writeFileSync(workflow, JSON.stringify(GATED));
    start(['coordinator', '--db', db, '--workflows', workflow, '--log-level', 'warn']);
    await until(() => existsSync(db), 30_000, 'the coordinator to create its database');
    start(['worker', '--db', db, '--role', 'devops', '--handler', 'demo', '--log-level', 'warn']);
    const submitted = await runCli([
      'submit',
      '--db',
      db,
      '--workflow',
      'gated-release',
      '--input',
      'Ship it',
      '--id',
      'p1',
    ]);
    expect(submitted.code, submitted.stderr).toBe(0);
    let itemId = '';
    await until(
      () => {
        try {
          const row = read(db, (d) => d.prepare('SELECT id, state FROM coord_items').get()) as
            | { id: string; state: string }
            | undefined;
          itemId = row?.id ?? '';
          return row?.state === 'awaiting-approval';
        } catch {
          return false;
        }
      },
      120_000,
      'the item to wait at the approval gate',
    );
    const tokens: Record<string, string> = {};
    for (const name of ['alice', 'bob', 'carol']) {
      const added = await runCli(['console', 'users', 'add', name, '--db', db]);
      expect(added.code, added.stderr).toBe(0);
      tokens[name] = tokenOf(added.stdout);
    }
    expect((await runCli(['console', 'users', 'revoke', 'carol', '--db', db])).code).toBe(0);
    const server = await startConsole(['--db', db]);
    consoles.push(server);

    // carol's token was revoked: the page says so, and her click changes nothing.
    const revoked = await openPage();
    await revoked.page.goto(`${server.url}#token=${tokens.carol}`);
    await revoked.page.locator('#token-state').getByText('token refused').waitFor();
    await revoked.page.goto(`${server.url}#/items/${encodeURIComponent(itemId)}`);
    await revoked.page.locator('[data-action="approve"]').click();
    await revoked.page.locator('#notice').getByText('a revoked token is refused').waitFor();
    expect(read(db, (d) => d.prepare('SELECT state FROM coord_items WHERE id = ?').get(itemId))).toEqual({
      state: 'awaiting-approval',
    });
    await revoked.page.context().close();

    // alice looks (her page names her), bob clicks: the decision and its audit row are bob's.
    const alice = await openPage();
    await alice.page.goto(`${server.url}#token=${tokens.alice}`);
    await alice.page.locator('#token-state').getByText('actions enabled as alice').waitFor();
    await alice.page.goto(`${server.url}#/items/${encodeURIComponent(itemId)}`);
    // The approval box (and the cancel box beside it) names her.
    const approvalBox = alice.page.locator('.decide', { has: alice.page.locator('[data-action="approve"]') });
    await approvalBox.locator('.as').getByText('as alice').waitFor();

    const bob = await openPage();
    await bob.page.goto(`${server.url}#token=${tokens.bob}`);
    await bob.page.locator('#token-state').getByText('actions enabled as bob').waitFor();
    await bob.page.goto(`${server.url}#/items/${encodeURIComponent(itemId)}`);
    // No name to pick: the token is the approver.
    expect(await bob.page.locator('.decide select, .decide input[name="approver"]').count()).toBe(0);
    await bob.page.locator('[data-action="approve"]').click();
    await bob.page.locator('#notice').getByText(`approval of ${itemId} sent`).waitFor();
    await bob.page.locator('h1 .state.completed').waitFor({ timeout: 120_000 });
    const approval = read(db, (d) =>
      d.prepare("SELECT actor, data FROM audit_log WHERE item_id = ? AND kind = 'approval'").all(itemId),
    ) as { actor: string; data: string }[];
    expect(approval.map((r) => r.actor)).toEqual(['bob']);
    expect(JSON.parse(approval[0]?.data as string)).toMatchObject({ by: 'bob', decision: 'approved' });
    // The audit on the page names bob, its data shown as a table (not raw JSON).
    const row = bob.page.locator('#audit > tbody > tr').filter({ hasText: 'approval' }).filter({ hasText: 'bob' });
    await row.first().waitFor();
    expect(await row.first().locator('table.kv').count()).toBe(1);
    // alice's open page hears of it live.
    await alice.page.locator('h1 .state.completed').waitFor({ timeout: 60_000 });

    // alice cancels a second item at its gate with the Cancel button: the cancel is hers (her token), audited.
    const second = await runCli([
      'submit',
      '--db',
      db,
      '--workflow',
      'gated-release',
      '--input',
      'Ship more',
      '--id',
      'p2',
    ]);
    expect(second.code, second.stderr).toBe(0);
    let secondId = '';
    await until(
      () => {
        const row = read(db, (d) =>
          d.prepare('SELECT id, state FROM coord_items WHERE id <> ? ORDER BY created_at DESC LIMIT 1').get(itemId),
        ) as { id: string; state: string } | undefined;
        secondId = row?.id ?? '';
        return row?.state === 'awaiting-approval';
      },
      120_000,
      'the second item to wait at the approval gate',
    );
    await alice.page.goto(`${server.url}#/items/${encodeURIComponent(secondId)}`);
    // No name to give: the token is who cancels.
    expect(await alice.page.locator('input[name="by"]').count()).toBe(0);
    await alice.page.locator('input[name="cancel-reason"]').fill('not this week');
    await alice.page.locator('[data-action="cancel"]').click();
    await alice.page.locator('#notice').getByText(`cancel of ${secondId} sent`).waitFor();
    await alice.page.locator('h1 .state.canceled').waitFor({ timeout: 120_000 });
    const ended = read(db, (d) =>
      d.prepare("SELECT data FROM audit_log WHERE item_id = ? AND kind = 'item-canceled'").all(secondId),
    ) as { data: string }[];
    expect(ended).toHaveLength(1);
    expect(JSON.parse(ended[0]?.data as string)).toMatchObject({
      state: 'canceled',
      cancellation: { by: 'alice', reason: 'not this week' },
    });
    for (const p of [alice, bob]) {
      expect([...p.hosts]).toEqual([new URL(server.url).host]);
      await p.page.context().close();
    }
  }, 360_000);

  it("draws a review-fanout item on its workflow's stages with its path, and its child tree linking to each child", async () => {
    const db = join(tmp.dir, 'fanout.db');
    const demo = await runCli(['demo', '--workflow', 'review-fanout', '--db', db, '--approve', '--json']);
    expect(demo.code, demo.stderr).toBe(0);
    const root = read(db, (d) =>
      d.prepare('SELECT id FROM coord_items WHERE attributes IS NULL ORDER BY created_at LIMIT 1').get(),
    ) as { id: string };
    const server = await startConsole(['--db', db, '--read-only']);
    consoles.push(server);
    const { page, hosts } = await openPage();

    // The list: search by workflow narrows it to the roots' children of QA; paging walks it.
    await page.goto(server.url);
    await page.locator('tbody tr.clickable').first().waitFor();
    await page.locator('input[name="q"]').fill('review--qa');
    await page.locator('input[name="q"]').press('Enter');
    await expect.poll(() => page.locator('tbody tr.clickable').count(), { timeout: 30_000 }).toBe(4);
    expect(await page.locator('[data-action="next-page"]').isDisabled()).toBe(true);

    await page.goto(`${server.url}#/items/${encodeURIComponent(root.id)}`);
    const stages = page.locator('svg[aria-label="workflow stages"]');
    await stages.waitFor();
    // Every stage of the definition, each visited (review twice), none current once the item ended.
    const drawn = await stages
      .locator('g.stage')
      .evaluateAll((gs) =>
        gs.map((g) => [g.getAttribute('data-stage'), g.getAttribute('data-visits'), g.getAttribute('class')]),
      );
    expect(drawn).toEqual([
      ['plan', '1', 'stage visited'],
      ['coding', '1', 'stage visited'],
      ['review', '2', 'stage visited'],
      ['fix', '1', 'stage visited'],
      ['release', '1', 'stage visited'],
    ]);
    expect(await page.locator('#path').textContent()).toBe('Path: plan → coding → review → fix → review → release');
    // The edges it took are marked; the end it reached too.
    const taken = await stages
      .locator('path.edge.taken')
      .evaluateAll((ps) => ps.map((p) => `${p.getAttribute('data-from')}>${p.getAttribute('data-to')}`).sort());
    expect(taken).toEqual([
      'coding>review',
      'fix>review',
      'plan>coding',
      'release>end:completed',
      'review>fix',
      'review>release',
    ]);
    expect(await stages.locator('g.stage[data-stage="review"] text.kind').textContent()).toBe('parallel: security, qa');
    expect(await stages.locator('g.stage[data-stage="coding"] text.kind').textContent()).toBe('map: coding');
    // The input as text, the output's parts as text (not JSON).
    expect(await page.locator('#input .part.text').textContent()).toBe('Add rate limiting to the public API');
    expect(await page.locator('#output').textContent()).not.toContain('{');

    // The child tree: three map elements, then security and QA twice; each with its state and costs.
    const rows = page.locator('#children tbody tr');
    expect(await rows.count()).toBe(7);
    const branches = await rows.evaluateAll((trs) => trs.map((tr) => tr.children[1]?.textContent));
    expect(branches).toEqual(['2:0', '2:1', '2:2', '3:security', '3:qa', '5:security', '5:qa']);
    expect(await page.locator('#children .state.completed').count()).toBe(7);
    const own = read(db, (d) => d.prepare('SELECT cost_usd FROM coord_items WHERE id = ?').get(`${root.id}.2.0`)) as {
      cost_usd: number;
    };
    expect(await rows.first().locator('td.num').first().textContent()).toBe(`$${own.cost_usd.toFixed(4)}`);
    // A click on a child opens the child's own view.
    await rows.first().locator('a').click();
    await page.locator('h1 code').getByText(`${root.id}.2.0`, { exact: true }).waitFor();
    expect(await page.locator('#children').count()).toBe(0);
    expect([...hosts]).toEqual([new URL(server.url).host]);
    await page.context().close();
  }, 360_000);
});
