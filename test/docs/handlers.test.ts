import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type Proc, isLog, readItems, runCli, startCli, terminate, until } from '../scaleout/processes.js';

// docs/handlers.md's handler module (examples/handlers/review-handler.mjs)
// and its workflow (examples/handlers/review.json), run as the page says: a
// real `switchboard coordinator` on a SQLite file, a real `switchboard worker
// --handler` process serving both roles, items sent with `switchboard
// submit`. One item runs the whole contract (complete, context.outputs, a
// suspension whose question another role answers, the resume with the saved
// state and the reply, memory, an artifact); another is refused by a
// NonRetryableError, failed at once and routed by its type.

const root = new URL('../..', import.meta.url).pathname;
const page = readFileSync(join(root, 'docs/handlers.md'), 'utf8');
const HANDLER = join(root, 'examples/handlers/review-handler.mjs');
const WORKFLOW = join(root, 'examples/handlers/review.json');
const dir = mkdtempSync(join(tmpdir(), 'sb-handlers-'));
const procs: Proc[] = [];
afterAll(async () => {
  for (const proc of procs) await terminate(proc);
  rmSync(dir, { recursive: true, force: true });
});

interface ItemJson {
  id: string;
  state: string;
  hops: number;
  attributes: Record<string, string>;
  failure: { code: string; reason: string } | null;
  output: {
    state: string;
    parts?: { kind: string; text?: string }[];
    artifacts?: { artifactId: string; name?: string }[];
    error?: { type?: string; message?: string };
  } | null;
}

describe('docs/handlers.md', () => {
  it('shows the shipped module as it is, and names it and its workflow in the commands it says to run', () => {
    const shell = [...page.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] ?? '').join('\n');
    expect(shell).toContain('--workflows examples/handlers/review.json');
    expect(shell).toContain('--handler ./examples/handlers/review-handler.mjs');
    expect(shell).toContain('switchboard submit --db review.db --workflow review');
    expect(page).toContain('examples/handlers/review-handler.mjs');
    // The page shows the module word for word.
    const shown = /```js\n([\s\S]*?)```/.exec(page)?.[1];
    expect(shown).toBe(readFileSync(HANDLER, 'utf8'));
  });

  it('its handler module runs in switchboard worker against a Coordinator on SQLite: complete, suspend/resume, NonRetryableError, context.outputs', async () => {
    const db = join(dir, 'review.db');
    const coordinator = startCli('coordinator', ['coordinator', '--db', db, '--workflows', WORKFLOW]);
    procs.push(coordinator);
    await coordinator.waitForLine(isLog('coordinator ready'), 30_000, { seen: true });
    const worker = startCli('worker', [
      'worker',
      '--db',
      db,
      '--role',
      'writer',
      '--role',
      'reviewer',
      '--handler',
      HANDLER,
    ]);
    procs.push(worker);

    for (const [id, input] of [
      ['good', 'Release notes for 0.2'],
      ['no-topic', '???'],
    ]) {
      const sent = await runCli([
        'submit',
        '--db',
        db,
        '--workflow',
        'review',
        '--input',
        input ?? '',
        '--id',
        id ?? '',
      ]);
      expect(sent.code, sent.stderr).toBe(0);
    }
    await until(
      () => {
        const items = readItems(db);
        return items.length === 2 && items.every((i) => i.state === 'completed' || i.state === 'failed');
      },
      60_000,
      () => `items: ${JSON.stringify(readItems(db))}\nworker: ${worker.lines.slice(-5).join('\n')}`,
    );

    const listed = await runCli(['items', 'list', '--db', db, '--json']);
    const items = (JSON.parse(listed.stdout) as { items: ItemJson[] }).items;
    const byRequest = new Map(items.map((item) => [item.attributes['switchboard.request'], item]));

    const good = byRequest.get('good');
    expect(good?.state).toBe('completed');
    // write, review (suspended), review resumed: the writer's answer to the question came between.
    expect(good?.hops).toBe(3);
    expect(good?.output?.parts?.[0]?.text).toBe(
      'Approved "Draft: Release notes for 0.2." (hop 1, about Release notes for 0.2) for: For the operators who upgrade it.',
    );
    expect(good?.output?.artifacts?.map((a) => a.name)).toEqual(['review.md']);

    const refused = byRequest.get('no-topic');
    expect(refused?.state).toBe('failed');
    // Refused at once: one hop, one attempt, routed by the error's type to the rule that ends the item.
    expect(refused?.hops).toBe(1);
    expect(refused?.failure?.reason).toContain('the request names no topic');
    const attempts = worker.lines.filter((line) => line.includes('"errorType":"NoTopic"'));
    expect(attempts, worker.lines.join('\n')).toHaveLength(1);
    expect(attempts[0]).toContain('"retryable":false');

    expect((await terminate(worker)).code).toBe(0);
    expect((await terminate(coordinator)).code).toBe(0);
  }, 120_000);
});
