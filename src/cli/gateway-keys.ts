import {
  GatewayError,
  GatewayKeyNameSchema,
  addKey,
  defaultKeysFile,
  readKeys,
  revokeKey,
} from '../gateway/gateway-keys.js';
import {
  CliUsageError,
  booleanFlag,
  databaseFileFlag,
  parseCommandArgs,
  reportUsageError,
  stringFlag,
} from './command-args.js';
import { AgentNameSchema } from '../protocol/agent.js';
import { formatEpoch, renderTable } from './table.js';

export const GATEWAY_KEYS_USAGE = `Usage: switchboard gateway keys add NAME --agents NAME[,NAME...] (--db PATH | --keys FILE)
       switchboard gateway keys list (--db PATH | --keys FILE) [--json]
       switchboard gateway keys revoke NAME (--db PATH | --keys FILE)

The gateway's client keys. add mints a bearer key (32 random bytes) for
NAME, scoped to the agents of --agents, prints it once and keeps only its
SHA-256 in the keys file (PATH.gateway-keys.json beside the broker's
--db, or --keys FILE). A running gateway reads the file again when it
changes: a key added or revoked counts from the next request. The key's
clients act on the broker as the agent gateway-NAME. list shows the names,
their agents, when each was added and whether it is revoked; never a key.

Options:
  --agents LIST  add: the agents the key may reach, comma-separated
  --db PATH      the broker's SQLite file (the keys file is beside it)
  --keys FILE    the keys file itself
  --json         list: one JSON object {keys: [{name, agents, createdAt, revokedAt}]}
  -h, --help     show this help

Exit status: 0 on success; 1 when the name already holds a live key (add),
is unknown or already revoked (revoke), or the file cannot be read or
written; 2 for a usage error.`;

/** `--agents A,B` into checked agent names. */
export function parseAgentList(value: string | undefined): string[] {
  if (value === undefined) throw new CliUsageError('--agents NAME[,NAME...] is required: the agents to serve');
  const names = value.split(',').map((n) => n.trim());
  for (const name of names) {
    const parsed = AgentNameSchema.safeParse(name);
    if (!parsed.success)
      throw new CliUsageError(`--agents: bad agent name '${name}': ${parsed.error.issues[0]?.message}`);
  }
  return [...new Set(names)];
}

const FLAGS = {
  agents: { type: 'string' },
  db: { type: 'string' },
  keys: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** `switchboard gateway keys ...`: add, list, revoke. */
export async function runGatewayKeys(argv: string[]): Promise<number> {
  let action: 'add' | 'list' | 'revoke';
  let name = '';
  let agents: string[] = [];
  let file: string;
  let json: boolean;
  try {
    const args = parseCommandArgs(argv, FLAGS, 2);
    if (booleanFlag(args, 'help')) {
      process.stdout.write(`${GATEWAY_KEYS_USAGE}\n`);
      return 0;
    }
    const [verb, who] = args.positionals;
    if (verb !== 'add' && verb !== 'list' && verb !== 'revoke') {
      throw new CliUsageError(`gateway keys takes add NAME, list or revoke NAME (got '${verb ?? ''}')`);
    }
    action = verb;
    if (action === 'list') {
      if (who !== undefined) throw new CliUsageError(`gateway keys list takes no name (got '${who}')`);
    } else {
      if (who === undefined) throw new CliUsageError(`gateway keys ${action} needs a NAME`);
      const parsed = GatewayKeyNameSchema.safeParse(who);
      if (!parsed.success) throw new CliUsageError(`bad NAME '${who}': ${parsed.error.issues[0]?.message}`);
      name = parsed.data;
    }
    if (action === 'add') agents = parseAgentList(stringFlag(args, 'agents'));
    else if (stringFlag(args, 'agents') !== undefined) throw new CliUsageError('--agents goes with add only');
    json = booleanFlag(args, 'json');
    if (json && action !== 'list') throw new CliUsageError('--json goes with list only');
    const db = databaseFileFlag(args);
    const keys = stringFlag(args, 'keys');
    if ((db === undefined) === (keys === undefined)) {
      throw new CliUsageError('give one of --db PATH (the keys file beside it) or --keys FILE');
    }
    file = keys ?? defaultKeysFile(db as string);
  } catch (error) {
    if (error instanceof CliUsageError) return reportUsageError('gateway keys', error, GATEWAY_KEYS_USAGE);
    throw error;
  }
  try {
    if (action === 'add') {
      const key = addKey(file, name, agents);
      process.stdout.write(
        `${key}\n(the key of "${name}", for ${agents.join(', ')}: send it as Authorization: Bearer KEY; it is shown only now)\n`,
      );
    } else if (action === 'revoke') {
      revokeKey(file, name);
      process.stdout.write(`revoked the key "${name}"\n`);
    } else {
      const rows = readKeys(file);
      if (json) {
        const keys = rows.map((r) => ({
          name: r.name,
          agents: r.agents,
          createdAt: r.createdAt,
          revokedAt: r.revokedAt ?? null,
        }));
        process.stdout.write(`${JSON.stringify({ keys })}\n`);
      } else {
        const table = renderTable(
          [{ header: 'NAME' }, { header: 'AGENTS' }, { header: 'ADDED' }, { header: 'REVOKED' }],
          rows.map((r) => [
            r.name,
            r.agents.join(','),
            formatEpoch(r.createdAt),
            r.revokedAt === undefined ? '-' : formatEpoch(r.revokedAt),
          ]),
        );
        process.stdout.write(`${table.join('\n')}\n`);
      }
    }
    return 0;
  } catch (error) {
    if (!(error instanceof GatewayError)) throw error;
    process.stderr.write(`switchboard gateway keys: ${error.message}\n`);
    return 1;
  }
}
