import { chmodSync, lstatSync, mkdirSync, statSync, unlinkSync } from 'node:fs';
import { type Server, type Socket, connect as netConnect, createServer } from 'node:net';
import { dirname } from 'node:path';
import type { BrokerApi } from '../actors/broker/api.js';
import { type Logger, silentLogger } from '../log/logger.js';
import { ERROR_CODES, type ErrorCodeOf, SwitchboardError } from '../protocol/switchboard-error.js';
import { BrokerSession } from './broker-session.js';

/** How long `close()` waits for a connection to take its last answers before cutting it. */
const CLOSE_GRACE_MS = 2000;

/** The codes of `SocketError`. */
export const SOCKET_ERROR_CODES = ERROR_CODES.SocketError;

/**
 * `serve --listen` cannot serve the socket: its path is unsafe
 * (`SOCKET_UNSAFE`: a directory others can write or another user owns, or
 * something other than a socket at the path) or a live process answers on
 * it (`SOCKET_IN_USE`). `details.path` names it, `details.reason` says why.
 */
export class SocketError extends SwitchboardError {
  /** The error's code: a string a caller can branch on (listed in `ERROR_CODES`). */
  declare readonly code: ErrorCodeOf<'SocketError'>;

  constructor(code: ErrorCodeOf<'SocketError'>, message: string, details: Record<string, unknown>) {
    super(code, message, { details });
  }
}

/** Options of `listenOnSocket`. */
export interface SocketServerOptions {
  broker: BrokerApi;
  /** The socket's path (its directory must be writable by this user only). */
  path: string;
  logger?: Logger;
  /** Bytes of one line per connection (default 32 MiB). */
  maxLineBytes?: number;
  /** Characters of output one connection holds back before its events wait in the log (default 1 MiB). */
  outputHighWaterMark?: number;
  /**
   * Called once when no connection has been open for this long (from the
   * start, or since the last one closed); a new connection rearms it.
   * While `busy` says so (work the process carries on by itself, such as a
   * remote agent's task), the period starts again instead. Absent: never.
   */
  idle?: { ms: number; onIdle: () => void; busy?: () => boolean };
}

/**
 * Checks that a socket may be created at `path`: its directory exists (or is
 * created, mode 0700), belongs to this user and is writable by nobody else;
 * whatever is at the path is a socket nobody answers on (a stale one, which
 * is removed). Throws `SocketError` otherwise.
 */
export async function prepareSocketPath(path: string): Promise<void> {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const info = statSync(dir);
  const uid = process.getuid?.();
  if (uid !== undefined && info.uid !== uid) {
    throw new SocketError(
      'SOCKET_UNSAFE',
      `${dir} belongs to another user (uid ${info.uid}): listen in a directory of yours`,
      {
        path,
        reason: 'directory-not-owned',
      },
    );
  }
  if ((info.mode & 0o022) !== 0) {
    throw new SocketError(
      'SOCKET_UNSAFE',
      `${dir} is writable by others (mode ${(info.mode & 0o777).toString(8)}): listen in a directory only you can write (chmod go-w, or use the default socket path)`,
      { path, reason: 'directory-writable-by-others' },
    );
  }
  let existing: ReturnType<typeof lstatSync> | undefined;
  try {
    existing = lstatSync(path);
  } catch {
    return;
  }
  if (!existing.isSocket()) {
    throw new SocketError('SOCKET_UNSAFE', `${path} exists and is not a socket: remove it or pick another path`, {
      path,
      reason: 'not-a-socket',
    });
  }
  if (await answers(path)) {
    throw new SocketError(
      'SOCKET_IN_USE',
      `a process already listens on ${path}: connect to it, or pick another path`,
      {
        path,
        reason: 'in-use',
      },
    );
  }
  // A socket left by a process that died: nobody listens on it.
  unlinkSync(path);
}

function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = netConnect(path);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
}

