import type { CliCommand } from './command.js';
import { demoCommand } from './demo.js';
import { serveCommand } from './serve.js';

/**
 * Every command, in the order `--help` lists them. A command lives in its own
 * module (`serve.ts`, `demo.ts`, ...) and is added here.
 */
export const COMMANDS: readonly CliCommand[] = [serveCommand, demoCommand];
