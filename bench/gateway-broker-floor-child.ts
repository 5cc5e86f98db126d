/**
 * The broker's floor in `npm run bench:gateway`: the embedded side without
 * its gateway. One process opens the broker on a SQLite file
 * (`createBroker`), runs its agent `worker-0` on the broker's own face
 * (bench/gateway-bench-agent.ts) as bench/gateway-embedded-child.ts does,
 * and answers the SDK client's SendMessage with a bare node:http server, as
 * bench/gateway-floor-server.mjs does: the body parsed with no check, its
 * message mapped with `messageSendFromV1`, one blocking `broker.send` from a
 * requester of its own, the task mapped back with `taskToV1`. No keys, no
 * rate limit, no request schema, no client; whatever fails is answered as
 * one JSON-RPC internal error with its message: not a server anyone should
 * run, a measure of what HTTP and the broker's own work cost together, so
 * that the bench can say how much of the embedded side's cost is its
 * gateway's and what the broker spends one at a time before any gateway.
 * Runs under the same loader as the embedded side (tsx), on the same build.
 * argv: DB. Prints `{"url":"http://127.0.0.1:PORT"}` once it listens; a line
 * `prune` on stdin prunes the ended tasks and prints `{"pruned":{...}}`; end
 * of stdin stops it.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { createBroker } from '../dist/actors/broker/broker.js';
import { createLogger } from '../dist/log/logger.js';
import type { V1Message } from '../dist/protocol/a2a-v1/schemas.js';
import { messageSendFromV1 } from '../dist/protocol/a2a-v1/message-mapping.js';
import { taskToV1 } from '../dist/protocol/a2a-v1/task-mapping.js';
import { A2A_MAX_SENDS_PER_RUN } from '../dist/protocol/bounds.js';
// @ts-expect-error: a plain JavaScript module of the bench, without types.
import { benchAgentCard } from './bench-agent-card.mjs';
import { startBenchAgent } from './gateway-bench-agent.js';

const [db = ''] = process.argv.slice(2);
const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);

async function main() {
  const logger = createLogger({ level: 'warn' });
  const broker = createBroker({ path: db, logger });
  const worker = await startBenchAgent(broker);
  // A registration may send A2A_MAX_SENDS_PER_RUN times: the requester registers again before that, as
  // the gateway's parties do (the old registration deregistered first, its open tasks kept), one at a time.
  const client = { name: 'client', contextId: 'bench-clients' };
  let requester = { ...(await broker.register(client)), sends: 0 };
  let renewing: Promise<void> | undefined;
  const requesterToken = async (): Promise<string> => {
    while (requester.sends >= A2A_MAX_SENDS_PER_RUN) {
      renewing ??= (async () => {
        await broker.deregister({ token: requester.token, keepTasks: true });
        requester = { ...(await broker.register(client)), sends: 0 };
      })().finally(() => {
        renewing = undefined;
      });
      await renewing;
    }
    requester.sends++;
    return requester.token;
  };
  const reply = (res: http.ServerResponse, value: unknown) => {
    const body = JSON.stringify(value);
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  };
  const server = http.createServer((req, res) => {
    if (req.method === 'GET') {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
      const description = 'completes every task, durably, with no gateway in front';
      reply(res, benchAgentCard({ name: 'broker floor', description, url, protocolVersion: '1.0' }));
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      let id: unknown = null;
      try {
        const request = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          id: unknown;
          params: { message: V1Message };
        };
        id = request.id;
        const token = await requesterToken();
        const message = messageSendFromV1(request.params.message);
        const { task } = await broker.send({ token, to: worker.agentId, message, blocking: true });
        reply(res, { jsonrpc: '2.0', id, result: { task: taskToV1(task) } });
      } catch (error) {
        // The bench's client fails the run on it, with this message.
        const text = `the broker's floor failed: ${error instanceof Error ? error.message : String(error)}`;
        reply(res, { jsonrpc: '2.0', id, error: { code: -32603, message: text } });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  print({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
  for await (const line of createInterface({ input: process.stdin })) {
    if (line.trim() !== 'prune') continue;
    const result = await broker.pruneTasks({ endedBefore: new Date(Date.now() + 1000).toISOString() });
    print({ pruned: result });
  }
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  worker.stop();
  await broker.close();
}

main().catch((error: unknown) => {
  process.stderr.write(`bench broker floor failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
