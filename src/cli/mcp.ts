import { Console } from 'node:console';
import { resolve } from 'node:path';
import { LOG_LEVELS, type LogLevel, createLogger } from '../log/logger.js';
import { A2A_MAX_STREAM_WAIT_SECONDS, MAX_LINE_BYTES } from '../protocol/bounds.js';
import { BrokerError } from '../protocol/broker-error.js';
import { createA2ATool } from '../transport/a2a-tool.js';
import { MCP_DEFAULT_MAX_WAIT_SECONDS, createA2AMcpServer } from '../transport/a2a-tool-mcp.js';
import { McpStdioTransport, type McpTransportCloseReason } from '../transport/mcp-stdio-transport.js';
import type { CliCommand } from './command.js';
import {
  CliUsageError,
  type FlagSpec,
  choiceFlag,
  databaseFileFlag,
  parseCommandArgs,
  reportUsageError,
  stringFlag,
  stringListFlag,
} from './command-args.js';
import { joinBroker } from './join-broker.js';
import { stopSignal } from './stop-signal.js';

/** The context an MCP server's agent registers in when `--context` is not given. */
export const MCP_DEFAULT_CONTEXT = 'mcp';

export const MCP_USAGE = `Usage: switchboard mcp --db PATH --name NAME [--context ID] [--description TEXT]
                     [--skill ID:NAME]... [--max-wait SECONDS] [--log-level LEVEL]

A Model Context Protocol server on stdin/stdout for an MCP host (an IDE, a
desktop assistant): it registers NAME as an agent on the A2A broker of the
database and exposes one tool, A2A (discover, send, get, wait, ask, stream,
complete, cancel), closed over the agent's token (no MCP message carries it).
Two hosts configured with such servers on one database let their models
delegate to each other. Each message is one line of at most ${MAX_LINE_BYTES}
bytes (the broker's bound): a longer line, or one that is not a JSON-RPC
message, is answered with a JSON-RPC error and the server keeps serving.
When the host closes the server (end of stdin, SIGINT or SIGTERM) or stdio
fails, the agent leaves the broker as a closed connection does: no longer
live, its open tasks kept. Logs are JSON lines on stderr.

Options:
  --db PATH            the broker's SQLite file (required)
  --name NAME          the agent's name, as other agents address it (required)
  --context ID         the agent's context: names are looked up in the
                       caller's context first (default: ${MCP_DEFAULT_CONTEXT})
  --description TEXT   what the agent does, shown by discover
  --skill ID:NAME      a skill shown by discover; repeat for more
  --max-wait SECONDS   the longest one wait lasts, 1-${A2A_MAX_STREAM_WAIT_SECONDS} (default ${MCP_DEFAULT_MAX_WAIT_SECONDS}:
                       under the 60 s request timeout of MCP clients); raise
                       it only for a client with a longer timeout
  --log-level LEVEL    ${LOG_LEVELS.join(', ')} (default: info)
  -h, --help           show this help

Exit status: 0 after the host closed the server (end of stdin or a signal);
1 when stdin or stdout failed or the broker connection was lost (one line on
stderr says why), or when the broker cannot be reached or NAME cannot be
registered (the message says why); 2 for a usage error.`;

/** Every flag the command accepts (each is documented in its --help). */
export const MCP_FLAGS: FlagSpec = {
  db: { type: 'string' },
  name: { type: 'string' },
  context: { type: 'string' },
  description: { type: 'string' },
  skill: { type: 'string', multiple: true },
  'max-wait': { type: 'string' },
  'log-level': { type: 'string' },
};

interface McpFlags {
  db: string;
  name: string;
  contextId: string;
  description: string | undefined;
  skills: { id: string; name: string }[];
  maxWaitSeconds: number;
  logLevel: LogLevel;
}

function parseFlags(argv: string[]): McpFlags {
  const args = parseCommandArgs(argv, MCP_FLAGS, 0);
  const db = databaseFileFlag(args);
  if (db === undefined) throw new CliUsageError('--db PATH is required: the database of the broker to join');
  const name = stringFlag(args, 'name');
  if (name === undefined) throw new CliUsageError('--name NAME is required: the name other agents address');
  const skills = (stringListFlag(args, 'skill') ?? []).map((spec) => {
    const colon = spec.indexOf(':');
    if (colon <= 0 || colon === spec.length - 1) {
      throw new CliUsageError(`--skill takes ID:NAME, such as search:Web search (got '${spec}')`);
    }
    return { id: spec.slice(0, colon), name: spec.slice(colon + 1) };
  });
  const wait = stringFlag(args, 'max-wait');
  let maxWaitSeconds = MCP_DEFAULT_MAX_WAIT_SECONDS;
  if (wait !== undefined) {
    maxWaitSeconds = Number(wait);
    if (!/^[0-9]+$/.test(wait) || maxWaitSeconds < 1 || maxWaitSeconds > A2A_MAX_STREAM_WAIT_SECONDS) {
      throw new CliUsageError(
        `--max-wait must be a whole number of seconds from 1 to ${A2A_MAX_STREAM_WAIT_SECONDS} (got '${wait}')`,
      );
    }
  }
  return {
    db: resolve(db),
    name,
    contextId: stringFlag(args, 'context') ?? MCP_DEFAULT_CONTEXT,
    description: stringFlag(args, 'description'),
    skills,
    maxWaitSeconds,
    logLevel: choiceFlag(args, 'log-level', LOG_LEVELS, 'info'),
  };
}

