import { randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { submitApproval } from '../actors/coordinator/intake.js';
import { BusError, type WorkQueue } from '../bus/work-queue.js';
import { localAuthorities, localRequestProblem } from '../inspect/local-origin.js';
import type { Logger } from '../log/logger.js';
import { silentLogger } from '../log/logger.js';
import { PostgresError } from '../persistence/kernel/postgres.js';
import { submitControl } from '../actors/coordinator/item-controls.js';
import {
  ConsoleApprovalSchema,
  ConsoleCancelSchema,
  ConsoleItemsQuerySchema,
  ConsoleReplaySchema,
} from '../protocol/console-api.js';
import { type ErrorCodeOf, SwitchboardError } from '../protocol/switchboard-error.js';
import { TASK_STATES } from '../protocol/task.js';
import { type ConsoleData, machineGraphs } from './console-data.js';
import { type ConsoleUserTable, consoleTokenHash } from './console-users.js';

export const DEFAULT_CONSOLE_HOST = '127.0.0.1';
export const DEFAULT_CONSOLE_PORT = 8090;
/** Largest request body the API reads (a decision or a replay is a few hundred bytes). */
export const MAX_CONSOLE_BODY_BYTES = 64 * 1024;
/** How often the console looks for commits by other processes, to push a change to open pages. */
export const CONSOLE_POLL_MS = 250;

/** The console could not start (`CONSOLE_LISTEN_FAILED`: `details.host`, `port`, `reason`). */
export class ConsoleError extends SwitchboardError {
  /** The error's code: a string a caller can branch on (listed in `ERROR_CODES`). */
  declare readonly code: ErrorCodeOf<'ConsoleError'>;
  constructor(host: string, port: number, reason: string) {
    super(
      'CONSOLE_LISTEN_FAILED',
      `the console cannot listen on ${host}:${port}: ${reason}; pick another port with --listen HOST:PORT (port 0 picks a free one)`,
      { details: { host, port, reason } },
    );
  }
}

export interface ConsoleServerOptions {
  data: ConsoleData;
  /** The bus approvals and replays go through; without one the console is read-only. */
  bus?: WorkQueue;
  host?: string;
  port?: number;
  /**
   * The shared access token (default: 32 random bytes, hex): whoever holds it
   * acts anonymously, naming the approver in the request (deprecated beside
   * `users`).
   */
  token?: string;
  /** The console's users (`switchboard console users add`): a user's token acts as that user. */
  users?: ConsoleUserTable;
  logger?: Logger;
  pollMs?: number;
}

export interface ConsoleServer {
  readonly host: string;
  readonly port: number;
  /** The page's address, without the token. */
  readonly url: string;
  /** The page's address with the token: what the operator opens (printed once at start). */
  readonly tokenUrl: string;
  readonly token: string;
  stop(): Promise<void>;
}

type Asset = { type: string; body: Buffer };

const ASSET_FILES: Record<string, string> = {
  '/': 'index.html',
  '/assets/console.js': 'console.js',
  '/assets/dom.js': 'dom.js',
  '/assets/item-view.js': 'item-view.js',
  '/assets/console.css': 'console.css',
};
const ASSET_TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
};

/** Every asset ships in the package, next to this module: nothing is fetched from elsewhere. */
function loadAssets(): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const [path, file] of Object.entries(ASSET_FILES)) {
    const body = readFileSync(new URL(`./assets/${file}`, import.meta.url));
    assets.set(path, { type: ASSET_TYPES[file.split('.').pop() ?? ''] ?? 'application/octet-stream', body });
  }
  return assets;
}

const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cache-control': 'no-store',
};

/** A refusal of the HTTP API: a status and a message that says what to do. */
class HttpProblem extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

/**
 * The operations console: a local web app over one switchboard database
 * (and its bus), bound to 127.0.0.1 unless told otherwise. Reads are open to
 * pages it serves itself (Host and Origin are checked against the bound
 * address); a call that changes something needs the access token as
 * `Authorization: Bearer TOKEN`. Open pages hear of every commit to the file
 * through server-sent events (`GET /api/events`).
 */
