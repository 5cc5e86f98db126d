import { describe, expect, it } from 'vitest';
import { runCli } from './helpers.js';

/** Every flag each operator command accepts, as its parser declares them. */
const FLAGS: Record<string, string[]> = {
  audit: ['verify', '--db', '--expect-head', '--json', '--help'],
  usage: ['--db', '--by', '--item', '--json', '--help'],
  tasks: ['list', 'show', '--db', '--state', '--limit', '--history', '--json', '--help'],
  dlq: ['list', 'replay', '--db', '--role', '--id', '--limit', '--batch', '--json', '--help'],
};

describe('the operator commands', () => {
  it('are listed by switchboard --help and document every flag and their exit status in <command> --help', async () => {
    const top = await runCli(['--help']);
    for (const [name, flags] of Object.entries(FLAGS)) {
      expect(top.stdout).toMatch(new RegExp(`^  ${name} +\\S`, 'm'));
      const r = await runCli([name, '--help']);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`Usage: switchboard ${name}`);
      for (const flag of flags) expect(r.stdout, `${name} ${flag}`).toContain(flag);
      expect(r.stdout).toContain('Exit status:');
    }
  });
});
