import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline/promises';
import { type ApprovalMode, DEMO_APPROVER, DEMO_WORKFLOWS, type DemoWorkflow, runDemo } from '../demo/run-demo.js';
import type { WorkHandler } from '../actors/worker/handler.js';
import { chooseDemoProvider, noKeyLine, providerLine } from '../demo/model-choice.js';
import { modelDemoHandlers } from '../demo/model-roles.js';
import { LOG_LEVELS, type LogLevel, createLogger } from '../log/logger.js';
import type { CliCommand } from './command.js';
import {
  INSPECT_USAGE,
  type InspectTarget,
  type RunningInspection,
  startInspection,
  takeInspectOption,
} from './inspect-option.js';
import {
  CliUsageError,
  booleanFlag,
  choiceFlag,
  parseCommandArgs,
  reportUsageError,
  databaseFileFlag,
} from './command-args.js';

export const DEMO_USAGE = `Usage: switchboard demo [--workflow dev-sdlc|review-fanout] [--db PATH] [--approve|--deny]
                        [--models] [--json] [--log-level LEVEL] [--inspect[=[HOST:]PORT]]

Runs the dev SDLC workflow (architect, coding, testing, devops, with an
approval gate before devops) end to end on the embedded default: one SQLite
file holds the A2A broker, the work bus, the Context Engine, the hash-chained
audit and the Coordinator's tables; the role workers run in this process as
pools (architect scales to zero, the others stay warm). Two work items run on
the same definition: coding suspends to ask the architect a question and
resumes, testing fails once and sends the item back to coding, and the gate
waits for the release manager.

The role agents are DEMO scripts: deterministic handlers with made-up token
counts and prices per model (demo-large, demo-medium, demo-small). Real LLM
agents plug into the same handler interface.

Progress is printed as it happens, then a table of each item's hops (cost,
tokens, time) with what the item ended with (its output), and the audit
verification.

With --workflow review-fanout it runs the second shipped workflow: the
architect splits each request into tasks, coding runs one child work item per
task (three at a time), security and QA review in parallel as child items,
QA's first verdict sends the work to a fix and back to review, and the
release waits for the release manager. Each child's budget is carved from
its parent's, and its cost rolls up into it.

Options:
  --workflow NAME    dev-sdlc (default) or review-fanout
  --db PATH          the SQLite file (default: a new file in a temporary
                     folder, printed at the start)
  --approve          approve the gate without asking
  --deny             deny the gate without asking (the items end failed)
                     On a terminal without either flag, the demo asks y/n;
                     without a terminal it approves and says so.
  --models           run the dev SDLC roles as model agents (Vercel AI SDK)
                     on the first provider whose API key is set:
                     OPENAI_API_KEY (@ai-sdk/openai, gpt-4o-mini),
                     ANTHROPIC_API_KEY (@ai-sdk/anthropic, claude-3-5-haiku),
                     GOOGLE_GENERATIVE_AI_API_KEY (@ai-sdk/google,
                     gemini-2.5-flash); install \`ai\` and that package.
                     Without a key it says so on stderr and runs the
                     scripted agents. Keys are never printed.
  --json             print only a summary on stdout:
                     {"items":[{"id","state","hops","costUsd","tokens","elapsedMs"}],
                      "audit":{"ok","entries"}}
  --log-level LEVEL  ${LOG_LEVELS.join(', ')} (default: error), on stderr
${INSPECT_USAGE}
  -h, --help         show this help

Exit status: 0 when every item ended as the approval asked (completed when
approved; failed with APPROVAL_DENIED when denied) and the audit verified;
1 otherwise; 2 for a usage error.`;

interface DemoFlags {
  workflow: DemoWorkflow;
  db: string | undefined;
  approval: 'approve' | 'deny' | undefined;
  json: boolean;
  models: boolean;
  logLevel: LogLevel;
  inspect: InspectTarget | null;
}

function parseFlags(all: string[]): DemoFlags {
  const { argv, inspect } = takeInspectOption(all);
  const args = parseCommandArgs(
    argv,
    {
      db: { type: 'string' },
      workflow: { type: 'string' },
      approve: { type: 'boolean' },
      deny: { type: 'boolean' },
      json: { type: 'boolean' },
      models: { type: 'boolean' },
      'log-level': { type: 'string' },
    },
    0,
  );
  const approve = booleanFlag(args, 'approve');
  const deny = booleanFlag(args, 'deny');
  if (approve && deny) throw new CliUsageError('give --approve or --deny, not both');
  return {
    workflow: choiceFlag(args, 'workflow', DEMO_WORKFLOWS, 'dev-sdlc'),
    db: databaseFileFlag(args),
    approval: approve ? 'approve' : deny ? 'deny' : undefined,
    json: booleanFlag(args, 'json'),
    models: booleanFlag(args, 'models'),
    logLevel: choiceFlag(args, 'log-level', LOG_LEVELS, 'error'),
    inspect,
  };
}

