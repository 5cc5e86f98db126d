import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { firstValueFrom } from 'rxjs';
import { filter } from 'rxjs/operators';
import { type Pool, createPool } from '../actors/worker/pool.js';
import { NonRetryableError, type WorkHandler, WorkerError } from '../actors/worker/worker.js';
import type { WorkQueue } from '../bus/work-queue.js';
import { loadAgentFile } from '../agents/agent-file.js';
import type { ModelAgent } from '../agents/model-agent.js';
import { DEMO_HANDLERS } from '../demo/roles.js';
import { LOG_LEVELS } from '../log/logger.js';
import type { ContextStore } from '../persistence/context/sqlite-store.js';
import { RoleSchema } from '../protocol/work-envelope.js';
import { BUS_HELP, CONTEXT_RETENTION_HELP, describeBus, openBus } from './bus-option.js';
import {
  BUS_PROCESS_FLAGS,
  type BusProcess,
  type BusProcessFlags,
  busProcessFlags,
  parseBusProcessArgs,
  runBusProcess,
} from './bus-process.js';
import type { CliCommand } from './command.js';
import {
  CliUsageError,
  type FlagSpec,
  countFlag,
  databaseFileFlag,
  msFlag,
  stringFlag,
  stringListFlag,
} from './command-args.js';
import { INSPECT_USAGE } from './inspect-option.js';

export const WORKER_USAGE = `Usage: switchboard worker --role ROLE [--role ROLE ...] (--handler MODULE | --agent FILE)
                          [--bus URL] [--db PATH]
                          [--concurrency N] [--lease-ms MS] [--grace-ms MS]
                          [--context-retention-ms MS]
                          [--log-level LEVEL] [--inspect[=[HOST:]PORT]]

Runs a worker for each role given: it leases the role's hops from the bus, hydrates
each work item's context from the Context Engine, calls the handler and
publishes the result for the Coordinator (switchboard coordinator). Each
role's worker runs under the role's pool, a supervisor actor that watches the
queue (what --inspect shows). Logs JSON lines to stderr. Stops gracefully on SIGINT or SIGTERM: takes no new hop,
lets hops in flight finish within --grace-ms, releases the leases of those
that do not (they go to another worker at once), then closes the bus and
the Context Engine (a second signal exits at once).

Options:
  --role ROLE             a role whose hops this process runs (required;
                          repeat it to serve several roles, one worker each,
                          sharing the handler module and the connections)
  --handler MODULE        the handler: a file path or a package specifier
                          whose module exports a worker harness handler
                          (default export, or an export named handler), or
                          demo:ROLE for the demo's scripted handler of ROLE
                          (demo:architect, demo:coding, demo:testing,
                          demo:devops), or demo for the demo's handler of
                          each hop's role; this or --agent is required
  --agent FILE            a model agent instead of a handler module: a JSON
                          file naming an AI SDK provider package and model,
                          the system prompt, pricing, limits and MCP
                          servers (docs/agents.md); API keys come from the
                          provider's environment variables
${BUS_HELP}
  --db PATH               with the default bus: the Coordinator's SQLite file
                          (the bus and the Context Engine live in it); with
                          a Redis bus the Context Engine is on Redis and
                          --db is not used
  --concurrency N         hops run at once per role, 1-256 (default 1)
  --lease-ms MS           lease per hop, renewed by heartbeats while the
                          handler runs; a crashed worker's hops come back
                          after it (100-3600000, default 30000)
  --grace-ms MS           how long in-flight hops may run after a stop
                          signal before their leases are released
                          (0-3600000, default 10000)
${CONTEXT_RETENTION_HELP}
  --log-level LEVEL       ${LOG_LEVELS.join(', ')} (default: info)
${INSPECT_USAGE}
  -h, --help              show this help

Exit status: 0 after a graceful stop; 1 when the handler, the bus, the
Context Engine or the inspector cannot be loaded, opened or started; 2 for a
usage error.`;