export async function startConsoleServer(options: ConsoleServerOptions): Promise<ConsoleServer> {
  const host = options.host ?? DEFAULT_CONSOLE_HOST;
  const requestedPort = options.port ?? DEFAULT_CONSOLE_PORT;
  const token = options.token ?? randomBytes(32).toString('hex');
  const logger = options.logger ?? silentLogger();
  const data = options.data;
  const bus = options.bus;
  const assets = loadAssets();
  const streams = new Set<ServerResponse>();
  let authorities: ReadonlySet<string> = new Set();

  const api = new ConsoleApi(data, bus, token, logger, options.users);
  const http: Server = createServer((req, res) => {
    const problem = localRequestProblem({ host: req.headers.host, origin: req.headers.origin }, authorities);
    if (problem !== null) {
      sendJson(res, 403, { error: problem });
      return;
    }
    const url = new URL(req.url ?? '/', 'http://console.invalid');
    if (req.method === 'GET' && url.pathname === '/api/events') {
      openStream(res);
      return;
    }
    const asset = assets.get(url.pathname);
    if (asset !== undefined) {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        sendJson(res, 405, { error: `${req.method} is not allowed here: use GET` });
        return;
      }
      res.writeHead(200, { ...SECURITY_HEADERS, 'content-type': asset.type, 'content-length': asset.body.length });
      res.end(req.method === 'HEAD' ? undefined : asset.body);
      return;
    }
    api.handle(req, res, url).catch((error: unknown) => {
      logger.error({ err: { message: (error as Error).message } }, 'console request failed');
      if (!res.headersSent) sendJson(res, 500, { error: 'internal error: see the console process log' });
      else res.destroy();
    });
  });

  function openStream(res: ServerResponse): void {
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      'content-type': 'text/event-stream; charset=utf-8',
      connection: 'keep-alive',
    });
    res.write(`retry: 1000\nevent: change\ndata: ${JSON.stringify({ version: lastVersion })}\n\n`);
    streams.add(res);
    res.on('close', () => streams.delete(res));
  }

  let lastVersion = await data.version();
  let beats = 0;
  /** Whether the last poll could not read the store (logged once per outage, not once per poll). */
  let unreachable = false;
  let polling = false;
  /** Set by `stop`: a read still in flight then may fail as the store closes, which is no outage. */
  let stopped = false;
  const pollOnce = async (): Promise<void> => {
    let version: string;
    try {
      version = await data.version();
    } catch (error) {
      if (stopped) return;
      if (!unreachable) {
        logger.warn({ err: { message: (error as Error).message } }, 'console could not read the database');
        unreachable = true;
      }
      return;
    }
    if (unreachable) {
      logger.info('console reads the database again');
      unreachable = false;
      // The pages showed the outage: they read again now.
      lastVersion = '';
    }
    const beat = ++beats % Math.max(1, Math.round(15_000 / (options.pollMs ?? CONSOLE_POLL_MS))) === 0;
    if (version === lastVersion && !beat) return;
    const frame =
      version === lastVersion ? ': keep-alive\n\n' : `event: change\ndata: ${JSON.stringify({ version })}\n\n`;
    lastVersion = version;
    for (const stream of streams) stream.write(frame);
  };
  const poll = setInterval(() => {
    // A slow read (a store over the network) is not stacked: the next tick waits for it.
    if (polling) return;
    polling = true;
    void pollOnce().finally(() => {
      polling = false;
    });
  }, options.pollMs ?? CONSOLE_POLL_MS);
  poll.unref();
  api.onChange = () => {
    // An action of this console: tell the pages at once (the bus may live elsewhere than the file).
    for (const stream of streams) stream.write(`event: change\ndata: ${JSON.stringify({ version: lastVersion })}\n\n`);
  };

  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      clearInterval(poll);
      reject(new ConsoleError(host, requestedPort, error.code ?? error.message));
    };
    http.once('error', onError);
    http.listen(requestedPort, host, () => {
      http.off('error', onError);
      resolve();
    });
  });
  http.on('error', (error) => logger.error({ err: { message: error.message } }, 'console server error'));
  const port = (http.address() as AddressInfo).port;
  authorities = localAuthorities(host, port);
  const shownHost = host.includes(':') ? `[${host}]` : host;
  const url = `http://${shownHost}:${port}/`;
  return {
    host,
    port,
    url,
    tokenUrl: `${url}#token=${token}`,
    token,
    async stop() {
      clearInterval(poll);
      stopped = true;
      for (const stream of streams) stream.end();
      streams.clear();
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      });
    },
  };
}

