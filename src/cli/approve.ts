import { submitApproval } from '../actors/coordinator/intake.js';
import type { WorkQueue } from '../bus/work-queue.js';
import { BUS_FLAGS, BUS_HELP, openBus, parseBusChoice } from './bus-option.js';
import type { CliCommand } from './command.js';
import { approvalVerdict } from '../decisions/item-controls.js';
import { type CoordinatorReader, openCoordinatorReader } from './coordinator-reader.js';
import {
  CliUsageError,
  type FlagSpec,
  booleanFlag,
  parseCommandArgs,
  reportUsageError,
  stringFlag,
  databaseFileFlag,
} from './command-args.js';

export const APPROVE_USAGE = `Usage: switchboard approve --item ID --approver NAME [--deny [--reason TEXT]]
                           [--bus URL | --db PATH]

Sends an approval decision for a work item waiting at an approval gate to
the Coordinator process (switchboard coordinator), on the bus's control
role $approvals. The Coordinator applies it when the item is at its gate
(a decision sent early is retried for a while); a decision the workflow
refuses (NAME is not one of the gate's approvers) or for an unknown item is
dead-lettered on $approvals (switchboard dlq list --role '$approvals').
Returns once the decision is durably on the bus.

Before sending, it reads the Coordinator's database (--db; with --bus
optional): an unknown item, an item that already ended, one not waiting
at a gate, or a NAME not among the gate's approvers is refused and
nothing is sent (a --db that is not a Coordinator's database is never
created).

Options:
  --item ID               the work item
  --approver NAME         who decides (one of the gate's approvers)
  --deny                  deny instead of approving (the item fails)
  --reason TEXT           why, with --deny (at most 2000 characters)
${BUS_HELP}
  --db PATH|URL           the Coordinator's database: with the default bus its
                          SQLite file (required); with --bus, optional, for
                          the checks
  -h, --help              show this help

Exit status: 0 when the decision is on the bus; 1 when the database or the
bus cannot be read, or the check refuses the decision; 2 for a usage error.`;

/** Every flag the command accepts (each is documented in its --help; a test checks it). */
export const APPROVE_FLAGS: FlagSpec = {
  item: { type: 'string' },
  approver: { type: 'string' },
  deny: { type: 'boolean' },
  reason: { type: 'string' },
  ...BUS_FLAGS,
  db: { type: 'string' },
};

async function runApprove(argv: string[]): Promise<number> {
  let parsed: {
    bus: ReturnType<typeof parseBusChoice>;
    itemId: string;
    approver: string;
    deny: boolean;
    reason: string | undefined;
    db: string | undefined;
  };
  try {
    const args = parseCommandArgs(argv, APPROVE_FLAGS, 0);
    const itemId = stringFlag(args, 'item');
    if (itemId === undefined) throw new CliUsageError('--item ID is required');
    const approver = stringFlag(args, 'approver');
    if (approver === undefined) throw new CliUsageError('--approver NAME is required');
    if (approver.length > 128) throw new CliUsageError('--approver is at most 128 characters');
    const deny = booleanFlag(args, 'deny');
    const reason = stringFlag(args, 'reason');
    if (reason !== undefined && !deny) throw new CliUsageError('--reason goes with --deny');
    if (reason !== undefined && reason.length > 2000) throw new CliUsageError('--reason is at most 2000 characters');
    const db = databaseFileFlag(args);
    parsed = { bus: parseBusChoice(args, db), itemId, approver, deny, reason, db };
  } catch (error) {
    if (error instanceof CliUsageError) return reportUsageError('approve', error, APPROVE_USAGE);
    throw error;
  }
  let bus: WorkQueue | undefined;
  let reader: CoordinatorReader | undefined;
  try {
    if (parsed.db !== undefined) {
      reader = await openCoordinatorReader(parsed.db, 'approve');
      const verdict = approvalVerdict(parsed.itemId, await reader.readItem(parsed.itemId), parsed.approver);
      if (verdict.kind !== 'apply') {
        process.stderr.write(
          `switchboard approve: ${verdict.message}${verdict.kind === 'wait' ? ' (send the decision once it waits at its gate: see switchboard items show ' + parsed.itemId + ')' : ''}; nothing was sent\n`,
        );
        return 1;
      }
    }
    bus = await openBus(parsed.bus);
    const { duplicate } = await submitApproval(bus, {
      itemId: parsed.itemId,
      approver: parsed.approver,
      decision: parsed.deny ? 'deny' : 'approve',
      ...(parsed.reason === undefined ? {} : { reason: parsed.reason }),
    });
    process.stdout.write(
      `${parsed.deny ? 'denial' : 'approval'} of ${parsed.itemId} sent${duplicate ? ' (duplicate)' : ''}\n`,
    );
    return 0;
  } catch (error) {
    process.stderr.write(`switchboard approve: ${(error as Error).message}\n`);
    return 1;
  } finally {
    await bus?.close().catch(() => {});
    await reader?.close().catch(() => {});
  }
}

export const approveCommand: CliCommand = {
  name: 'approve',
  summary: 'send an approval decision for a work item to a Coordinator process',
  usage: APPROVE_USAGE,
  run: runApprove,
};
