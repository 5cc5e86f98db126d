import type { KeyObject } from 'node:crypto';
import { statSync } from 'node:fs';
import { type Broker, createBroker } from '../actors/broker/broker.js';
import { type Coordinator, type RoleDeployment, createCoordinator } from '../actors/coordinator/coordinator.js';
import { CoordinatorIntake } from '../actors/coordinator/intake.js';
import {
  SHIPPED_WORKFLOWS_DIR,
  loadWorkflowDirectory,
  loadWorkflowFile,
} from '../actors/coordinator/workflow-loader.js';
import type { WorkQueue } from '../bus/work-queue.js';
import { DEMO_DEPLOYMENTS } from '../demo/run-demo.js';
import { DEMO_HANDLERS } from '../demo/roles.js';
import { HOP_EVENT_KINDS, itemLogFields } from '../log/log-fields.js';
import { LOG_LEVELS, type Logger } from '../log/logger.js';
import { WorkflowRegistry } from '../workflow/definition.js';
import type { ContextStore } from '../persistence/context/sqlite-store.js';
import { type SqliteDatabase, openDatabase } from '../persistence/kernel/database.js';
import { isPostgresUrl, safePostgresUrl } from '../persistence/kernel/postgres.js';
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
import { INSPECT_USAGE } from './inspect-option.js';
import { CliUsageError, type FlagSpec, booleanFlag, stringFlag, databaseFileFlag } from './command-args.js';
import { AUDIT_KEY_ENV, loadAuditPrivateKey } from './audit-key.js';
import { COORDINATOR_STATUS_USAGE, runCoordinatorStatus } from './coordinator-status.js';

export const COORDINATOR_USAGE = `Usage: switchboard coordinator --db PATH|URL [--bus URL] [--workflows DIR|FILE]
                               [--auto-approve NAME] [--local-workers]
                               [--context-retention-ms MS] [--audit-key FILE]
                               [--log-level LEVEL] [--inspect[=[HOST:]PORT]]

Runs the Coordinator in this process: the broker, the audit and the
Coordinator's tables live in the SQLite --db file; hops travel over the
chosen bus to workers in other processes (switchboard worker). Work items
arrive on the bus's control role $items (switchboard submit) and approval
decisions on $approvals (switchboard approve); see docs/coordinator.md,
"Control plane". Logs JSON lines to stderr. Stops gracefully on SIGINT or
SIGTERM: stops taking results and requests, lets what it holds finish,
closes the bus and the database (a second signal exits at once).

Options:
  --db PATH               the Coordinator's SQLite file (created if missing;
                          with the default bus it also holds the bus and the
                          Context Engine)
  --db postgres://USER[:PASSWORD]@HOST:PORT/DB
                          or its tables and audit in PostgreSQL (the database
                          must exist; its tables are made on first start);
                          needs --bus redis://...: the broker is then in
                          memory, rebuilt from the tables on every start. The
                          password is never logged
${BUS_HELP}
  --workflows DIR|FILE    the workflow definitions (.json) items may follow
                          (default: the shipped workflows, dev-sdlc among them)
  --auto-approve NAME     approve every item reaching an approval gate as
                          NAME (unattended runs and tests)
  --local-workers         also run the demo's scripted workers in this
                          process (one pool per demo role)
${CONTEXT_RETENTION_HELP}
  --audit-key FILE        an Ed25519 private key (PEM, mode 0600: refused if
                          group or others can read it; make one with
                          switchboard audit keygen) that signs the audit
                          head at every work item's end and every minute;
                          ${AUDIT_KEY_ENV} may hold the PEM instead. The key
                          is never stored in the database or logged
  --log-level LEVEL       ${LOG_LEVELS.join(', ')} (default: info)
${INSPECT_USAGE}
  -h, --help              show this help

Exit status: 0 after a graceful stop; 1 when the database (a PostgreSQL that
does not answer among them), the bus or the workflows cannot be opened; 2
for a usage error.`;

/** Every flag the command accepts (each is documented in its --help; a test checks it). */
export const COORDINATOR_FLAGS: FlagSpec = {
  db: { type: 'string' },
  ...BUS_PROCESS_FLAGS,
  workflows: { type: 'string' },
  'auto-approve': { type: 'string' },
  'local-workers': { type: 'boolean' },
  'audit-key': { type: 'string' },
};

interface Flags extends BusProcessFlags {
  db: string;
  /** `--db` is a PostgreSQL URL. */
  postgres: boolean;
  workflows: string | undefined;
  autoApprove: string | undefined;
  localWorkers: boolean;
  auditKey: KeyObject | undefined;
}

function parseFlags(all: string[]): Flags {
  const { args, inspect } = parseBusProcessArgs(all, COORDINATOR_FLAGS);
  const db = databaseFileFlag(args);
  if (db === undefined) throw new CliUsageError('--db PATH (or --db postgres://...) is required');
  const postgres = isPostgresUrl(db);
  if (postgres && stringFlag(args, 'bus') === undefined) {
    throw new CliUsageError(
      '--db postgres://... needs --bus redis://HOST:PORT: a Coordinator on PostgreSQL runs its hops on Redis ' +
        '(the embedded bus would keep them in a file on this machine)',
    );
  }
  const bus = busProcessFlags(args, inspect, postgres ? undefined : db);
  const autoApprove = stringFlag(args, 'auto-approve');
  if (autoApprove !== undefined && autoApprove.length > 128) {
    throw new CliUsageError('--auto-approve takes a name of at most 128 characters');
  }
  return {
    db,
    postgres,
    ...bus,
    workflows: stringFlag(args, 'workflows'),
    autoApprove,
    localWorkers: booleanFlag(args, 'local-workers'),
    auditKey: loadAuditPrivateKey(stringFlag(args, 'audit-key')),
  };
}

