/**
 * The embedded side of `npm run bench:gateway`: one process that opens the
 * broker on a SQLite file (`createBroker`), serves its agent `worker-0` over
 * HTTP with the gateway (`startGatewayServer` over an in-process client) and
 * runs that agent in process too, on the broker's own face
 * (bench/gateway-bench-agent.ts), as a runtime that embeds switchboard,
 * runs its agents beside the broker and serves them to A2A clients would.
 * argv: DB KEYS (the keys file, with a key scoped to worker-0). Prints
 * `{"url":"http://127.0.0.1:PORT"}` once it listens; a line `prune` on stdin
 * prunes the ended tasks and prints `{"pruned":{...}}`; end of stdin stops it.
 */
import { createInterface } from 'node:readline';
import { createBroker } from '../dist/actors/broker/broker.js';
import { KeyRing } from '../dist/gateway/gateway-keys.js';
import { startGatewayServer } from '../dist/gateway/gateway-server.js';
import { createLogger } from '../dist/log/logger.js';
import { connectInProcess } from '../dist/transport/in-process.js';
import { startBenchAgent } from './gateway-bench-agent.js';

const [db = '', keysFile = ''] = process.argv.slice(2);
const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);

async function main() {
  const logger = createLogger({ level: 'warn' });
  const broker = createBroker({ path: db, logger });
  const agent = await startBenchAgent(broker);
  const gateway = await connectInProcess(broker, { logger });
  const server = await startGatewayServer({
    client: gateway.client,
    keys: new KeyRing(keysFile),
    agents: ['worker-0'],
    host: '127.0.0.1',
    port: 0,
    rate: 100_000,
    logger,
  });
  print({ url: server.url });
  for await (const line of createInterface({ input: process.stdin })) {
    if (line.trim() !== 'prune') continue;
    const result = await broker.pruneTasks({ endedBefore: new Date(Date.now() + 1000).toISOString() });
    print({ pruned: result });
  }
  await server.stop();
  await gateway.client.close();
  agent.stop();
  await broker.close();
}

main().catch((error: unknown) => {
  process.stderr.write(`bench gateway embedded side failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