/** Every flag the command accepts (each is documented in its --help; a test checks it). */
export const WORKER_FLAGS: FlagSpec = {
  role: { type: 'string', multiple: true },
  handler: { type: 'string' },
  agent: { type: 'string' },
  ...BUS_PROCESS_FLAGS,
  db: { type: 'string' },
  concurrency: { type: 'string' },
  'lease-ms': { type: 'string' },
  'grace-ms': { type: 'string' },
};

interface Flags extends BusProcessFlags {
  roles: string[];
  handler: string | undefined;
  agent: string | undefined;
  concurrency: number;
  leaseMs: number;
  graceMs: number;
}

function parseFlags(all: string[]): Flags {
  const { args, inspect } = parseBusProcessArgs(all, WORKER_FLAGS);
  const roles = stringListFlag(args, 'role');
  if (roles === undefined) throw new CliUsageError('--role ROLE is required');
  for (const role of roles) {
    if (!RoleSchema.safeParse(role).success || role.startsWith('$')) {
      throw new CliUsageError(`--role '${role}' is not a role name`);
    }
  }
  if (new Set(roles).size !== roles.length) throw new CliUsageError('a --role is given twice');
  const handler = stringFlag(args, 'handler');
  const agent = stringFlag(args, 'agent');
  if (handler === undefined && agent === undefined) {
    throw new CliUsageError('--handler MODULE is required (or --agent FILE for a model agent)');
  }
  if (handler !== undefined && agent !== undefined) throw new CliUsageError('give --handler or --agent, not both');
  return {
    roles,
    handler,
    agent,
    ...busProcessFlags(args, inspect, databaseFileFlag(args)),
    concurrency: countFlag(args, 'concurrency', 1, 256),
    leaseMs: msFlag(stringFlag(args, 'lease-ms'), 'lease-ms', 30_000, 100, 3_600_000),
    graceMs: msFlag(stringFlag(args, 'grace-ms'), 'grace-ms', 10_000, 0, 3_600_000),
  };
}

/** A handler that cannot be loaded: `WorkerError` `WORKER_HANDLER_LOAD`. */
function handlerLoadError(message: string, cause?: unknown): WorkerError {
  return new WorkerError('WORKER_HANDLER_LOAD', message, cause === undefined ? {} : { cause });
}

/** `demo`, `demo:ROLE`, a file path, or a package specifier (resolved from the working directory). */
export async function loadHandler(spec: string): Promise<WorkHandler> {
  if (spec === 'demo') {
    return (hop) => {
      const handler = DEMO_HANDLERS[hop.role];
      if (handler === undefined) throw new NonRetryableError(`the demo has no handler for role ${hop.role}`);
      return handler(hop);
    };
  }
  if (spec.startsWith('demo:')) {
    const handler = DEMO_HANDLERS[spec.slice('demo:'.length)];
    if (handler === undefined) {
      throw handlerLoadError(`no demo handler '${spec}' (demo:${Object.keys(DEMO_HANDLERS).join(', demo:')})`);
    }
    return handler;
  }
  const isPath = spec.startsWith('.') || spec.startsWith('/') || /^[A-Za-z]:[\\/]/.test(spec);
  let url: string;
  try {
    url = isPath
      ? pathToFileURL(resolve(spec)).href
      : pathToFileURL(createRequire(resolve('package.json')).resolve(spec)).href;
  } catch {
    // An ESM-only package without a require condition: let import resolve it.
    url = spec;
  }
  let mod: Record<string, unknown>;
  try {
    mod = (await import(url)) as Record<string, unknown>;
  } catch (error) {
    throw handlerLoadError(`cannot load handler module '${spec}': ${(error as Error).message}`, error);
  }
  const handler = typeof mod.default === 'function' ? mod.default : mod.handler;
  if (typeof handler !== 'function') {
    throw handlerLoadError(`module '${spec}' exports no handler function (default export or 'handler')`);
  }
  return handler as WorkHandler;
}

/**
 * How often a role's pool supervisor reads its queue's stats. Its worker is
 * started on the first reading; with one replica (min = max) the readings
 * change nothing else, so they are spaced out (each is an inspector event).
 */
export const WORKER_OBSERVE_INTERVAL_MS = 1000;

