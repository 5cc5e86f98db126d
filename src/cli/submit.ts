import { randomUUID } from 'node:crypto';
import { ITEMS_ROLE, checkRequestId, submitItems } from '../actors/coordinator/intake.js';
import type { ItemRecord } from '../workflow/records.js';
import { type CoordinatorReader, openCoordinatorReader } from './coordinator-reader.js';
import { awaitRequest, awaitSettled } from './item-wait.js';
import { outputLines } from './items.js';
import type { WorkQueue } from '../bus/work-queue.js';
import { CoordinatorError } from '../actors/coordinator/types.js';
import { BUS_FLAGS, BUS_HELP, openBus, parseBusChoice } from './bus-option.js';
import type { CliCommand } from './command.js';
import {
  CliUsageError,
  type FlagSpec,
  booleanFlag,
  countFlag,
  parseCommandArgs,
  reportUsageError,
  stringFlag,
  databaseFileFlag,
  msFlag,
} from './command-args.js';

export const SUBMIT_USAGE = `Usage: switchboard submit --workflow ID --input TEXT [--id KEY] [--count N]
                          [--bus URL | --db PATH] [--db PATH|URL]
                          [--wait] [--timeout MS] [--json]

Asks a Coordinator process (switchboard coordinator) to create work items:
publishes one request per item on the bus's control role $items. The
request id is the idempotency key: submitting the same id again creates no
second item, whether the first request is still queued or already done.
The Coordinator creates the items as it reads them (see
docs/coordinator.md, "Control plane").

Before sending, it reads the Coordinator's database (--db: the SQLite file,
which with the default bus also holds the bus, or with --bus redis://...
the Coordinator's SQLite file or postgres:// URL; without it nothing is
checked): a --db that is not a Coordinator's database is refused (it is
never created), and so is a workflow the Coordinator does not serve. After
sending one request, it waits (at most --timeout) for the Coordinator to
create the item and prints its id, or prints why the Coordinator refused it.

Options:
  --workflow ID           the workflow the items follow (its latest version)
  --input TEXT            the request text (1 to 16000 characters)
  --id KEY                the request id (default: a random one); with
                          --count N the ids are KEY-1 ... KEY-N. An item is
                          found by it: switchboard items list --json shows
                          it as the attribute "switchboard.request"
  --count N               how many items, 1-100000 (default 1)
${BUS_HELP}
  --db PATH|URL           the Coordinator's database: with the default bus its
                          SQLite file (required); with --bus, optional, for
                          the checks, the item id and --wait
  --wait                  block until the item ends and print its output
                          (one item; needs --db)
  --timeout MS            how long to wait for the item's id, and with --wait
                          for its end (default 30000; 1-86400000)
  --json                  print {"requests":[{"requestId","duplicate",
                          "itemId"?}]}; with --wait also "item" (the record)
  -h, --help              show this help

Prints each request id, then its item id when known, then "duplicate" when
the request was already submitted; with --wait, then the item's output.
Exit status: 0 when every request is on the bus (with --wait: when the
item completed); 1 when the database or the bus cannot be read, the
workflow is unknown, the Coordinator refused the request, the item failed
or was canceled, or --wait timed out; 2 for a usage error.`;

/** Every flag the command accepts (each is documented in its --help; a test checks it). */
export const SUBMIT_FLAGS: FlagSpec = {
  workflow: { type: 'string' },
  input: { type: 'string' },
  id: { type: 'string' },
  count: { type: 'string' },
  ...BUS_FLAGS,
  db: { type: 'string' },
  wait: { type: 'boolean' },
  timeout: { type: 'string' },
  json: { type: 'boolean' },
};

interface SubmitFlags {
  bus: ReturnType<typeof parseBusChoice>;
  db: string | undefined;
  workflow: string;
  input: string;
  ids: string[];
  wait: boolean;
  timeoutMs: number;
  json: boolean;
}

