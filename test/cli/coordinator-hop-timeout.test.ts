import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isLog, runCli, startCli, terminate } from '../scaleout/processes.js';

/**
 * `switchboard coordinator --hop-timeout DURATION|off`: the default hop
 * timeout of hops whose stage sets none. The real CLI: a bad value is a
 * usage error (exit 2) that opens nothing; a good one (or the default, 10
 * minutes, or off) is what the Coordinator runs with (its ready line says).
 */
let cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

function tempDb(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sb-hop-timeout-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'c.db');
}

async function readyWith(args: string[]): Promise<Record<string, unknown>> {
  const p = startCli('coordinator', ['coordinator', '--db', tempDb(), '--log-level', 'info', ...args]);
  cleanups.push(() => terminate(p));
  return JSON.parse(await p.waitForLine(isLog('coordinator ready'), 60_000, { seen: true }));
}

describe('switchboard coordinator --hop-timeout', () => {
  it('refuses what is not a duration from 10ms to 30d, or off (usage error, exit 2)', async () => {
    for (const bad of ['5', '5ms', '31d', '-1s']) {
      const db = tempDb();
      const r = await runCli(['coordinator', '--db', db, `--hop-timeout=${bad}`]);
      expect(r.code).toBe(2);
      expect(existsSync(db)).toBe(false);
      expect(r.stderr).toContain('--hop-timeout takes a whole number and a unit');
      expect(r.stderr).toContain(`not '${bad}'`);
    }
    const help = await runCli(['coordinator', '--help']);
    expect(help.stdout).toContain('  --hop-timeout DURATION');
  });

  it('runs with the duration given, off, or 10 minutes by default', async () => {
    expect(await readyWith(['--hop-timeout', '90s'])).toMatchObject({ hopTimeoutMs: 90_000 });
    expect(await readyWith(['--hop-timeout', 'off'])).toMatchObject({ hopTimeoutMs: 0 });
    expect(await readyWith([])).toMatchObject({ hopTimeoutMs: 600_000 });
  });
});
