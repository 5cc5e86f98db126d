import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import {
  DEFAULT_GATEWAY_HOST,
  DEFAULT_GATEWAY_PORT,
  DEFAULT_GATEWAY_RATE,
  type GatewayServer,
  startGatewayServer,
} from '../gateway/gateway-server.js';
import { GatewayError, KeyRing, defaultKeysFile } from '../gateway/gateway-keys.js';
import { pushFileOf } from '../gateway/gateway-push-store.js';
import { createLogger } from '../log/logger.js';
import { MAX_LINE_BYTES } from '../protocol/bounds.js';
import { type SwitchboardClient, connect } from '../transport/client.js';
import { VERSION } from '../version.js';
import type { CliCommand } from './command.js';
import {
  CliUsageError,
  type FlagSpec,
  booleanFlag,
  databaseFileFlag,
  parseCommandArgs,
  reportUsageError,
  stringFlag,
} from './command-args.js';
import { parseListen } from './console.js';
import { parseAgentList, runGatewayKeys } from './gateway-keys.js';
import { stopSignal } from './stop-signal.js';

export const GATEWAY_USAGE = `Usage: switchboard gateway --agents NAME[,NAME...] (--db PATH | --socket PATH [--keys FILE])
                          [--listen HOST:PORT] [--tls-cert FILE --tls-key FILE | --insecure] [--rate N]
                          [--max-body BYTES]
       switchboard gateway keys add NAME --agents NAME[,NAME...]|list|revoke NAME (--db PATH | --keys FILE)

An HTTP gateway that serves chosen agents of a broker to A2A v1.0 clients.
Each agent NAME gets its base URL /agents/NAME/: its agent card at
/agents/NAME/.well-known/agent-card.json (no key needed), and the JSON-RPC
binding at POST /agents/NAME/ (SendMessage, SendStreamingMessage and
SubscribeToTask over server-sent events, GetTask, ListTasks, CancelTask,
the push notification config methods), and the HTTP+JSON binding of the
same methods under it (message:send, message:stream, tasks, tasks/ID,
tasks/ID:cancel, tasks/ID:subscribe, tasks/ID/pushNotificationConfigs).
Push configs are kept beside the keys file (PATH.gateway-push.json); the
gateway POSTs each update of such a task to its webhook, from its host.
Every request but a card's needs Authorization: Bearer KEY, a key of
gateway keys add scoped to the agent. The gateway registers one broker
agent per key, gateway-NAME (context "gateway"): it sends the tasks the key's
clients create, which are ordinary tasks of the broker (switchboard tasks
lists them), and the key reaches its own tasks only.

It joins the broker of --db as the other commands do (the host's broker of
the file, started in the background when none runs), or the broker
listening on --socket. It listens on loopback unless told: any other
address needs --tls-cert and --tls-key (HTTPS), or --insecure (plain HTTP,
logged as a warning). See docs/gateway.md.

Options:
  --agents LIST      the broker agents to serve, by name, comma-separated (required)
  --db PATH          the broker's SQLite file (its keys file is PATH.gateway-keys.json)
  --socket PATH      the Unix socket of a running switchboard serve --listen unix:PATH
  --keys FILE        the keys file (required with --socket; default beside --db)
  --listen HOST:PORT where to listen (default ${DEFAULT_GATEWAY_HOST}:${DEFAULT_GATEWAY_PORT}; port 0 picks a free one)
  --tls-cert FILE    PEM certificate: serve HTTPS (with --tls-key)
  --tls-key FILE     PEM private key of --tls-cert
  --insecure         plain HTTP on an address other than loopback
  --rate N           requests a second each key may send, bursts of twice it (default ${DEFAULT_GATEWAY_RATE})
  --max-body BYTES   the largest request body (default ${MAX_LINE_BYTES}, the broker's line bound);
                     larger ones are answered 413
  -h, --help         show this help

Exit status: 0 after SIGINT or SIGTERM; 1 when the broker cannot be joined,
the keys file or the push configs file cannot be read, or the address
cannot be listened on (or the broker goes away); 2 for a usage error.`;

export const GATEWAY_FLAGS: FlagSpec = {
  agents: { type: 'string' },
  db: { type: 'string' },
  socket: { type: 'string' },
  keys: { type: 'string' },
  listen: { type: 'string' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  insecure: { type: 'boolean' },
  rate: { type: 'string' },
  'max-body': { type: 'string' },
};

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));
}

interface GatewayFlags {
  agents: string[];
  broker: { db: string } | { socket: string };
  keys: string;
  listen: { host: string; port: number };
  tls: { cert: string; key: string } | undefined;
  insecure: boolean;
  rate: number;
  maxBodyBytes: number;
}

