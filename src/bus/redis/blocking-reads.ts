import type { RedisClient } from '../../persistence/kernel/redis/node-redis.js';
import { REDIS_GROUP } from './keys.js';
import { type ReadEntry, readEntries } from './stream-entries.js';

/** A wait of `ms` that an abort of `signal` ends early; it never rejects. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal?.addEventListener('abort', done, { once: true });
  });
}

interface BlockingConnection {
  client: RedisClient;
  /** `CLIENT ID` of the current socket (changes on reconnect), for `CLIENT UNBLOCK`. */
  id: number | undefined;
}

/** What the blocking reads take from their queue. */
export interface BlockingReadsOwner {
  /** Blocking connections at most; more waiters poll. */
  readonly maxConnections: number;
  /** A new client of the queue's, named for `kind`, not yet connected. */
  newClient(kind: string): RedisClient;
  /** Connects a client, or fails (the client destroyed). */
  open(client: RedisClient): Promise<void>;
  /** The command connection, through which `CLIENT UNBLOCK` ends a wait (none before the queue connects). */
  command(): RedisClient | undefined;
  /** Told of a consumer whose blocking read failed: its next lease must re-read its pending entries (id 0). */
  readFailed(consumer: string): void;
}

/**
 * The waits of a queue's consumers in `XREADGROUP ... BLOCK`, each on a
 * connection of its own (never the command connection, which a blocked
 * read would hold): a pool of at most `maxConnections`, made on first need
 * and kept idle between waits.
 */
export class BlockingReads {
  readonly #owner: BlockingReadsOwner;
  readonly #idle: BlockingConnection[] = [];
  readonly #busy = new Set<BlockingConnection>();
  #count = 0;
  #closed = false;

  constructor(owner: BlockingReadsOwner) {
    this.#owner = owner;
  }

  #acquire(): BlockingConnection | undefined {
    const conn = this.#idle.pop();
    if (conn !== undefined) return conn;
    if (this.#count >= this.#owner.maxConnections) return undefined;
    this.#count++;
    const client = this.#owner.newClient('block');
    const created: BlockingConnection = { client, id: undefined };
    client.on('ready', () => {
      created.id = undefined;
      client.clientId().then(
        (id) => {
          created.id = Number(id);
        },
        () => undefined,
      );
    });
    return created;
  }

  /**
   * Waits on `stream` for `consumer` and returns the entries read: they are
   * pending for `consumer` until the lease script takes them. A failed read
   * (the connection dropped) returns nothing and tells the owner
   * (`readFailed`): the consumer's next lease re-reads its pending entries
   * with id 0. With every connection busy, it polls: a short sleep, nothing read.
   */
  async read(
    stream: string,
    consumer: string,
    count: number,
    blockMs: number,
    signal: AbortSignal | undefined,
  ): Promise<ReadEntry[]> {
    const conn = this.#acquire();
    if (conn === undefined) {
      await sleep(Math.min(blockMs, 20), signal);
      return [];
    }
    if (!conn.client.isOpen) {
      try {
        await this.#owner.open(conn.client);
      } catch {
        this.#count--;
        await sleep(Math.min(blockMs, 50), signal);
        return [];
      }
      if (this.#closed) {
        conn.client.destroy();
        return [];
      }
    }
    this.#busy.add(conn);
    const onAbort = () => {
      this.#unblock(conn);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      if (signal?.aborted || this.#closed) return [];
      const reply = await conn.client.sendCommand([
        'XREADGROUP',
        'GROUP',
        REDIS_GROUP,
        consumer,
        'COUNT',
        String(count),
        'BLOCK',
        String(Math.max(1, Math.round(blockMs))),
        'STREAMS',
        stream,
        '>',
      ]);
      return readEntries(reply);
    } catch (error) {
      if (!this.#closed) {
        this.#owner.readFailed(consumer);
        if (!String((error as Error)?.message).startsWith('NOGROUP')) await sleep(20, signal);
      }
      return [];
    } finally {
      signal?.removeEventListener('abort', onAbort);
      this.#busy.delete(conn);
      if (this.#closed) conn.client.destroy();
      else this.#idle.push(conn);
    }
  }

  #unblock(conn: BlockingConnection): void {
    const command = this.#owner.command();
    if (conn.id === undefined || command?.isReady !== true) return;
    command.sendCommand(['CLIENT', 'UNBLOCK', String(conn.id)]).catch(() => undefined);
  }

  /** Ends the waits in progress (their connections destroyed) and quits the idle connections. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const conn of this.#busy) conn.client.destroy();
    for (const conn of this.#idle.splice(0)) {
      if (conn.client.isOpen) await conn.client.close().catch(() => undefined);
    }
  }
}
