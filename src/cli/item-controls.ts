import { submitControl } from '../actors/coordinator/item-controls.js';
import type { WorkQueue } from '../bus/work-queue.js';
import { cancelVerdict, retryVerdict } from '../decisions/item-controls.js';
import { CONTROLS_ROLE, retryRequestId } from '../protocol/item-control.js';
import { BUS_FLAGS, parseBusChoice, openBus } from './bus-option.js';
import {
  CliUsageError,
  type FlagSpec,
  booleanFlag,
  databaseFileFlag,
  msFlag,
  parseCommandArgs,
  stringFlag,
} from './command-args.js';
import { type CoordinatorReader, openCoordinatorReader } from './coordinator-reader.js';
import { awaitRequest } from './item-wait.js';

/** The flags of `items cancel` and `items retry` (each is documented in the items --help). */
export const ITEM_CONTROL_FLAGS: FlagSpec = {
  ...BUS_FLAGS,
  db: { type: 'string' },
  reason: { type: 'string' },
  by: { type: 'string' },
  from: { type: 'string' },
  timeout: { type: 'string' },
  json: { type: 'boolean' },
};

export const ITEM_CONTROL_USAGE = `       switchboard items cancel ID --db PATH|URL [--bus URL] [--reason TEXT] [--by NAME]
       switchboard items retry ID --db PATH|URL [--bus URL] [--from STAGE] [--by NAME]
                               [--timeout MS] [--json]`;

export const ITEM_CONTROL_HELP = `  cancel  cancels a work item that has not ended, with every child item
          under it, through the Coordinator that leads (a message on the
          bus's control role $controls); who (--by) and why (--reason) are
          audited. An item that already ended is left as it is (exit 0,
          saying so).
  retry   runs a failed work item again: a NEW item on the same workflow
          version, input and budget, linked to the failed one (attribute
          switchboard.retry-of), from the workflow's start or from --from
          STAGE; the failed item stays failed, its history untouched. One
          retry per item: retry the new item if it fails in turn. Prints
          the new item's id once the Coordinator made it.`;

export const ITEM_CONTROL_OPTIONS = `  --bus URL      cancel, retry: the work bus when it is Redis (default: the
                 embedded bus in the --db file)
  --reason TEXT  cancel: why (1-2000 characters; audited)
  --by NAME      cancel, retry: who (1-128 characters; default: the user
                 name of this process)
  --from STAGE   retry: the stage to start from (default: the start stage)
  --timeout MS   retry: how long to wait for the new item (default 30000)`;

interface ControlFlags {
  sub: 'cancel' | 'retry';
  id: string;
  db: string;
  bus: ReturnType<typeof parseBusChoice>;
  reason: string | undefined;
  by: string;
  from: string | undefined;
  timeoutMs: number;
  json: boolean;
}

export function parseControlFlags(argv: string[]): ControlFlags {
  const args = parseCommandArgs(argv, ITEM_CONTROL_FLAGS, 2);
  const [sub, id] = args.positionals as ['cancel' | 'retry', string | undefined];
  if (id === undefined) throw new CliUsageError(`${sub} needs a work item id: switchboard items ${sub} ID --db PATH`);
  const db = databaseFileFlag(args);
  if (db === undefined) throw new CliUsageError("--db PATH|URL is required: the Coordinator's database");
  const reason = stringFlag(args, 'reason');
  const from = stringFlag(args, 'from');
  if (sub === 'retry' && reason !== undefined) throw new CliUsageError('--reason is for cancel');
  if (sub === 'cancel' && from !== undefined) throw new CliUsageError('--from is for retry');
  if (reason !== undefined && (reason.length === 0 || reason.length > 2000)) {
    throw new CliUsageError('--reason is 1 to 2000 characters');
  }
  const by = stringFlag(args, 'by') ?? process.env.USER ?? 'operator';
  if (by.length === 0 || by.length > 128) throw new CliUsageError('--by is 1 to 128 characters');
  return {
    sub,
    id,
    db,
    bus: stringFlag(args, 'bus') === undefined ? { kind: 'sqlite', path: db } : parseBusChoice(args, db),
    reason,
    by,
    from,
    timeoutMs: msFlag(stringFlag(args, 'timeout'), 'timeout', 30_000, 1, 86_400_000),
    json: booleanFlag(args, 'json'),
  };
}