async function runMcp(argv: string[]): Promise<number> {
  let flags: McpFlags;
  try {
    flags = parseFlags(argv);
  } catch (error) {
    if (error instanceof CliUsageError) return reportUsageError('mcp', error, MCP_USAGE);
    throw error;
  }
  // stdout carries MCP messages only: anything printed through the console goes to stderr.
  globalThis.console = new Console({ stdout: process.stderr, stderr: process.stderr });
  const logger = createLogger({ level: flags.logLevel, name: 'switchboard-mcp' });
  let client: Awaited<ReturnType<typeof joinBroker>>;
  try {
    client = await joinBroker(flags.db);
  } catch (error) {
    process.stderr.write(
      `switchboard mcp: cannot reach the broker of ${flags.db}: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    return 1;
  }
  let token: string;
  try {
    const registered = await client.register({
      name: flags.name,
      contextId: flags.contextId,
      ...(flags.description === undefined ? {} : { description: flags.description }),
      ...(flags.skills.length === 0 ? {} : { skills: flags.skills }),
    });
    token = registered.token;
    logger.info({ agentId: registered.agentId, name: flags.name, contextId: flags.contextId }, 'registered');
  } catch (error) {
    const why = error instanceof BrokerError ? registrationProblem(error) : String(error);
    process.stderr.write(`switchboard mcp: cannot register ${JSON.stringify(flags.name)}: ${why}\n`);
    await client.close();
    return 1;
  }

  const tool = createA2ATool({ client, token, maxWaitSeconds: flags.maxWaitSeconds });
  const server = createA2AMcpServer({
    tool,
    name: 'switchboard',
    instructions:
      `You are the agent "${flags.name}" on an A2A broker shared with other agents. Use the A2A tool to delegate ` +
      'work to them (discover, send, wait) and to serve what they ask of you (wait, get, ask, stream, complete).',
  });
  const signal = stopSignal(logger, 'stopping the MCP server');
  let brokerLost = false;
  const lost = new Promise<void>((done) =>
    client.onDisconnect(() => {
      brokerLost = true;
      done();
    }),
  );
  const transport = new McpStdioTransport();
  const transportClosed = new Promise<void>((done) => {
    server.onclose = done;
  });
  server.onerror = (error) => logger.warn({ err: { message: error.message } }, 'MCP message refused');
  await server.connect(transport);
  await Promise.race([transportClosed, signal.stopped, lost]);
  signal.dispose();
  const reason = transport.closeReason;
  await server.close().catch(() => undefined);
  // Closing the connection ends the registration as a socket close does:
  // the agent leaves discovery, its open tasks stay open for its next run.
  await client.close().catch(() => undefined);
  process.stdin.destroy();
  if (brokerLost) {
    logger.error('the broker connection was lost; the MCP server stops');
    return 1;
  }
  const name = JSON.stringify(flags.name);
  if (reason !== undefined && reason.kind !== 'closed') {
    process.stderr.write(`switchboard mcp: ${closeWhy(reason)}; ${name} is no longer live (its open tasks are kept)\n`);
    return reason.kind === 'input-ended' ? 0 : 1;
  }
  logger.info({ name: flags.name }, 'stopped: the agent is no longer live, its open tasks are kept');
  return 0;
}

/** Why the MCP server stopped, for its one line on stderr. */
function closeWhy(reason: Exclude<McpTransportCloseReason, { kind: 'closed' }>): string {
  switch (reason.kind) {
    case 'input-ended':
      return 'the host closed stdin';
    case 'input-failed':
      return `reading stdin failed (${reason.message})`;
    case 'output-failed':
      return `writing to stdout failed, the host no longer reads (${reason.message})`;
  }
}

function registrationProblem(error: BrokerError): string {
  const issues = error.details?.issues;
  if (Array.isArray(issues) && issues.length > 0) {
    return issues
      .map((i: { path?: unknown[]; message?: unknown }) => `${(i.path ?? []).join('.')}: ${String(i.message)}`)
      .join('; ');
  }
  return error.message;
}

export const mcpCommand: CliCommand = {
  name: 'mcp',
  summary: 'serve the A2A tool to an MCP host (Model Context Protocol on stdio)',
  usage: MCP_USAGE,
  run: runMcp,
};
