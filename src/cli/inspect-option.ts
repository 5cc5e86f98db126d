import type { ActorInspector } from '../actors/inspection.js';
import {
  DEFAULT_INSPECT_HOST,
  DEFAULT_INSPECT_PORT,
  type InspectorServer,
  startInspectorServer,
} from '../inspect/inspector-server.js';
import { createStatelyInspection } from '../inspect/stately-inspection.js';
import type { Logger } from '../log/logger.js';
import { CliUsageError } from './command-args.js';

/** Where `--inspect[=[HOST:]PORT]` asks the inspector to listen. */
export interface InspectTarget {
  host: string;
  port: number;
}

/** A bad `--inspect` value: a usage error (exit 2). */
function badInspectValue(value: string): CliUsageError {
  return new CliUsageError(`--inspect takes [HOST:]PORT (a port from 0 to 65535), not '${value}'`, {
    details: { flag: 'inspect', value },
  });
}

export const INSPECT_USAGE = `  --inspect[=[HOST:]PORT]
                       show every actor (broker, agents, tasks, runs, pools)
                       in the Stately inspector: serves its WebSocket and a
                       page to open on HOST:PORT (default ${DEFAULT_INSPECT_HOST}:${DEFAULT_INSPECT_PORT};
                       port 0 picks a free one). Tokens and payload bodies
                       never reach it. Off unless given; costs time per event`;

/**
 * Takes `--inspect`, `--inspect=PORT` or `--inspect=HOST:PORT` out of `argv`
 * (node:util's parseArgs has no optional values). The last one given wins; a
 * bad value is a `CliUsageError` (exit 2).
 */
export function takeInspectOption(argv: readonly string[]): { argv: string[]; inspect: InspectTarget | null } {
  const rest: string[] = [];
  let inspect: InspectTarget | null = null;
  for (const arg of argv) {
    if (arg === '--inspect') {
      inspect = { host: DEFAULT_INSPECT_HOST, port: DEFAULT_INSPECT_PORT };
    } else if (arg.startsWith('--inspect=')) {
      inspect = parseInspectValue(arg.slice('--inspect='.length));
    } else {
      rest.push(arg);
    }
  }
  return { argv: rest, inspect };
}

export function parseInspectValue(value: string): InspectTarget {
  const colon = value.lastIndexOf(':');
  let host = DEFAULT_INSPECT_HOST;
  let portText = value;
  if (colon >= 0) {
    host = value.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
    portText = value.slice(colon + 1);
    if (host === '') throw badInspectValue(value);
  }
  if (!/^\d{1,5}$/.test(portText)) throw badInspectValue(value);
  const port = Number(portText);
  if (port > 65535) throw badInspectValue(value);
  return { host, port };
}

/** A started inspector: hand `inspect` to the runtime; `stop()` on shutdown. */
export interface RunningInspection {
  readonly inspect: ActorInspector;
  readonly server: InspectorServer;
  readonly url: string;
  stop(): Promise<void>;
}

/**
 * Starts the inspector server and the event conversion, and tells the user
 * the page to open on stderr (through the logger when it shows info lines,
 * as a plain line otherwise: stdout may be a protocol stream).
 */
/**
 * Starts the inspector a command was asked for (`null`: none asked), or logs
 * why it could not and returns `'failed'` (the command then exits 1).
 */
export async function startRequestedInspection(
  target: InspectTarget | null,
  logger: Logger,
): Promise<RunningInspection | null | 'failed'> {
  if (target === null) return null;
  try {
    return await startInspection(target, { logger });
  } catch (error) {
    logger.fatal({ err: { message: (error as Error).message } }, 'cannot start the inspector');
    return 'failed';
  }
}

export async function startInspection(
  target: InspectTarget,
  options: { logger: Logger; stderr?: NodeJS.WritableStream },
): Promise<RunningInspection> {
  const server = await startInspectorServer({ host: target.host, port: target.port });
  const inspection = createStatelyInspection(server);
  const message = `Stately inspector: open ${server.url} (events on ${server.wsUrl})`;
  if (options.logger.isLevelEnabled('info')) {
    options.logger.info(
      { inspector: { url: server.url, ws: server.wsUrl, host: server.host, port: server.port } },
      message,
    );
  } else {
    (options.stderr ?? process.stderr).write(`${message}\n`);
  }
  if (target.host !== '127.0.0.1' && target.host !== 'localhost' && target.host !== '::1') {
    options.logger.warn(
      { host: target.host },
      'the inspector listens beyond this machine: anyone who reaches it sees the actors',
    );
  }
  return {
    inspect: inspection.inspect,
    server,
    url: server.url,
    async stop() {
      inspection.stop();
      await server.stop();
    },
  };
}
