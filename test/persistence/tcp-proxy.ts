import { type Server, type Socket, createConnection, createServer } from 'node:net';

/**
 * A TCP proxy the test controls, between a client and a server on
 * 127.0.0.1: `cut()` stops all traffic both ways while every socket stays
 * open (as a network partition does: nothing arrives, nothing fails), new
 * connections are accepted but not forwarded; `heal()` lets it flow again
 * (what was sent meanwhile arrives then); `drop()` resets every connection.
 */
export class TcpProxy {
  readonly #server: Server;
  readonly #pairs = new Set<{ client: Socket; upstream: Socket | undefined; held: Buffer[] }>();
  #cut = false;
  port = 0;

  private constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {
    this.#server = createServer((client) => this.#accept(client));
  }

  static async start(targetHost: string, targetPort: number): Promise<TcpProxy> {
    const proxy = new TcpProxy(targetHost, targetPort);
    await new Promise<void>((resolve) => proxy.#server.listen(0, '127.0.0.1', resolve));
    const address = proxy.#server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    proxy.port = address.port;
    return proxy;
  }

  /** Whether traffic is cut. */
  get isCut(): boolean {
    return this.#cut;
  }

  /** Open connections through the proxy. */
  get connections(): number {
    return this.#pairs.size;
  }

  #accept(client: Socket): void {
    const pair: { client: Socket; upstream: Socket | undefined; held: Buffer[] } = {
      client,
      upstream: undefined,
      held: [],
    };
    this.#pairs.add(pair);
    const close = () => {
      this.#pairs.delete(pair);
      client.destroy();
      pair.upstream?.destroy();
    };
    client.on('error', close);
    client.on('close', close);
    // Until the upstream exists (or while cut), what the client sends waits here.
    client.on('data', (chunk: Buffer) => {
      if (pair.upstream === undefined || this.#cut) pair.held.push(chunk);
      else pair.upstream.write(chunk);
    });
    if (this.#cut) client.pause();
    else this.#connectUpstream(pair, close);
  }

  #connectUpstream(pair: { client: Socket; upstream: Socket | undefined; held: Buffer[] }, close: () => void): void {
    const upstream = createConnection({ host: this.targetHost, port: this.targetPort });
    pair.upstream = upstream;
    upstream.on('error', close);
    upstream.on('close', close);
    upstream.on('data', (chunk: Buffer) => pair.client.write(chunk));
    upstream.on('connect', () => this.#flush(pair));
  }

  #flush(pair: { client: Socket; upstream: Socket | undefined; held: Buffer[] }): void {
    if (this.#cut || pair.upstream === undefined) return;
    for (const chunk of pair.held.splice(0)) pair.upstream.write(chunk);
  }

  /** Stops all traffic both ways; sockets stay open. */
  cut(): void {
    this.#cut = true;
    for (const pair of this.#pairs) {
      pair.client.pause();
      pair.upstream?.pause();
    }
  }

  /** Lets traffic flow again. */
  heal(): void {
    this.#cut = false;
    for (const pair of this.#pairs) {
      const close = () => {
        this.#pairs.delete(pair);
        pair.client.destroy();
        pair.upstream?.destroy();
      };
      if (pair.upstream === undefined) this.#connectUpstream(pair, close);
      pair.client.resume();
      pair.upstream?.resume();
      this.#flush(pair);
    }
  }

  /** Resets every connection through the proxy. */
  drop(): void {
    for (const pair of this.#pairs) {
      pair.client.destroy();
      pair.upstream?.destroy();
    }
    this.#pairs.clear();
  }

  async close(): Promise<void> {
    this.drop();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
