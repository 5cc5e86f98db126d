import { describe, expect, it } from 'vitest';
import { APPROVE_FLAGS } from '../../src/cli/approve.js';
import type { FlagSpec } from '../../src/cli/command-args.js';
import { COORDINATOR_FLAGS } from '../../src/cli/coordinator.js';
import { SUBMIT_FLAGS } from '../../src/cli/submit.js';
import { WORKER_FLAGS } from '../../src/cli/worker.js';
import { runCli } from './processes.js';

const COMMANDS: Record<string, FlagSpec> = {
  coordinator: COORDINATOR_FLAGS,
  worker: WORKER_FLAGS,
  submit: SUBMIT_FLAGS,
  approve: APPROVE_FLAGS,
};

describe('the scale-out commands', () => {
  it('are listed by switchboard --help, and <command> --help documents every flag and the exit status', async () => {
    const top = await runCli(['--help']);
    for (const [name, flags] of Object.entries(COMMANDS)) {
      expect(top.stdout).toMatch(new RegExp(`^  ${name} +\\S`, 'm'));
      const r = await runCli([name, '--help']);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`Usage: switchboard ${name}`);
      expect(Object.keys(flags)).toContain('bus');
      for (const flag of Object.keys(flags))
        expect(r.stdout, `${name} --${flag}`).toMatch(new RegExp(`^  --${flag}\\b`, 'm'));
      expect(r.stdout).toContain('Exit status:');
    }
  });
});
