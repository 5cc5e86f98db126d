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
import { DURATION_SYNTAX, parseDuration } from '../protocol/retention.js';
import { DEFAULT_HOP_TIMEOUT_MS, MAX_HOP_TIMEOUT_MS } from '../actors/coordinator/coordinator-options.js';
import type { ContextStore } from '../persistence/context/sqlite-store.js';
import { type SqliteDatabase, openDatabase } from '../persistence/kernel/database.js';
import { isPostgresUrl, safePostgresUrl } from '../persistence/kernel/postgres.js';
import { PostgresLease } from '../persistence/coordinator/postgres-lease.js';
import { filter, firstValueFrom } from 'rxjs';
import { BUS_HELP, CONTEXT_RETENTION_HELP, describeBus, openBus, requireRedisBusWithPostgres } from './bus-option.js';
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
import { CliUsageError, type FlagSpec, booleanFlag, databaseFileFlag, msFlag, stringFlag } from './command-args.js';
import { AUDIT_KEY_ENV, loadAuditPrivateKey } from './audit-key.js';
import { COORDINATOR_STATUS_USAGE, runCoordinatorStatus } from './coordinator-status.js';

export const COORDINATOR_USAGE = `Usage: switchboard coordinator --db PATH|URL [--bus URL] [--workflows DIR|FILE]
                               [--auto-approve NAME] [--local-workers]
                               [--context-retention-ms MS] [--audit-key FILE]
                               [--hop-timeout DURATION|off]
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
                          needs --bus redis://...; there is then no broker:
                          tasks, top and the console derive the A2A view
                          from the rows. The password is never logged. Several Coordinators may
                          run on one database: one leads (a lease with an
                          epoch in the database), the others wait as
                          standbys and take over when its lease lapses (at
                          once when it died on this host)
  --lease-ms MS           with postgres://: how long the leader's lease holds
                          unrenewed (default 10000, 200-600000)
  --renew-ms MS           with postgres://: how often the leader renews and a
                          standby looks (default 3000; at most half of
                          --lease-ms)
${BUS_HELP}
  --workflows DIR|FILE    the workflow definitions (.json) items may follow
                          (default: the shipped workflows, dev-sdlc among them)
  --auto-approve NAME     approve every item reaching an approval gate as
                          NAME (unattended runs and tests)
  --local-workers         also run the demo's scripted workers in this
                          process (one pool per demo role)
${CONTEXT_RETENTION_HELP}
  --hop-timeout DURATION  how long a hop (or a query) whose stage sets no
                          timeout may be out before it is published again
                          under the same idempotency key (a lost message is
                          found again); once its stage's retry policy's
                          attempts are used up it fails (HopTimedOut). A
                          stage's own timeout wins. A number and a unit
                          (ms, s, m, h, d, w: such as 90s, 10m, 2h), 10ms
                          to 30d; default 10m; off (or 0): none, such a
                          hop may stay out forever
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
  'lease-ms': { type: 'string' },
  'renew-ms': { type: 'string' },
  'hop-timeout': { type: 'string' },
};

interface Flags extends BusProcessFlags {
  db: string;
  /** `--db` is a PostgreSQL URL. */
  postgres: boolean;
  workflows: string | undefined;
  autoApprove: string | undefined;
  localWorkers: boolean;
  auditKey: KeyObject | undefined;
  /** With PostgreSQL: the leader lease's duration and renew interval. */
  lease: { leaseMs: number; renewMs: number } | undefined;
  /** `--hop-timeout`: the default hop timeout (ms), `0` for none; undefined: the Coordinator's default. */
  hopTimeoutMs: number | undefined;
}

/** `--hop-timeout DURATION|off|0`: the default hop timeout in ms (`0`: none). */
function hopTimeoutFlag(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (value === 'off' || value === '0') return 0;
  const ms = parseDuration(value);
  if (ms === undefined || ms < 10 || ms > MAX_HOP_TIMEOUT_MS) {
    throw new CliUsageError(`--hop-timeout takes ${DURATION_SYNTAX}, from 10ms to 30d, or off; not '${value}'`);
  }
  return ms;
}

function parseFlags(all: string[]): Flags {
  const { args, inspect } = parseBusProcessArgs(all, COORDINATOR_FLAGS);
  const db = databaseFileFlag(args);
  if (db === undefined) throw new CliUsageError('--db PATH (or --db postgres://...) is required');
  const postgres = isPostgresUrl(db);
  requireRedisBusWithPostgres(args, db);
  const bus = busProcessFlags(args, inspect, postgres ? undefined : db);
  const autoApprove = stringFlag(args, 'auto-approve');
  if (autoApprove !== undefined && autoApprove.length > 128) {
    throw new CliUsageError('--auto-approve takes a name of at most 128 characters');
  }
  const leaseMs = stringFlag(args, 'lease-ms');
  const renewMs = stringFlag(args, 'renew-ms');
  if (!postgres && (leaseMs !== undefined || renewMs !== undefined)) {
    throw new CliUsageError('--lease-ms and --renew-ms are for a Coordinator on PostgreSQL (--db postgres://...)');
  }
  let lease: Flags['lease'];
  if (postgres) {
    lease = {
      leaseMs: msFlag(leaseMs, 'lease-ms', 10_000, 200, 600_000),
      renewMs: msFlag(renewMs, 'renew-ms', 3_000, 50, 300_000),
    };
    if (renewMs === undefined && lease.renewMs * 2 > lease.leaseMs) lease.renewMs = Math.floor(lease.leaseMs / 3);
    if (lease.renewMs * 2 > lease.leaseMs) {
      throw new CliUsageError(
        `--renew-ms (${lease.renewMs}) must be at most half of --lease-ms (${lease.leaseMs}): a leader renews at least twice per lease`,
      );
    }
  }
  return {
    db,
    postgres,
    lease,
    ...bus,
    workflows: stringFlag(args, 'workflows'),
    autoApprove,
    localWorkers: booleanFlag(args, 'local-workers'),
    auditKey: loadAuditPrivateKey(stringFlag(args, 'audit-key')),
    hopTimeoutMs: hopTimeoutFlag(stringFlag(args, 'hop-timeout')),
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
  lease?: PostgresLease;
}

async function closeAll(opened: Opened, log: Logger): Promise<void> {
  const steps: [string, (() => Promise<void> | void) | undefined][] = [
    ['intake', opened.intake && (() => opened.intake!.close())],
    ['coordinator', opened.coordinator && (() => opened.coordinator!.close())],
    // A leader gives its lease up: a standby takes over at its next look.
    ['lease', opened.lease && (() => opened.lease!.close())],
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

/**
 * How long a Coordinator on PostgreSQL holds a result it took from the bus
 * before it comes back to any Coordinator: the leader lease's duration (at
 * least 1 s), so that after a takeover the results a killed leader held are
 * decided by the next one within about a lease. Taking a result again is
 * harmless: one already applied is a no-op.
 */
function resultsLeaseMs(flags: Flags): number {
  return Math.max(1_000, flags.lease?.leaseMs ?? 30_000);
}

/** Resolves at the lease's next change to `role`. */
function nextRole(lease: PostgresLease, role: 'leader' | 'lost'): Promise<void> {
  return firstValueFrom(lease.roles$.pipe(filter((change) => change.role === role))).then(() => undefined);
}

/**
 * Closes what a leader that lost its lease runs, keeping the bus and the
 * lease: its intake and its Coordinator together (the intake's close waits
 * on commits that may hang on a database it is cut off from; meanwhile the
 * Coordinator must already have stopped taking results).
 */
async function closeLeading(opened: Opened, log: Logger): Promise<void> {
  const intake = opened.intake;
  const coordinator = opened.coordinator;
  delete opened.intake;
  delete opened.coordinator;
  await Promise.all([
    closeAll(intake === undefined ? {} : { intake }, log),
    closeAll(coordinator === undefined ? {} : { coordinator }, log),
  ]);
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
    let lease: PostgresLease | undefined;
    try {
      if (flags.postgres) {
        // Results a killed leader had taken come back to the next one after a lease's time, not 30 s.
        opened.bus = await openBus(flags.bus, { orphanIdleMs: resultsLeaseMs(flags) });
        opened.contextStore = await openContextStore();
        lease = new PostgresLease({ url: flags.db, logger: log, ...flags.lease });
        opened.lease = lease;
        await lease.acquire();
      } else {
        opened.db = openDatabase(flags.db);
        opened.broker = createBroker({ path: flags.db, logger: log, inspect: inspection?.inspect });
        opened.bus = await openBus(flags.bus, { database: opened.db });
        opened.contextStore = await openContextStore({ database: opened.db });
      }
    } catch (error) {
      log.fatal({ err: { message: (error as Error).message }, db: where }, 'cannot start the Coordinator');
      return 1;
    }
    const bus = opened.bus;
    const contextStore = opened.contextStore;
    let stop = false;
    void stopped.then(() => {
      stop = true;
    });
    // On PostgreSQL: lead while the lease is this process's; lose it and stop deciding at once (nothing more is
    // committed: every commit is fenced by the lease's epoch), then wait as a standby to lead again.
    for (;;) {
      if (lease !== undefined && lease.role !== 'leader') {
        log.info(
          { db: where, ...(lease.epoch === undefined ? {} : { lastEpoch: lease.epoch }) },
          'coordinator standby: another Coordinator leads this database; this one takes over when its lease lapses',
        );
        const led = await Promise.race([stopped.then(() => false), nextRole(lease, 'leader').then(() => true)]);
        if (!led || stop) return 0;
      }
      const lost = lease === undefined ? new Promise<never>(() => undefined) : nextRole(lease, 'lost');
      const fence = lease?.fence;
      try {
        opened.coordinator = await createCoordinator({
          ...(flags.postgres
            ? { postgres: { url: flags.db, ...(fence === undefined ? {} : { fence }) } }
            : { broker: opened.broker as Broker, db: opened.db as SqliteDatabase }),
          bus,
          contextStore,
          definitions,
          deployments,
          ...(flags.lease === undefined ? {} : { resultsVisibilityTimeoutMs: resultsLeaseMs(flags) }),
          consumer: `coordinator-${process.pid}`,
          logger: log,
          inspect: inspection?.inspect,
          ...(flags.auditKey === undefined ? {} : { auditKey: flags.auditKey }),
          ...(flags.hopTimeoutMs === undefined ? {} : { hopTimeoutMs: flags.hopTimeoutMs }),
        });
      } catch (error) {
        if (lease !== undefined && lease.role !== 'leader' && !stop) {
          log.warn({ err: { message: (error as Error).message } }, 'lost the lease while starting to lead');
          continue;
        }
        log.fatal({ err: { message: (error as Error).message }, db: where }, 'cannot start the Coordinator');
        return 1;
      }
      const coordinator = opened.coordinator;
      // One line per item event: lifecycle at info, hop events at debug.
      coordinator.statuses$.subscribe((status) => {
        if (status.event.kind === 'current' || status.event.kind === 'artifact-chunk') return;
        const fields = itemLogFields(status);
        if (HOP_EVENT_KINDS.has(status.event.kind)) log.debug(fields, 'work item event');
        else log.info(fields, 'work item event');
      });
      opened.intake = new CoordinatorIntake({
        coordinator,
        bus,
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
          restored: coordinator.restored.items.length,
          localWorkers: Object.keys(deployments),
          autoApprove: flags.autoApprove ?? null,
          hopTimeoutMs: flags.hopTimeoutMs ?? DEFAULT_HOP_TIMEOUT_MS,
          ...(lease?.epoch === undefined ? {} : { epoch: lease.epoch }),
        },
        'coordinator ready',
      );
      const outcome = await Promise.race([stopped.then(() => 'stopped' as const), lost.then(() => 'lost' as const)]);
      if (outcome === 'stopped') return 0;
      log.warn(
        { epoch: lease?.epoch ?? null },
        'lost the leader lease: stopped deciding (nothing more is committed); waiting as a standby',
      );
      await closeLeading(opened, log);
    }
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
