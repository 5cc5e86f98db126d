import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './processes.js';

/** `--context-retention-ms` of `coordinator` and `worker` (the build in dist/: `npm run build` first). */
describe('--context-retention-ms', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sb-retention-cli-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses a retention shorter than the bus keeps an idempotency key, or not a number, with exit 2', async () => {
    const db = join(dir, 'never.db');
    const runs = [
      ['coordinator', '--db', db, '--context-retention-ms', '3599999'],
      ['coordinator', '--db', db, '--context-retention-ms', '1h'],
      ['worker', '--db', db, '--role', 'coding', '--handler', 'demo', '--context-retention-ms', '0'],
      ['worker', '--db', db, '--role', 'coding', '--handler', 'demo', '--context-retention-ms', '315360000001'],
    ];
    for (const args of runs) {
      const r = await runCli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/--context-retention-ms must be a whole number from 3600000 to 315360000000/);
      expect(r.stderr).toContain(`Usage: switchboard ${args[0]}`);
    }
    expect(existsSync(db)).toBe(false);
  });
});