function prompter(output: NodeJS.WritableStream): ApprovalMode {
  return async (item) => {
    const rl = createInterface({ input: process.stdin, output });
    try {
      for (;;) {
        const answer = (
          await rl.question(
            `\n  ${item.label} (${item.title}) waits at the devops gate. Approve as ${DEMO_APPROVER}? [y/n] `,
          )
        )
          .trim()
          .toLowerCase();
        if (answer === 'y' || answer === 'yes') return true;
        if (answer === 'n' || answer === 'no') return false;
      }
    } finally {
      rl.close();
    }
  };
}

export const demoCommand: CliCommand = {
  name: 'demo',
  summary: 'run the dev SDLC workflow end to end (two work items, scripted agents)',
  usage: DEMO_USAGE,
  async run(argv) {
    let flags: DemoFlags;
    try {
      flags = parseFlags(argv);
    } catch (error) {
      if (error instanceof CliUsageError) return reportUsageError('demo', error, DEMO_USAGE);
      throw error;
    }
    const out = (line: string) => {
      if (!flags.json) process.stdout.write(`${line}\n`);
    };
    const note = (line: string) => (flags.json ? process.stderr.write(`${line}\n`) : out(line));
    const path = resolve(flags.db ?? join(mkdtempSync(join(tmpdir(), 'switchboard-demo-')), 'demo.db'));
    let approval: ApprovalMode;
    if (flags.approval !== undefined) {
      approval = flags.approval;
    } else if (process.stdin.isTTY) {
      approval = prompter(flags.json ? process.stderr : process.stdout);
    } else {
      approval = 'approve';
      note(`No terminal and neither --approve nor --deny: the gate will be approved as ${DEMO_APPROVER}.`);
    }
    let handlers: Record<string, WorkHandler> | undefined;
    if (flags.models) {
      if (flags.workflow !== 'dev-sdlc') {
        return reportUsageError('demo', new CliUsageError('--models runs the dev-sdlc workflow only'), DEMO_USAGE);
      }
      const provider = chooseDemoProvider(process.env);
      if (provider === null) {
        process.stderr.write(`${noKeyLine()}\n`);
      } else {
        try {
          handlers = await modelDemoHandlers(provider);
        } catch (error) {
          process.stderr.write(`switchboard demo --models: ${(error as Error)?.message ?? String(error)}\n`);
          return 1;
        }
        out(
          `switchboard demo: the dev SDLC workflow, two work items, model agents (each call is billed by the provider)`,
        );
        out(providerLine(provider));
      }
    }
    if (handlers === undefined) {
      out('switchboard demo: the dev SDLC workflow, two work items, scripted DEMO agents (no LLM is called)');
    }
    out(`Database: ${path}${flags.db === undefined ? ' (a new file in a temporary folder)' : ''}`);
    out('');
    const logger = createLogger({ level: flags.logLevel, name: 'switchboard-demo' });
    let inspection: RunningInspection | null = null;
    if (flags.inspect !== null) {
      try {
        inspection = await startInspection(flags.inspect, { logger });
      } catch (error) {
        process.stderr.write(`switchboard demo: ${(error as Error).message}\n`);
        return 1;
      }
    }
    let summary: Awaited<ReturnType<typeof runDemo>>;
    try {
      summary = await runDemo({
        path,
        workflow: flags.workflow,
        approval,
        onLine: out,
        logger,
        inspect: inspection?.inspect,
        handlers,
      });
    } catch (error) {
      process.stderr.write(`switchboard demo: ${(error as Error)?.message ?? String(error)}\n`);
      return 1;
    } finally {
      // The inspector's server would keep the process alive.
      await inspection?.stop();
    }
    if (flags.json) {
      process.stdout.write(`${JSON.stringify({ items: summary.items, audit: summary.audit })}\n`);
    } else {
      for (const line of summary.report) out(line);
      out('');
      out(`The database is kept: ${path}`);
      out(`Read the items and their outputs back: switchboard items list --db ${path}`);
    }
    return summary.asExpected && summary.audit.ok ? 0 : 1;
  },
};