/**
 * The broker served on a local (Unix domain) socket: any number of
 * connections at once, each its own `BrokerSession` (the same JSON-RPC 2.0
 * NDJSON protocol as stdio) with its own back-pressure, and its agents
 * connection-scoped: when a connection closes, however it closes, the
 * registrations made through it end (tasks kept). The socket is mode 0600.
 */
export class BrokerSocketServer {
  /** Open connections: each session and its socket. */
  private readonly sessions = new Map<BrokerSession, Socket>();
  private readonly logger: Logger;
  private idleTimer: NodeJS.Timeout | undefined;
  private closing: Promise<void> | undefined;
  private accepted = 0;

  private constructor(
    private readonly server: Server,
    readonly path: string,
    private readonly options: SocketServerOptions,
  ) {
    this.logger = options.logger ?? silentLogger();
    server.on('connection', (socket) => this.accept(socket));
    this.armIdle();
  }

  /** Checks the path (`prepareSocketPath`), listens (mode 0600) and serves. */
  static async listen(options: SocketServerOptions): Promise<BrokerSocketServer> {
    await prepareSocketPath(options.path);
    // Half-open: a peer that ends its side still gets the answers to what it sent.
    const server = createServer({ allowHalfOpen: true });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      // The socket is created by listen(): with this umask it is never reachable by others, even for an instant.
      const umask = process.umask(0o177);
      try {
        server.listen(options.path, () => {
          server.off('error', reject);
          resolve();
        });
      } finally {
        process.umask(umask);
      }
    });
    chmodSync(options.path, 0o600);
    server.on('error', (error) => options.logger?.error({ err: { message: error.message } }, 'socket server error'));
    return new BrokerSocketServer(server, options.path, options);
  }

  /** Connections open now. */
  get connectionCount(): number {
    return this.sessions.size;
  }

  /** Connections accepted since the start. */
  get acceptedCount(): number {
    return this.accepted;
  }

  /** Stops accepting, closes every connection (answering the calls in flight), removes the socket. */
  close(): Promise<void> {
    if (this.closing === undefined) {
      clearTimeout(this.idleTimer);
      this.closing = (async () => {
        const stopped = new Promise<void>((resolve) => this.server.close(() => resolve()));
        await Promise.all(
          [...this.sessions].map(async ([session, socket]) => {
            // A peer that never reads would hold the flush forever: after a grace its connection is cut.
            const cut = setTimeout(() => socket.destroy(), CLOSE_GRACE_MS);
            await session.close();
            clearTimeout(cut);
          }),
        );
        await stopped;
      })();
    }
    return this.closing;
  }

  private accept(socket: Socket): void {
    if (this.closing !== undefined) {
      socket.destroy();
      return;
    }
    this.accepted++;
    clearTimeout(this.idleTimer);
    // A peer that resets the connection is a closed connection, not a crash.
    socket.on('error', (error) => this.logger.debug({ err: { message: error.message } }, 'connection error'));
    const session = new BrokerSession({
      broker: this.options.broker,
      input: socket,
      output: socket,
      logger: this.logger,
      maxLineBytes: this.options.maxLineBytes,
      outputHighWaterMark: this.options.outputHighWaterMark,
      connectionScoped: true,
    });
    this.sessions.set(session, socket);
    this.logger.debug({ connections: this.sessions.size }, 'connection opened');
    // Whatever ends the connection (end, reset, a killed peer), the session ends.
    socket.once('close', () => void session.close());
    void session.closed.then(() => {
      socket.end();
      this.sessions.delete(session);
      this.logger.debug({ connections: this.sessions.size }, 'connection closed');
      this.armIdle();
    });
  }

  private armIdle(): void {
    const idle = this.options.idle;
    if (idle === undefined || this.sessions.size > 0 || this.closing !== undefined) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (this.sessions.size > 0 || this.closing !== undefined) return;
      if (idle.busy?.() === true) {
        this.logger.debug('idle, but work is being carried: the idle period starts again');
        this.armIdle();
      } else idle.onIdle();
    }, idle.ms);
  }
}
