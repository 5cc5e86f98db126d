import { VERSION } from '../version.js';
import type { CliCommand } from './command.js';
import { COMMANDS } from './commands.js';

export function helpText(commands: readonly CliCommand[] = COMMANDS): string {
  const lines = [
    `switchboard ${VERSION}: an actor-model runtime for Agent2Agent (A2A) coordination`,
    '',
    'Usage: switchboard <command> [options]',
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(14)}${c.summary}`),
    '',
    'Options:',
    "  -h, --help     show this help (or a command's help: switchboard <command> --help)",
    '  -v, --version  print the version',
  ];
  return `${lines.join('\n')}\n`;
}

export async function runCli(argv: string[], commands: readonly CliCommand[] = COMMANDS): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined || first === '-h' || first === '--help' || first === 'help') {
    process.stdout.write(helpText(commands));
    return first === undefined ? 2 : 0;
  }
  if (first === '-v' || first === '--version') {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  const command = commands.find((c) => c.name === first);
  if (!command) {
    process.stderr.write(`switchboard: unknown command '${first}'\n\n${helpText(commands)}`);
    return 2;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(`${command.usage}\n`);
    return 0;
  }
  return command.run(rest);
}
