import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { VERSION } from '../../src/version.js';

const run = promisify(execFile);
const bin = new URL('../../bin/switchboard.js', import.meta.url).pathname;

describe('the switchboard command', () => {
  it('prints its help and exits 0', async () => {
    const { stdout } = await run(process.execPath, [bin, '--help']);
    expect(stdout).toContain('Usage: switchboard <command>');
  });

  it('prints its version, the same as package.json', async () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(VERSION).toBe(pkg.version);
    const { stdout } = await run(process.execPath, [bin, '--version']);
    expect(stdout.trim()).toBe(pkg.version);
  });

  it('refuses an unknown command with exit code 2 and the help on stderr', async () => {
    const error = await run(process.execPath, [bin, 'no-such-command']).then(
      () => undefined,
      (e: { code: number; stderr: string }) => e,
    );
    expect(error?.code).toBe(2);
    expect(error?.stderr).toContain("unknown command 'no-such-command'");
  });
});