/** `items cancel|retry`: checks the item, sends the control message, says what it did. */
export async function runItemControl(flags: ControlFlags): Promise<number> {
  const say = (message: string) => process.stderr.write(`switchboard items ${flags.sub}: ${message}\n`);
  const print = (text: string, json: Record<string, unknown>) =>
    process.stdout.write(flags.json ? `${JSON.stringify(json)}\n` : `${text}\n`);
  let reader: CoordinatorReader | undefined;
  let bus: WorkQueue | undefined;
  try {
    if (flags.bus.kind === 'sqlite' && flags.db.startsWith('postgres')) {
      say('a Coordinator on PostgreSQL takes its control messages on Redis: give --bus redis://HOST:PORT');
      return 2;
    }
    reader = await openCoordinatorReader(flags.db, `items ${flags.sub}`);
    const item = await reader.readItem(flags.id);
    const stages = item === undefined ? undefined : await reader.stagesOf(item.workflow);
    const verdict =
      flags.sub === 'cancel' ? cancelVerdict(flags.id, item) : retryVerdict(flags.id, item, flags.from, stages);
    if (verdict.kind === 'refuse') {
      say(`${verdict.message}; nothing was sent`);
      return 1;
    }
    if (verdict.kind === 'nothing' || verdict.kind === 'wait') {
      print(verdict.message, { itemId: flags.id, sent: false, message: verdict.message });
      return 0;
    }
    bus = await openBus(flags.bus);
    if (flags.sub === 'cancel') {
      const { duplicate } = await submitControl(bus, {
        type: 'switchboard.cancel',
        itemId: flags.id,
        by: flags.by,
        ...(flags.reason === undefined ? {} : { reason: flags.reason }),
      });
      print(`cancel of ${flags.id} sent${duplicate ? ' (duplicate)' : ''}`, {
        itemId: flags.id,
        sent: true,
        duplicate,
      });
      return 0;
    }
    const requestId = retryRequestId(flags.id);
    const prior = await reader.findByRequest(requestId);
    if (prior !== undefined) {
      print(`work item ${flags.id} was retried already as ${prior.id} (${prior.state}): retry that one`, {
        itemId: flags.id,
        retry: prior.id,
        sent: false,
      });
      return 0;
    }
    await submitControl(bus, {
      type: 'switchboard.retry',
      itemId: flags.id,
      by: flags.by,
      ...(flags.from === undefined ? {} : { from: flags.from }),
    });
    const found = reader;
    const outcome = await awaitRequest(
      () => found.findByRequest(requestId),
      bus,
      CONTROLS_ROLE,
      `${requestId}:${flags.from ?? ''}`,
      Date.now() + flags.timeoutMs,
    );
    if (outcome.kind === 'refused') {
      say(`the Coordinator refused the retry of ${flags.id}: ${outcome.message}`);
      return 1;
    }
    if (outcome.kind === 'timeout') {
      say(
        `the retry of ${flags.id} is on the bus, but no Coordinator has made its item within ${flags.timeoutMs} ms: is switchboard coordinator running on ${found.where}?`,
      );
      return 1;
    }
    print(
      `work item ${flags.id} retried as ${outcome.item.id}${flags.from === undefined ? '' : ` from stage ${flags.from}`}`,
      {
        itemId: flags.id,
        retry: outcome.item.id,
        sent: true,
      },
    );
    return 0;
  } catch (error) {
    say((error as Error).message);
    return 1;
  } finally {
    await bus?.close().catch(() => {});
    await reader?.close().catch(() => {});
  }
}