function loadDefinitions(source: string | undefined): WorkflowRegistry {
  if (source === undefined) return loadWorkflowDirectory(SHIPPED_WORKFLOWS_DIR);
  if (statSync(source, { throwIfNoEntry: false })?.isDirectory() === true) return loadWorkflowDirectory(source);
  const registry = new WorkflowRegistry();
  registry.add(loadWorkflowFile(source));
  return registry;
}

/** What the process opened, closed in reverse. */
interface Opened {
  coordinator?: Coordinator;
  intake?: CoordinatorIntake;
  broker?: Broker;
  bus?: WorkQueue;
  contextStore?: ContextStore;
  db?: SqliteDatabase;
}

async function closeAll(opened: Opened, log: Logger): Promise<void> {
  const steps: [string, (() => Promise<void> | void) | undefined][] = [
    ['intake', opened.intake && (() => opened.intake!.close())],
    ['coordinator', opened.coordinator && (() => opened.coordinator!.close())],
    ['context store', opened.contextStore && (() => opened.contextStore!.close())],
    ['bus', opened.bus && (() => opened.bus!.close())],
    ['broker', opened.broker && (() => opened.broker!.close())],
    ['database', opened.db && (() => void opened.db!.close())],
  ];
  for (const [what, close] of steps) {
    if (close === undefined) continue;
    try {
      await close();
    } catch (error) {
      log.warn({ err: error, what }, 'close failed');
    }
  }
}

async function runCoordinator({
  flags,
  log,
  stopped,
  startInspection,
  openContextStore,
}: BusProcess<Flags>): Promise<number> {
  const opened: Opened = {};
  try {
    const inspection = await startInspection();
    if (inspection === 'failed') return 1;
    let definitions: WorkflowRegistry;
    try {
      definitions = loadDefinitions(flags.workflows);
    } catch (error) {
      log.fatal({ err: { message: (error as Error).message } }, 'cannot load the workflows');
      return 1;
    }
    const deployments: Record<string, RoleDeployment> = {};
    if (flags.localWorkers) {
      for (const [role, deployment] of Object.entries(DEMO_DEPLOYMENTS)) {
        deployments[role] = { handler: DEMO_HANDLERS[role]!, deployment };
      }
    }
    // The database as it may be logged: a PostgreSQL URL without its password.
    const where = flags.postgres ? safePostgresUrl(flags.db) : flags.db;
    try {
      if (flags.postgres) {
        opened.bus = await openBus(flags.bus);
        opened.contextStore = await openContextStore();
      } else {
        opened.db = openDatabase(flags.db);
        opened.broker = createBroker({ path: flags.db, logger: log, inspect: inspection?.inspect });
        opened.bus = await openBus(flags.bus, { database: opened.db });
        opened.contextStore = await openContextStore({ database: opened.db });
      }
      opened.coordinator = await createCoordinator({
        ...(flags.postgres
          ? { postgres: { url: flags.db } }
          : { broker: opened.broker as Broker, db: opened.db as SqliteDatabase }),
        bus: opened.bus,
        contextStore: opened.contextStore,
        definitions,
        deployments,
        consumer: `coordinator-${process.pid}`,
        logger: log,
        inspect: inspection?.inspect,
        ...(flags.auditKey === undefined ? {} : { auditKey: flags.auditKey }),
      });
    } catch (error) {
      log.fatal({ err: { message: (error as Error).message }, db: where }, 'cannot start the Coordinator');
      return 1;
    }
    // One line per item event: lifecycle at info, hop events at debug.
    opened.coordinator.statuses$.subscribe((status) => {
      if (status.event.kind === 'current') return;
      const fields = itemLogFields(status);
      if (HOP_EVENT_KINDS.has(status.event.kind)) log.debug(fields, 'work item event');
      else log.info(fields, 'work item event');
    });
    opened.intake = new CoordinatorIntake({
      coordinator: opened.coordinator,
      bus: opened.bus,
      logger: log,
      consumer: `coordinator-${process.pid}`,
      ...(flags.autoApprove === undefined ? {} : { autoApprove: flags.autoApprove }),
    });
    await opened.intake.start();
    log.info(
      {
        db: where,
        bus: describeBus(flags.bus),
        workflows: definitions.list().map((d) => `${d.id}@${d.version}`),
        restored: opened.coordinator.restored.items.length,
        localWorkers: Object.keys(deployments),
        autoApprove: flags.autoApprove ?? null,
      },
      'coordinator ready',
    );
    await stopped;
    return 0;
  } finally {
    await closeAll(opened, log);
  }
}

export const coordinatorCommand: CliCommand = {
  name: 'coordinator',
  summary: 'run the Coordinator as its own process (workers connect over the bus); status: its leader lease',
  usage: `${COORDINATOR_USAGE}\n\n${COORDINATOR_STATUS_USAGE}`,
  run: (argv) =>
    argv[0] === 'status'
      ? runCoordinatorStatus(argv.slice(1))
      : runBusProcess(
          { name: 'coordinator', usage: COORDINATOR_USAGE, logName: 'switchboard-coordinator' },
          argv,
          parseFlags,
          runCoordinator,
        ),
};
