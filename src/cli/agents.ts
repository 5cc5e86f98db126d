import { resolve } from 'node:path';
import { LOG_LEVELS, createLogger } from '../log/logger.js';
import type { RemoteBridge } from '../remote/remote-bridge.js';
import { RemoteAgentError } from '../remote/remote-errors.js';
import { type SwitchboardClient, connect } from '../transport/client.js';
import { VERSION } from '../version.js';
import type { CliCommand } from './command.js';
import {
  CliUsageError,
  type ParsedArgs,
  booleanFlag,
  choiceFlag,
  databaseFileFlag,
  parseCommandArgs,
  reportUsageError,
  stringFlag,
} from './command-args.js';
import { stopSignal } from './stop-signal.js';
import { formatEpoch, renderTable } from './table.js';

export const AGENTS_USAGE = `Usage: switchboard agents add-remote URL --db PATH [--name NAME] [--token KEY] [--timeout SECONDS]
       switchboard agents remotes --db PATH [--json]
       switchboard agents remove-remote NAME --db PATH
       switchboard agents bridge --db PATH [--timeout SECONDS] [--reconnect SECONDS]
                                 [--poll SECONDS] [--log-level LEVEL]

Remote A2A v1.0 agents as agents of the broker. add-remote reads the agent
card at URL (the agent's base URL, its card at .well-known/agent-card.json
under it, or the card's own URL) and records the remote in PATH.remotes.json,
under the card's name or --name. The bridge makes each recorded remote a
local agent (context "remote", the card's description and skills) that
local agents discover and send to as to any other; each task sent to it is
carried to the remote over A2A v1.0 (streaming when its card says so, else
polling) and the remote's statuses, artifacts and final state are written
into the local task. The process that owns the broker (switchboard serve,
or the host's broker started for --db) runs the bridge by itself; bridge
runs it as a process of its own instead, for a serve started with
--no-remote-agents. Either picks up remotes added or removed while it runs,
and after a restart the tasks it was carrying (PATH.remote-tasks.db).
remotes lists them (never a key); remove-remote removes one (a running
bridge deregisters its agent: its open tasks fail).

Options:
  --db PATH            the broker's SQLite file (the remotes file is beside it)
  --name NAME          add-remote: the local agent's name (default: the card's)
  --token KEY          add-remote: a bearer key for the remote, sent as
                       Authorization: Bearer KEY (for example a key of
                       switchboard gateway keys add); kept in the remotes file,
                       readable by its owner only. No capability token of the
                       broker is ever sent to a remote
  --timeout SECONDS    how long a request to a remote waits for its answer to
                       start (default 10)
  --reconnect SECONDS  bridge: how long a remote that stopped answering
                       mid-task is tried again before the task fails (default 30)
  --poll SECONDS       bridge: how often a remote that does not stream is asked
                       for its task (default 1)
  --log-level LEVEL    bridge: ${LOG_LEVELS.join(', ')} (default: info)
  --json               remotes: one JSON object {remotes: [{name, url, streaming, addedAt}]}
  -h, --help           show this help

Exit status: 0 on success; 1 when the remote cannot be reached or has no
usable card (add-remote), the name is taken or unknown, the remotes file
cannot be read or written, or the bridge loses the broker; 2 for a usage error.
Docs: docs/remote-agents.md.`;