/** The JSON API: reads for every view, and the actions (approve or deny, cancel an item, replay dead letters). */
class ConsoleApi {
  onChange: () => void = () => {};
  readonly #token: Buffer;

  constructor(
    private readonly data: ConsoleData,
    private readonly bus: WorkQueue | undefined,
    token: string,
    private readonly logger: Logger,
    private readonly users: ConsoleUserTable | undefined,
  ) {
    this.#token = Buffer.from(token);
  }

  async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    try {
      const body = await this.route(req, url);
      sendJson(res, 200, body);
    } catch (error) {
      if (error instanceof PostgresError && error.code !== 'PG_INVALID_URL') {
        // The store went away (or refused): this read fails, the console keeps serving and reads again next time.
        sendJson(res, 503, {
          error: `PostgreSQL does not answer this read: ${error.message}. The console keeps serving; reload once PostgreSQL is back.`,
          code: error.code,
        });
        return;
      }
      if (error instanceof BusError && error.code === 'BUS_BACKEND') {
        // The bus (Redis) went away: as for the store, this read fails and the next one tries again.
        sendJson(res, 503, {
          error: `the work bus does not answer this read: ${error.message}. The console keeps serving; reload once it is back.`,
          code: error.code,
        });
        return;
      }
      if (!(error instanceof HttpProblem)) throw error;
      sendJson(res, error.status, { error: error.message, ...(error.details ?? {}) });
    }
  }

  private async route(req: IncomingMessage, url: URL): Promise<unknown> {
    const path = url.pathname;
    const method = req.method ?? 'GET';
    if (!path.startsWith('/api/')) throw new HttpProblem(404, `no page at ${path}: open / for the console`);
    if (method === 'POST') return this.act(req, path);
    if (method === 'GET' && path === '/api/me') {
      // Who the page's token acts as: a user's name, or the shared token (anonymous, names its approver).
      const actor = await this.authorize(req);
      return actor.user === null ? { user: null, shared: true } : { user: actor.user, shared: false };
    }
    if (method !== 'GET') throw new HttpProblem(405, `${method} is not allowed: reads are GET, actions are POST`);
    const query = Object.fromEntries(url.searchParams);
    switch (path) {
      case '/api/overview':
        noQuery(query);
        return {
          ...(await this.data.overview()),
          waiting: await this.data.waiting(),
          coordinator: this.data.hasCoordinator,
          store: this.data.store,
          bus: this.bus?.backend ?? null,
          workflows: await this.data.workflows(),
        };
      case '/api/items': {
        const parsed = ConsoleItemsQuerySchema.safeParse(query);
        if (!parsed.success) throw badRequest('bad query for /api/items', parsed.error.issues);
        const filter = {
          ...(parsed.data.state === undefined ? {} : { state: parsed.data.state }),
          ...(parsed.data.workflow === undefined ? {} : { workflow: parsed.data.workflow }),
          ...(parsed.data.q === undefined ? {} : { search: parsed.data.q }),
          ...(parsed.data.limit === undefined ? {} : { limit: parsed.data.limit }),
          ...(parsed.data.offset === undefined ? {} : { offset: parsed.data.offset }),
        };
        return { items: await this.data.items(filter) };
      }
      case '/api/approvals':
        noQuery(query);
        return { items: await this.data.approvals(), canAct: this.bus !== undefined };
      case '/api/queues':
        noQuery(query);
        return { queues: await this.data.queues(), bus: this.bus?.backend ?? null };
      case '/api/dead-letters': {
        const role = query.role;
        if (role === undefined || role === '' || Object.keys(query).length > 1) {
          throw new HttpProblem(400, 'GET /api/dead-letters takes one query parameter: role (a queue role)');
        }
        if (this.bus === undefined) throw noBus();
        return { role, deadLetters: await this.data.deadLetters(role) };
      }
      case '/api/tasks': {
        const state = query.state;
        if (Object.keys(query).some((k) => k !== 'state')) throw new HttpProblem(400, '/api/tasks takes only ?state=');
        if (state !== undefined && !(TASK_STATES as readonly string[]).includes(state)) {
          throw new HttpProblem(400, `unknown task state ${JSON.stringify(state)}: one of ${TASK_STATES.join(', ')}`);
        }
        return {
          tasks: await this.data.tasks(state === undefined ? {} : { state }),
          agents: this.data.agents(),
          note: this.data.tasksNote,
        };
      }
      case '/api/machines':
        noQuery(query);
        return { machines: machineGraphs() };
      default: {
        const itemId = path.startsWith('/api/items/') ? decodeURIComponent(path.slice('/api/items/'.length)) : '';
        if (itemId !== '' && !itemId.includes('/')) {
          noQuery(query);
          const detail = await this.data.item(itemId);
          if (detail === undefined) throw new HttpProblem(404, `no work item ${itemId} in this database`);
          return detail;
        }
        throw new HttpProblem(404, `no API at ${path}: see docs/console.md for the API`);
      }
    }
  }

  private async act(req: IncomingMessage, path: string): Promise<unknown> {
    const actor = await this.authorize(req);
    if (!(req.headers['content-type'] ?? '').toLowerCase().startsWith('application/json')) {
      throw new HttpProblem(415, 'send the body as JSON with Content-Type: application/json');
    }
    const body = await readJson(req);
    if (this.bus === undefined) throw noBus();
    switch (path) {
      case '/api/approvals': {
        const parsed = ConsoleApprovalSchema.safeParse(body);
        if (!parsed.success) throw badRequest('bad approval', parsed.error.issues);
        if (actor.user !== null && parsed.data.approver !== undefined && parsed.data.approver !== actor.user) {
          throw new HttpProblem(
            403,
            `your token is ${actor.user}'s: a decision with it is ${actor.user}'s (leave approver out, or open the console with the token of ${parsed.data.approver})`,
          );
        }
        const approver = actor.user ?? parsed.data.approver;
        if (approver === undefined) {
          throw new HttpProblem(400, 'the shared console token names no one: give approver (or use a user token)');
        }
        const decision = { ...parsed.data, approver };
        if (decision.reason !== undefined && decision.decision !== 'deny') {
          throw new HttpProblem(400, 'a reason goes with a denial only');
        }
        const item = (await this.data.item(decision.itemId))?.item;
        if (item === undefined) throw new HttpProblem(404, `no work item ${decision.itemId} in this database`);
        if (item.state !== 'awaiting-approval' || item.approval === null) {
          throw new HttpProblem(409, `work item ${item.id} is ${item.state}, not waiting for an approval`);
        }
        const approvers = item.approval.approvers;
        if (approvers !== null && !approvers.includes(decision.approver)) {
          throw new HttpProblem(
            403,
            `${decision.approver} may not decide this gate: its approvers are ${approvers.join(', ')}`,
          );
        }
        const { duplicate } = await submitApproval(this.bus, decision);
        this.logger.info(
          { itemId: item.id, approver: decision.approver, decision: decision.decision, user: actor.user },
          'console sent an approval decision',
        );
        this.onChange();
        return { sent: true, duplicate };
      }
      case '/api/items/cancel': {
        const parsed = ConsoleCancelSchema.safeParse(body);
        if (!parsed.success) throw badRequest('bad cancel', parsed.error.issues);
        if (actor.user !== null && parsed.data.by !== undefined && parsed.data.by !== actor.user) {
          throw new HttpProblem(
            403,
            `your token is ${actor.user}'s: a cancel with it is ${actor.user}'s (leave by out, or open the console with the token of ${parsed.data.by})`,
          );
        }
        const by = actor.user ?? parsed.data.by;
        if (by === undefined)
          throw new HttpProblem(400, 'the shared console token names no one: give by (or use a user token)');
        const c = { ...parsed.data, by };
        const item = (await this.data.item(c.itemId))?.item;
        if (item === undefined) throw new HttpProblem(404, `no work item ${c.itemId} in this database`);
        if (item.state === 'completed' || item.state === 'failed' || item.state === 'canceled') {
          throw new HttpProblem(409, `work item ${item.id} already ended ${item.state}: nothing to cancel`);
        }
        const { duplicate } = await submitControl(this.bus, { type: 'switchboard.cancel', ...c });
        this.logger.info({ itemId: c.itemId, by: c.by, reason: c.reason }, 'console sent a cancel');
        this.onChange();
        return { sent: true, duplicate };
      }
      case '/api/dead-letters/replay': {
        const parsed = ConsoleReplaySchema.safeParse(body);
        if (!parsed.success) throw badRequest('bad replay', parsed.error.issues);
        const replayed = await this.bus.deadLetters.replay(
          parsed.data.role,
          parsed.data.ids === undefined ? {} : { ids: parsed.data.ids },
        );
        this.logger.info({ role: parsed.data.role, replayed, user: actor.user }, 'console replayed dead letters');
        this.onChange();
        return { replayed };
      }
      default:
        throw new HttpProblem(
          404,
          `no action at POST ${path}: the actions are /api/approvals, /api/items/cancel and /api/dead-letters/replay`,
        );
    }
  }

  /**
   * Who acts: a user whose token (hashed) is on record and not revoked, or
   * whoever holds the shared token (`user: null`). Anything else is a 401.
   */
  private async authorize(req: IncomingMessage): Promise<{ user: string | null }> {
    const header = req.headers.authorization ?? '';
    const text = header.startsWith('Bearer ') ? header.slice('Bearer '.length) : '';
    const given = Buffer.from(text);
    if (given.length === this.#token.length && timingSafeEqual(given, this.#token)) return { user: null };
    const user = text === '' || this.users === undefined ? undefined : await this.users.nameOf(consoleTokenHash(text));
    if (user === undefined) {
      throw new HttpProblem(
        401,
        'this action needs a console access token (your own from switchboard console users add NAME, or the one printed when the console started) as Authorization: Bearer TOKEN; a revoked token is refused',
      );
    }
    return { user };
  }
}

function noQuery(query: Record<string, string>): void {
  const keys = Object.keys(query);
  if (keys.length > 0) throw new HttpProblem(400, `unknown query parameter ${keys[0]}: this read takes none`);
}

function noBus(): HttpProblem {
  return new HttpProblem(409, 'this console has no bus: start it with --bus URL (or on the file of the SQLite bus)');
}

function badRequest(what: string, issues: readonly { path: PropertyKey[]; message: string }[]): HttpProblem {
  const first = issues[0];
  const where = first === undefined || first.path.length === 0 ? '' : ` at ${first.path.map(String).join('.')}`;
  return new HttpProblem(400, `${what}${where}: ${first?.message ?? 'invalid'}`, {
    issues: issues.map((i) => ({ path: i.path.map(String), message: i.message })),
  });
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_CONSOLE_BODY_BYTES) {
      throw new HttpProblem(413, `the body is over ${MAX_CONSOLE_BODY_BYTES} bytes: an action's body is a few fields`);
    }
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new HttpProblem(400, 'the body is not JSON: send one JSON object');
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}
