import { writeFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { type Proc, isLog, readItems, runCli, startCli, terminate, until } from '../scaleout/processes.js';
import { tempDir } from './helpers.js';
import { ConsoleData } from '../../src/console/console-data.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';

// A handler's bug, seen as an operator sees it: a real `switchboard
// coordinator` and `switchboard worker` on one SQLite file, a handler that
// throws a TypeError on every delivery. The thrown error's stack is kept with
// the hop (`items show`, `items show --json`), logged by the worker (pino's
// err serializer) and by the Coordinator (the item failed of it), and the
// attempts the failure names are the deliveries `dlq list` shows.

const tmp = tempDir('sb-handler-errors-');
const procs: Proc[] = [];
afterAll(async () => {
  for (const proc of procs) await terminate(proc);
  tmp.cleanup();
});

const WORKFLOW = {
  id: 'buggy',
  version: 1,
  start: 'build',
  defaults: { retry: { initialInterval: '10ms', maximumAttempts: 2 } },
  stages: { build: { role: 'builder', next: [{ on: 'succeeded', end: 'completed' }] } },
};

// The bug is on a line of its own in a function of its own: the stack names both.
const HANDLER = `function parseManifest(text) {
  return text.manifest.name.trim();
}
export default function handler(hop) {
  return { parts: [{ kind: 'text', text: parseManifest(hop.message) }] };
}
`;

/** A log line, as far as these tests read it. */
interface LogLine {
  level: number;
  msg: string;
  itemId?: string;
  err?: { type?: string; message?: string; stack?: string };
  error?: { type?: string; message?: string; stack?: string };
}

interface HopJson {
  hop: number;
  state: string;
  error: { type: string; message: string; stack?: string } | null;
}

describe("a handler's thrown error", () => {
  it('is kept with the hop (items show, --json), logged with its stack, and its attempts agree with dlq list', async () => {
    const db = tmp.file('buggy.db');
    const workflows = tmp.file('buggy.json');
    const handler = tmp.file('buggy-handler.mjs');
    writeFileSync(workflows, JSON.stringify(WORKFLOW));
    writeFileSync(handler, HANDLER);

    const coordinator = startCli('coordinator', ['coordinator', '--db', db, '--workflows', workflows]);
    procs.push(coordinator);
    await coordinator.waitForLine(isLog('coordinator ready'), 60_000, { seen: true });
    const worker = startCli('worker', ['worker', '--db', db, '--role', 'builder', '--handler', handler]);
    procs.push(worker);
    const sent = await runCli(['submit', '--db', db, '--workflow', 'buggy', '--input', 'ship it', '--id', 'bug-1']);
    expect(sent.code, sent.stderr).toBe(0);
    await until(
      () => readItems(db).some((i) => i.state === 'failed'),
      90_000,
      () => `items: ${JSON.stringify(readItems(db))}\nworker: ${worker.lines.slice(-5).join('\n')}`,
    );
    const itemId = readItems(db)[0]!.id;

    // items show --json: the hop's error carries the stack, naming the function and the module that threw.
    const shown = await runCli(['items', 'show', itemId, '--db', db, '--json']);
    expect(shown.code, shown.stderr).toBe(0);
    const json = JSON.parse(shown.stdout) as { item: { failure: { code: string; reason: string } }; hops: HopJson[] };
    const [hop] = json.hops;
    expect(hop?.state).toBe('failed');
    expect(hop?.error?.type).toBe('TypeError');
    expect(hop?.error?.stack).toMatch(/^TypeError: Cannot read properties of undefined/);
    expect(hop?.error?.stack).toContain('at parseManifest (');
    expect(hop?.error?.stack).toContain('buggy-handler.mjs:2:');

    // The console's item view reads the same: the hop's error with its stack.
    const side = openDatabase(db, { readonly: true });
    try {
      const detail = await new ConsoleData({ kind: 'sqlite', db: side }).item(itemId);
      expect(detail?.hops[0]?.error).toMatchObject({ type: 'TypeError', stack: hop?.error?.stack });
    } finally {
      side.close();
    }

    // items show: the same stack under the hop table.
    const text = await runCli(['items', 'show', itemId, '--db', db]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain('Hop errors (the stack each handler threw):');
    expect(text.stdout).toContain('  hop 1 (#1, build, role builder): TypeError: Cannot read properties of undefined');
    expect(text.stdout).toMatch(/\n {4}at parseManifest \(.*buggy-handler\.mjs:2:\d+\)/);

    // The counts agree: the dead letter's deliveries are the attempts the item's failure names.
    const dlq = await runCli(['dlq', 'list', '--db', db, '--role', 'builder', '--json']);
    expect(dlq.code, dlq.stderr).toBe(0);
    const letters = (JSON.parse(dlq.stdout) as { deadLetters: { deliveries: number; lastError: { stack?: string } }[] })
      .deadLetters;
    expect(letters).toHaveLength(1);
    expect(letters[0]!.deliveries).toBe(2);
    expect(letters[0]!.lastError.stack).toContain('at parseManifest (');
    expect(json.item.failure.code).toBe('RETRIES_EXHAUSTED');
    expect(json.item.failure.reason).toMatch(/ after 2 attempts$/);

    // The worker logged each failed delivery with the error's stack (pino's err serializer).
    const failed = worker.lines.filter(isLog('hop failed')).map((l) => JSON.parse(l) as LogLine);
    expect(failed).toHaveLength(2);
    for (const line of failed) {
      expect(line.err?.type).toBe('TypeError');
      expect(line.err?.stack).toContain('at parseManifest (');
    }
    // The Coordinator warned of the item its failure failed, with the same stack.
    const warned = await coordinator.waitForLine((l) => l.includes('"msg":"work item failed'), 30_000, { seen: true });
    const warning = JSON.parse(warned) as LogLine;
    expect(warning.level).toBe(40);
    expect(warning.itemId).toBe(itemId);
    expect(warning.error?.type).toBe('TypeError');
    expect(warning.error?.stack).toContain('at parseManifest (');

    expect((await terminate(worker)).code).toBe(0);
    expect((await terminate(coordinator)).code).toBe(0);
  }, 180_000);
});