function parseFlags(argv: string[]): SubmitFlags {
  const args = parseCommandArgs(argv, SUBMIT_FLAGS, 0);
  const workflow = stringFlag(args, 'workflow');
  if (workflow === undefined) throw new CliUsageError('--workflow ID is required');
  const input = stringFlag(args, 'input');
  if (input === undefined) throw new CliUsageError('--input TEXT is required');
  if (input.length > 16_000) throw new CliUsageError('--input is at most 16000 characters');
  const count = countFlag(args, 'count', 1, 100_000);
  const base = stringFlag(args, 'id') ?? randomUUID();
  const ids = count === 1 ? [base] : Array.from({ length: count }, (_, i) => `${base}-${i + 1}`);
  try {
    for (const id of ids) checkRequestId(id);
  } catch (error) {
    if (error instanceof CoordinatorError) throw new CliUsageError(`--id: ${error.message}`);
    throw error;
  }
  const db = databaseFileFlag(args);
  const wait = booleanFlag(args, 'wait');
  if (wait && count > 1) throw new CliUsageError('--wait waits for one item: leave out --count');
  if (wait && db === undefined) throw new CliUsageError("--wait reads the item: give the Coordinator's --db");
  return {
    bus: parseBusChoice(args, db),
    db,
    workflow,
    input,
    ids,
    wait,
    timeoutMs: msFlag(stringFlag(args, 'timeout'), 'timeout', 30_000, 1, 86_400_000),
    json: booleanFlag(args, 'json'),
  };
}

async function runSubmit(argv: string[]): Promise<number> {
  let parsed: SubmitFlags;
  try {
    parsed = parseFlags(argv);
  } catch (error) {
    if (error instanceof CliUsageError) return reportUsageError('submit', error, SUBMIT_USAGE);
    throw error;
  }
  const say = (message: string) => process.stderr.write(`switchboard submit: ${message}\n`);
  let bus: WorkQueue | undefined;
  let reader: CoordinatorReader | undefined;
  try {
    if (parsed.db !== undefined) {
      reader = await openCoordinatorReader(parsed.db, 'submit');
      const served = await reader.workflowIds();
      // No workflow kept: a Coordinator from before they were kept; it refuses an unknown one itself.
      if (served.length > 0 && !served.includes(parsed.workflow)) {
        say(
          `no workflow '${parsed.workflow}' on the Coordinator of ${reader.where}: it serves ${served.join(', ')} (a workflow of your own is given with switchboard coordinator --workflows DIR); nothing was sent`,
        );
        return 1;
      }
    }
    bus = await openBus(parsed.bus);
    const results: { requestId: string; duplicate: boolean; itemId?: string }[] = [];
    for (let i = 0; i < parsed.ids.length; i += 500) {
      const chunk = parsed.ids.slice(i, i + 500);
      results.push(
        ...(await submitItems(
          bus,
          chunk.map((requestId) => ({ requestId, workflow: parsed.workflow, input: parsed.input })),
        )),
      );
    }
    let code = 0;
    let settled: ItemRecord | undefined;
    const deadline = Date.now() + parsed.timeoutMs;
    if (reader !== undefined && results.length === 1) {
      const r = results[0]!;
      const found = reader;
      const outcome = await awaitRequest(
        () => found.findByRequest(r.requestId),
        bus,
        ITEMS_ROLE,
        `item:${r.requestId}`,
        deadline,
      );
      if (outcome.kind === 'item') r.itemId = outcome.item.id;
      else if (outcome.kind === 'refused') {
        say(`the Coordinator refused request ${r.requestId}: ${outcome.message}`);
        return 1;
      } else {
        say(
          `request ${r.requestId} is on the bus, but no Coordinator has made its item within ${parsed.timeoutMs} ms: is switchboard coordinator running on ${found.where}? (find it later with switchboard items list --json, attribute switchboard.request)`,
        );
        if (parsed.wait) code = 1;
      }
      if (parsed.wait && r.itemId !== undefined) {
        settled = await awaitSettled(found, r.itemId, deadline);
        if (settled === undefined) {
          say(
            `work item ${r.itemId} has not ended within ${parsed.timeoutMs} ms: it runs on (see switchboard items show ${r.itemId}; wait longer with --timeout, or cancel it with switchboard items cancel ${r.itemId})`,
          );
          code = 1;
        } else if (settled.state !== 'completed') code = 1;
      }
    }
    if (parsed.json) {
      process.stdout.write(
        `${JSON.stringify({ requests: results, ...(settled === undefined ? {} : { item: settled }) })}\n`,
      );
    } else {
      for (const r of results) {
        process.stdout.write(
          `${r.requestId}${r.itemId === undefined ? '' : ` ${r.itemId}`}${r.duplicate ? ' duplicate' : ''}\n`,
        );
      }
      if (settled !== undefined) {
        process.stdout.write(`work item ${settled.id} ${settled.state}\n${outputLines(settled.output).join('\n')}\n`);
      }
    }
    return code;
  } catch (error) {
    say((error as Error).message);
    return 1;
  } finally {
    await bus?.close().catch(() => {});
    await reader?.close().catch(() => {});
  }
}
export const submitCommand: CliCommand = {
  name: 'submit',
  summary: 'ask a Coordinator process to create work items (over the bus)',
  usage: SUBMIT_USAGE,
  run: runSubmit,
};
