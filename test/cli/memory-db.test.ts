import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './helpers.js';

/**
 * `--db :memory:` is SQLite's name for a database in memory. Only `switchboard
 * serve` keeps a broker there (test/transport/serve.test.ts); every command
 * whose file other processes open by name, or a restart reopens, refuses it
 * as a usage error, and writes no file of that name either.
 */
describe('--db :memory: outside switchboard serve', () => {
  const cwd = mkdtempSync(join(tmpdir(), 'switchboard-memory-db-'));
  afterAll(() => rmSync(cwd, { recursive: true, force: true }));

  const commands: [string, string[]][] = [
    ['coordinator', ['coordinator', '--db', ':memory:']],
    ['worker', ['worker', '--role', 'coding', '--handler', './h.mjs', '--db', ':memory:']],
    ['demo', ['demo', '--db', ':memory:']],
    ['submit', ['submit', '--workflow', 'dev-sdlc', '--input', 'x', '--db', ':memory:']],
    ['approve', ['approve', '--item', 'i', '--approver', 'a', '--db', ':memory:']],
    ['dlq list', ['dlq', 'list', '--db', ':memory:']],
  ];

  it.each(commands)('%s refuses it with exit 2 and writes nothing', async (_name, args) => {
    const r = await runCli(args, { cwd });
    expect(r.code, `${args.join(' ')}\n${r.stderr}`).toBe(2);
    expect(r.stderr).toContain('--db :memory: is a database in memory');
    expect(r.stdout).toBe('');
    expect(readdirSync(cwd)).toEqual([]);
  });
});
