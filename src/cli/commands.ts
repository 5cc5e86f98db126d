import type { CliCommand } from './command.js';
import { agentsCommand } from './agents.js';
import { approveCommand } from './approve.js';
import { auditCommand } from './audit.js';
import { consoleCommand } from './console.js';
import { coordinatorCommand } from './coordinator.js';
import { demoCommand } from './demo.js';
import { dlqCommand } from './dlq.js';
import { gatewayCommand } from './gateway.js';
import { mcpCommand } from './mcp.js';
import { itemsCommand } from './items.js';
import { serveCommand } from './serve.js';
import { submitCommand } from './submit.js';
import { tasksCommand } from './tasks.js';
import { topCommand } from './top.js';
import { usageCommand } from './usage.js';
import { workerCommand } from './worker.js';

/**
 * Every command, in the order `--help` lists them. A command lives in its own
 * module (`serve.ts`, `demo.ts`, ...) and is added here.
 */
export const COMMANDS: readonly CliCommand[] = [
  serveCommand,
  mcpCommand,
  demoCommand,
  auditCommand,
  usageCommand,
  itemsCommand,
  tasksCommand,
  dlqCommand,
  topCommand,
  consoleCommand,
  gatewayCommand,
  agentsCommand,
  coordinatorCommand,
  workerCommand,
  submitCommand,
  approveCommand,
];
