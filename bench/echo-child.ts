/**
 * The reference of the stdio benches: a bare NDJSON echo child process that
 * answers every request with its params and does nothing else, driven by the
 * same client code (`RpcConnection`) as `switchboard serve`. Its round trip is
 * the floor of any call through a child's pipes on this machine.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { RpcConnection } from '../src/transport/rpc-connection.js';

const ECHO_SOURCE = `
let rest = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  rest += chunk;
  const lines = rest.split('\\n');
  rest = lines.pop();
  let out = '';
  for (const line of lines) {
    if (line === '') continue;
    const request = JSON.parse(line);
    out += JSON.stringify({ jsonrpc: '2.0', id: request.id, result: request.params }) + '\\n';
  }
  if (out !== '') process.stdout.write(out);
});
process.stdin.on('end', () => process.exit(0));
`;

/** Params the size of a typical broker call (a token and an id). */
export const ECHO_PARAMS = { token: 'x'.repeat(43), id: 'y'.repeat(36) };

export interface EchoChild {
  child: ChildProcess;
  connection: RpcConnection;
  /** Ends its stdin and waits for it to exit. */
  close(): Promise<void>;
}

export function spawnEchoChild(): EchoChild {
  const child = spawn(process.execPath, ['-e', ECHO_SOURCE], { stdio: ['pipe', 'pipe', 'inherit'] });
  if (!child.stdout || !child.stdin) throw new Error('the echo child has no pipes');
  const connection = new RpcConnection({ readable: child.stdout, writable: child.stdin, onNotification: () => {} });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return {
    child,
    connection,
    async close() {
      await connection.end();
      await exited;
    },
  };
}

/** Sequential round trips per second: each call waits for the answer of the one before. */
export async function sequentialRoundTrips(
  connection: RpcConnection,
  method: string,
  params: unknown,
  calls: number,
): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < calls; i++) await connection.call(method, params);
  return calls / ((performance.now() - started) / 1000);
}
