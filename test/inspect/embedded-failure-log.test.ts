import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runNode } from '../node-run.js';

const FIXTURE = new URL('./fixtures/embedded-failures.mjs', import.meta.url).pathname;

interface LogLine {
  level: number;
  msg: string;
  component?: string;
  itemId?: string;
  failure?: string;
  error?: { type: string; message: string; stack?: string };
}

/**
 * An embedded Coordinator given no logger is not silent about a handler's
 * bug: it writes a warning to stderr for the item the bug failed, with the
 * thrown error's stack; a failure its workflow routes writes nothing, and
 * stdout stays the embedder's.
 */
describe("the embedded Coordinator's default logger", () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it("warns on stderr of the item a handler's bug failed, with its stack; a routed failure writes nothing", async () => {
    dir = mkdtempSync(join(tmpdir(), 'sb-embedded-log-'));
    const r = await runNode([FIXTURE, dir]);
    expect(r.code, r.stderr).toBe(0);
    const states = JSON.parse(r.stdout) as Record<'routed' | 'buggy', { id: string; state: string }>;
    expect(states.routed.state).toBe('completed');
    expect(states.buggy.state).toBe('failed');

    const lines = r.stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as LogLine);
    // One line: the warning about the buggy item (nothing about the routed one, nothing at info).
    expect(lines).toHaveLength(1);
    const [warning] = lines;
    expect(warning).toMatchObject({
      level: 40,
      component: 'coordinator',
      itemId: states.buggy.id,
      failure: 'RETRIES_EXHAUSTED',
      error: { type: 'TypeError' },
    });
    expect(warning?.msg).toMatch(/^work item failed: hop 1 \(check\) failed with TypeError: .* after 2 attempts$/);
    expect(warning?.error?.stack).toContain('at readConfig (');
    expect(warning?.error?.stack).toContain('embedded-failures.mjs:');
  });
});