function parseGatewayFlags(argv: string[]): GatewayFlags {
  const args = parseCommandArgs(argv, GATEWAY_FLAGS, 0);
  const agents = parseAgentList(stringFlag(args, 'agents'));
  const db = databaseFileFlag(args);
  const socket = stringFlag(args, 'socket');
  if ((db === undefined) === (socket === undefined)) {
    throw new CliUsageError('give one of --db PATH (the broker of a file) or --socket PATH (a running serve)');
  }
  const keys = stringFlag(args, 'keys') ?? (db === undefined ? undefined : defaultKeysFile(db));
  if (keys === undefined) throw new CliUsageError('--socket needs --keys FILE: the file gateway keys add wrote');
  const listenValue = stringFlag(args, 'listen');
  const listen =
    listenValue === undefined ? { host: DEFAULT_GATEWAY_HOST, port: DEFAULT_GATEWAY_PORT } : parseListen(listenValue);
  const cert = stringFlag(args, 'tls-cert');
  const key = stringFlag(args, 'tls-key');
  if ((cert === undefined) !== (key === undefined)) throw new CliUsageError('--tls-cert and --tls-key go together');
  const insecure = booleanFlag(args, 'insecure');
  if (insecure && cert !== undefined) throw new CliUsageError('--insecure is plain HTTP: it takes no --tls-cert');
  if (!isLoopback(listen.host) && cert === undefined && !insecure) {
    throw new CliUsageError(
      `--listen ${listen.host} is not loopback: give --tls-cert FILE --tls-key FILE to serve HTTPS, or --insecure to serve plain HTTP there`,
    );
  }
  const rateValue = stringFlag(args, 'rate');
  const rate = rateValue === undefined ? DEFAULT_GATEWAY_RATE : Number(rateValue);
  if (!Number.isFinite(rate) || rate <= 0 || rate > 100_000) {
    throw new CliUsageError(`--rate takes a number of requests a second above 0 (got '${rateValue}')`);
  }
  const maxBodyValue = stringFlag(args, 'max-body');
  const maxBodyBytes = maxBodyValue === undefined ? MAX_LINE_BYTES : Number(maxBodyValue);
  if (!Number.isInteger(maxBodyBytes) || maxBodyBytes < 1024 || maxBodyBytes > MAX_LINE_BYTES) {
    throw new CliUsageError(
      `--max-body takes a whole number of bytes from 1024 to ${MAX_LINE_BYTES} (got '${maxBodyValue}')`,
    );
  }
  return {
    agents,
    broker: db === undefined ? { socket: socket as string } : { db },
    keys,
    listen,
    tls: cert === undefined || key === undefined ? undefined : { cert, key },
    insecure,
    rate,
    maxBodyBytes,
  };
}

async function runGateway(argv: string[]): Promise<number> {
  if (argv[0] === 'keys') return runGatewayKeys(argv.slice(1));
  let flags: GatewayFlags;
  try {
    flags = parseGatewayFlags(argv);
  } catch (error) {
    if (error instanceof CliUsageError) return reportUsageError('gateway', error, GATEWAY_USAGE);
    throw error;
  }
  const logger = createLogger({ name: 'switchboard-gateway' });
  let keys: KeyRing;
  let tls: { cert: Buffer; key: Buffer } | undefined;
  try {
    keys = new KeyRing(flags.keys);
    if (flags.tls) tls = { cert: readFileSync(flags.tls.cert), key: readFileSync(flags.tls.key) };
  } catch (error) {
    process.stderr.write(`switchboard gateway: ${(error as Error).message}\n`);
    return 1;
  }
  let client: SwitchboardClient;
  try {
    client = await connect({ ...flags.broker, client: { name: 'switchboard-gateway', version: VERSION } });
  } catch (error) {
    process.stderr.write(`switchboard gateway: cannot join the broker: ${(error as Error).message}\n`);
    return 1;
  }
  const stop = stopSignal(logger, 'gateway stopping');
  let lost = false;
  const offDisconnect = client.onDisconnect((reason) => {
    lost = true;
    logger.error({ err: reason }, 'gateway: the broker went away; stopping (start the gateway again once it is back)');
    process.kill(process.pid, 'SIGTERM');
  });
  let server: GatewayServer | undefined;
  try {
    try {
      server = await startGatewayServer({
        client,
        keys,
        agents: flags.agents,
        host: flags.listen.host,
        port: flags.listen.port,
        ...(tls === undefined ? {} : { tls }),
        rate: flags.rate,
        maxBodyBytes: flags.maxBodyBytes,
        pushFile: pushFileOf(flags.keys),
        logger,
      });
    } catch (error) {
      if (!(error instanceof GatewayError)) throw error;
      process.stderr.write(`switchboard gateway: ${error.message}\n`);
      return 1;
    }
    if (flags.insecure) {
      logger.warn({ host: flags.listen.host }, 'gateway: plain HTTP on an address other than loopback (--insecure)');
    }
    logger.info({ url: server.url, agents: flags.agents, keys: flags.keys }, 'gateway listening');
    process.stdout.write(
      `switchboard gateway on ${server.url}\n${flags.agents.map((a) => `  ${server?.url}/agents/${encodeURIComponent(a)}/`).join('\n')}\n`,
    );
    await stop.stopped;
    return lost ? 1 : 0;
  } finally {
    offDisconnect();
    stop.dispose();
    await server?.stop();
    await client.close().catch(() => {});
  }
}

export const gatewayCommand: CliCommand = {
  name: 'gateway',
  summary: 'serve chosen agents to A2A v1.0 clients over HTTP (JSON-RPC, SSE), with bearer keys',
  usage: GATEWAY_USAGE,
  run: runGateway,
};