async function runWorker({
  flags,
  log,
  stopped,
  startInspection,
  openContextStore,
}: BusProcess<Flags>): Promise<number> {
  let bus: WorkQueue | undefined;
  let contextStore: ContextStore | undefined;
  const pools: Pool[] = [];
  let agent: ModelAgent | undefined;
  try {
    let handler: WorkHandler;
    try {
      if (flags.agent !== undefined) {
        const loaded = await loadAgentFile(flags.agent);
        agent = loaded.handler;
        handler = agent;
        // Its MCP servers are connected now: a server that cannot be reached stops the worker before it takes work.
        await agent.connect();
        log.info(
          {
            agent: flags.agent,
            provider: loaded.file.provider,
            model: loaded.file.model,
            mcpServers: Object.keys(loaded.file.mcpServers ?? {}),
          },
          'model agent loaded',
        );
      } else handler = await loadHandler(flags.handler!);
      bus = await openBus(flags.bus, { orphanIdleMs: Math.max(1_000, flags.leaseMs * 2) });
      contextStore = await openContextStore();
    } catch (error) {
      log.fatal(
        { err: { message: (error as Error).message }, handler: flags.handler, agent: flags.agent },
        'cannot start the worker',
      );
      return 1;
    }
    const inspection = await startInspection();
    if (inspection === 'failed') return 1;
    for (const role of flags.roles) {
      pools.push(
        createPool({
          role,
          // A suspension carries its question: the Coordinator governs and publishes it.
          handler,
          bus,
          contextStore,
          // One worker per role, always running: the worker of before, now supervised.
          deployment: { minReplicas: 1, maxReplicas: 1, idleTimeoutMs: 0, concurrency: flags.concurrency },
          observeIntervalMs: WORKER_OBSERVE_INTERVAL_MS,
          visibilityTimeoutMs: flags.leaseMs,
          pollWaitMs: 1000,
          stopGraceMs: flags.graceMs,
          // Unique among the processes sharing the bus.
          consumerName: (workerId) => `${workerId}-${process.pid}`,
          logger: log,
          ...(inspection === null ? {} : { inspect: inspection.inspect }),
        }),
      );
    }
    // Ready once every role's worker runs (the supervisor starts it on its first look at the queue).
    const running = Promise.all(
      pools.map((pool) => firstValueFrom(pool.replicas$.pipe(filter((n) => n > 0)), { defaultValue: 0 })),
    );
    if ((await Promise.race([running.then(() => 'running' as const), stopped])) === 'running') {
      log.info(
        {
          roles: flags.roles,
          handler: flags.handler,
          bus: describeBus(flags.bus),
          concurrency: flags.concurrency,
          leaseMs: flags.leaseMs,
        },
        'worker ready',
      );
      await stopped;
    }
    await Promise.all(pools.map((pool) => pool.stop()));
    log.info({ settled: pools.reduce((n, pool) => n + pool.settled, 0) }, 'workers stopped');
    return 0;
  } finally {
    await Promise.all(pools.map((pool) => pool.stop().catch(() => {})));
    await agent?.close().catch((error: unknown) => log.warn({ err: error }, 'closing the MCP servers failed'));
    await contextStore?.close().catch((error: unknown) => log.warn({ err: error }, 'closing the context store failed'));
    await bus?.close().catch((error: unknown) => log.warn({ err: error }, 'closing the bus failed'));
  }
}

/**
 * The process ends after a graceful stop even when the handler module keeps
 * connections or timers of its own open (they are not the worker's to close):
 * once everything of the worker is closed, a second later at the latest.
 */
async function runWorkerProcess(argv: string[]): Promise<number> {
  const code = await runBusProcess(
    { name: 'worker', usage: WORKER_USAGE, logName: 'switchboard-worker' },
    argv,
    parseFlags,
    runWorker,
  );
  setTimeout(() => process.exit(code), 1000).unref();
  return code;
}

export const workerCommand: CliCommand = {
  name: 'worker',
  summary: "run a worker for one role as its own process (the role's hops over the bus)",
  usage: WORKER_USAGE,
  run: runWorkerProcess,
};
