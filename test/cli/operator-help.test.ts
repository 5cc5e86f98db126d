import { describe, expect, it } from 'vitest';
import { AUDIT_FLAGS } from '../../src/cli/audit.js';
import type { FlagSpec } from '../../src/cli/command-args.js';
import { DLQ_FLAGS } from '../../src/cli/dlq.js';
import { ITEMS_FLAGS } from '../../src/cli/items.js';
import { TASKS_FLAGS } from '../../src/cli/tasks.js';
import { USAGE_FLAGS } from '../../src/cli/usage.js';
import { runCli } from './helpers.js';

/** Each operator command: the flags its parser accepts and its subcommands. */
const COMMANDS: Record<string, { flags: FlagSpec; subcommands: string[] }> = {
  audit: { flags: AUDIT_FLAGS, subcommands: ['verify'] },
  usage: { flags: USAGE_FLAGS, subcommands: [] },
  tasks: { flags: TASKS_FLAGS, subcommands: ['list', 'show'] },
  items: { flags: ITEMS_FLAGS, subcommands: ['list', 'show'] },
  dlq: { flags: DLQ_FLAGS, subcommands: ['list', 'replay'] },
};

describe('the operator commands', () => {
  it('are listed by switchboard --help, and <command> --help documents every flag, subcommand and the exit status', async () => {
    const top = await runCli(['--help']);
    for (const [name, { flags, subcommands }] of Object.entries(COMMANDS)) {
      expect(top.stdout).toMatch(new RegExp(`^  ${name} +\\S`, 'm'));
      const r = await runCli([name, '--help']);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`Usage: switchboard ${name}`);
      expect(Object.keys(flags)).toContain('db');
      expect(Object.keys(flags)).toContain('json');
      for (const flag of Object.keys(flags))
        expect(r.stdout, `${name} --${flag}`).toMatch(new RegExp(`^  --${flag}\\b`, 'm'));
      for (const sub of subcommands) expect(r.stdout).toContain(`switchboard ${name} ${sub}`);
      expect(r.stdout).toContain('Exit status:');
    }
  });
});
