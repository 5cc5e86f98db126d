import { randomUUID } from 'node:crypto';
import { checkRequestId, submitItems } from '../actors/coordinator/intake.js';
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
} from './command-args.js';

export const SUBMIT_USAGE = `Usage: switchboard submit --workflow ID --input TEXT [--id KEY] [--count N]
                          [--bus URL | --db PATH] [--json]

Asks a Coordinator process (switchboard coordinator) to create work items:
publishes one request per item on the bus's control role $items. The
request id is the idempotency key: submitting the same id again creates no
second item, whether the first request is still queued or already done.
Returns once the requests are durably on the bus; the Coordinator creates
the items as it reads them (see docs/coordinator.md, "Control plane").

Options:
  --workflow ID           the workflow the items follow (its latest version)
  --input TEXT            the request text (1 to 16000 characters)
  --id KEY                the request id (default: a random one); with
                          --count N the ids are KEY-1 ... KEY-N
  --count N               how many items, 1-100000 (default 1)
${BUS_HELP}
  --db PATH               with the default bus: the Coordinator's SQLite file
  --json                  print {"requests":[{"requestId","duplicate"}]}
  -h, --help              show this help

Prints each request id (with "duplicate" when it was already submitted).
Exit status: 0 when every request is on the bus; 1 when the bus cannot be
reached; 2 for a usage error.`;

/** Every flag the command accepts (each is documented in its --help; a test checks it). */
export const SUBMIT_FLAGS: FlagSpec = {
  workflow: { type: 'string' },
  input: { type: 'string' },
  id: { type: 'string' },
  count: { type: 'string' },
  ...BUS_FLAGS,
  db: { type: 'string' },
  json: { type: 'boolean' },
};

async function runSubmit(argv: string[]): Promise<number> {
  let parsed: { bus: ReturnType<typeof parseBusChoice>; workflow: string; input: string; ids: string[]; json: boolean };
  try {
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
    parsed = {
      bus: parseBusChoice(args, databaseFileFlag(args)),
      workflow,
      input,
      ids,
      json: booleanFlag(args, 'json'),
    };
  } catch (error) {
    if (error instanceof CliUsageError) return reportUsageError('submit', error, SUBMIT_USAGE);
    throw error;
  }
  let bus: WorkQueue | undefined;
  try {
    bus = await openBus(parsed.bus);
    const results: { requestId: string; duplicate: boolean }[] = [];
    for (let i = 0; i < parsed.ids.length; i += 500) {
      const chunk = parsed.ids.slice(i, i + 500);
      results.push(
        ...(await submitItems(
          bus,
          chunk.map((requestId) => ({ requestId, workflow: parsed.workflow, input: parsed.input })),
        )),
      );
    }
    if (parsed.json) process.stdout.write(`${JSON.stringify({ requests: results })}\n`);
    else for (const r of results) process.stdout.write(`${r.requestId}${r.duplicate ? ' duplicate' : ''}\n`);
    return 0;
  } catch (error) {
    process.stderr.write(`switchboard submit: ${(error as Error).message}\n`);
    return 1;
  } finally {
    await bus?.close().catch(() => {});
  }
}

export const submitCommand: CliCommand = {
  name: 'submit',
  summary: 'ask a Coordinator process to create work items (over the bus)',
  usage: SUBMIT_USAGE,
  run: runSubmit,
};