const FLAGS = {
  db: { type: 'string' },
  name: { type: 'string' },
  token: { type: 'string' },
  timeout: { type: 'string' },
  reconnect: { type: 'string' },
  poll: { type: 'string' },
  'log-level': { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

const VERBS = ['add-remote', 'remotes', 'remove-remote', 'bridge'] as const;
type Verb = (typeof VERBS)[number];

/** Which flags each verb takes (besides --db and --help). */
const VERB_FLAGS: Readonly<Record<Verb, readonly string[]>> = {
  'add-remote': ['name', 'token', 'timeout'],
  remotes: ['json'],
  'remove-remote': [],
  bridge: ['timeout', 'reconnect', 'poll', 'log-level'],
};

/** `--NAME SECONDS` in milliseconds: a number above 0, at most a day. */
function secondsFlag(args: ParsedArgs, name: string, fallbackMs: number): number {
  const value = stringFlag(args, name);
  if (value === undefined) return fallbackMs;
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds <= 0 || seconds > 86_400) {
    throw new CliUsageError(`--${name} takes a number of seconds above 0 (at most 86400), not '${value}'`);
  }
  return Math.round(seconds * 1000);
}

interface AgentsCall {
  verb: Verb;
  db: string;
  subject: string | undefined;
  args: ParsedArgs;
}

function parse(argv: string[]): AgentsCall | 'help' {
  const args = parseCommandArgs(argv, FLAGS, 2);
  if (booleanFlag(args, 'help')) return 'help';
  const [verb, subject] = args.positionals;
  if (!(VERBS as readonly string[]).includes(verb ?? '')) {
    throw new CliUsageError(`agents takes ${VERBS.join(', ')} (got '${verb ?? ''}')`);
  }
  const v = verb as Verb;
  for (const flag of Object.keys(FLAGS)) {
    if (flag === 'db' || flag === 'help' || args.values[flag] === undefined) continue;
    if (!VERB_FLAGS[v].includes(flag)) throw new CliUsageError(`--${flag} does not go with agents ${v}`);
  }
  if (v === 'add-remote' && subject === undefined) throw new CliUsageError('agents add-remote needs the remote URL');
  if (v === 'remove-remote' && subject === undefined) throw new CliUsageError('agents remove-remote needs a NAME');
  if ((v === 'remotes' || v === 'bridge') && subject !== undefined) {
    throw new CliUsageError(`agents ${v} takes no argument (got '${subject}')`);
  }
  if (v === 'add-remote') {
    let url: URL;
    try {
      url = new URL(subject as string);
    } catch {
      throw new CliUsageError(`'${subject}' is not a URL: give the remote agent's http(s) URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new CliUsageError(`'${subject}' is not an http(s) URL`);
    }
  }
  const db = databaseFileFlag(args);
  if (db === undefined) throw new CliUsageError('--db PATH is required: the broker whose remote agents these are');
  return { verb: v, db: resolve(db), subject, args };
}

async function runBridge(call: AgentsCall): Promise<number> {
  const timeoutMs = secondsFlag(call.args, 'timeout', 10_000);
  const reconnectMs = secondsFlag(call.args, 'reconnect', 30_000);
  const pollMs = secondsFlag(call.args, 'poll', 1_000);
  const level = choiceFlag(call.args, 'log-level', LOG_LEVELS, 'info');
  const logger = createLogger({ name: 'switchboard-remote-bridge', level });
  let client: SwitchboardClient;
  try {
    client = await connect({ db: call.db, client: { name: 'switchboard-remote-bridge', version: VERSION } });
  } catch (error) {
    process.stderr.write(`switchboard agents bridge: cannot join the broker: ${(error as Error).message}\n`);
    return 1;
  }
  const stop = stopSignal(logger, 'remote bridge stopping');
  let lost = false;
  const offDisconnect = client.onDisconnect((reason) => {
    lost = true;
    logger.error(
      { err: reason },
      'remote bridge: the broker went away; stopping (start the bridge again once it is back)',
    );
    process.kill(process.pid, 'SIGTERM');
  });
  let bridge: RemoteBridge | undefined;
  try {
    const { startRemoteBridge } = await import('../remote/remote-bridge.js');
    bridge = await startRemoteBridge({ db: call.db, client, logger, timeoutMs, reconnectMs, pollMs });
    process.stdout.write(
      `switchboard agents bridge on ${call.db}: ${bridge.agents().join(', ') || '(no remotes yet)'}\n`,
    );
    await stop.stopped;
    return lost ? 1 : 0;
  } finally {
    offDisconnect();
    stop.dispose();
    await bridge?.stop().catch(() => {});
    await client.close().catch(() => {});
  }
}

async function runAgents(argv: string[]): Promise<number> {
  let call: AgentsCall | 'help';
  let timeoutMs = 10_000;
  try {
    call = parse(argv);
    if (call !== 'help' && call.verb === 'add-remote') timeoutMs = secondsFlag(call.args, 'timeout', 10_000);
  } catch (error) {
    if (error instanceof CliUsageError) return reportUsageError('agents', error, AGENTS_USAGE);
    throw error;
  }
  if (call === 'help') {
    process.stdout.write(`${AGENTS_USAGE}\n`);
    return 0;
  }
  try {
    if (call.verb === 'bridge') return await runBridge(call);
    // Loaded when used: the A2A SDK's client is not loaded by every switchboard command.
    const { addRemoteAgent, listRemoteAgents, removeRemoteAgent } = await import('../remote/remote-agents.js');
    if (call.verb === 'add-remote') {
      const token = stringFlag(call.args, 'token');
      const name = stringFlag(call.args, 'name');
      const row = await addRemoteAgent({
        db: call.db,
        url: call.subject as string,
        timeoutMs,
        ...(token === undefined ? {} : { token }),
        ...(name === undefined ? {} : { name }),
      });
      process.stdout.write(
        `added the remote agent "${row.name}" (${row.card.capabilities.streaming === true ? 'streaming' : 'polled'}) at ${row.url}\n` +
          `(a running switchboard agents bridge --db ${call.db} picks it up; local agents send to "${row.name}")\n`,
      );
    } else if (call.verb === 'remove-remote') {
      const row = removeRemoteAgent(call.db, call.subject as string);
      process.stdout.write(`removed the remote agent "${row.name}" (${row.url})\n`);
    } else {
      const rows = listRemoteAgents(call.db);
      if (booleanFlag(call.args, 'json')) {
        const remotes = rows.map((r) => ({
          name: r.name,
          url: r.url,
          streaming: r.card.capabilities.streaming === true,
          addedAt: r.addedAt,
        }));
        process.stdout.write(`${JSON.stringify({ remotes })}\n`);
      } else {
        const table = renderTable(
          [{ header: 'NAME' }, { header: 'URL' }, { header: 'MODE' }, { header: 'KEY' }, { header: 'ADDED' }],
          rows.map((r) => [
            r.name,
            r.url,
            r.card.capabilities.streaming === true ? 'stream' : 'poll',
            r.token === undefined ? '-' : 'bearer',
            formatEpoch(r.addedAt),
          ]),
        );
        process.stdout.write(`${table.join('\n')}\n`);
      }
    }
    return 0;
  } catch (error) {
    if (!(error instanceof RemoteAgentError)) throw error;
    process.stderr.write(`switchboard agents ${call.verb}: ${error.message}\n`);
    return 1;
  }
}

export const agentsCommand: CliCommand = {
  name: 'agents',
  summary: 'remote A2A v1.0 agents as agents of the broker: add-remote, remotes, remove-remote, bridge',
  usage: AGENTS_USAGE,
  run: runAgents,
};
