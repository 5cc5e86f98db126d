/**
 * A client process of `npm run bench:gateway`: the official @a2a-js/sdk
 * client of one A2A agent over JSON-RPC. argv: URL (the agent's base URL);
 * env BENCH_BEARER: a bearer key to send (the gateway's side). Reads
 * commands from stdin, one JSON line each: `{"run":{"tasks":N,"inFlight":K}}`
 * sends N messages, K at a time, each answered once its task has completed
 * (a blocking SendMessage), then prints `{"done":true,"latencies":[ms...]}`.
 * Prints `{"ready":true}` once it has read the agent's card.
 */
import { createInterface } from 'node:readline';
import { Role, TaskState } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from '@a2a-js/sdk/client';

const [url = ''] = process.argv.slice(2);
const bearer = process.env.BENCH_BEARER;
const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);

async function main() {
  const fetchImpl: typeof fetch = (input, init) => {
    if (bearer === undefined) return fetch(input, init);
    const headers = new Headers(init?.headers);
    headers.set('Authorization', `Bearer ${bearer}`);
    return fetch(input, { ...init, headers });
  };
  const client = await new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
    }),
  ).createFromUrl(url);
  const delegate = async () => {
    const result = (await client.sendMessage({
      tenant: '',
      message: {
        messageId: crypto.randomUUID(),
        contextId: '',
        taskId: '',
        role: Role.ROLE_USER,
        parts: [
          {
            content: { $case: 'text', value: 'do the thing' },
            metadata: undefined,
            filename: '',
            mediaType: 'text/plain',
          },
        ],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      },
      configuration: undefined,
      metadata: undefined,
    } as never)) as { status?: { state: TaskState } };
    if (result.status?.state !== TaskState.TASK_STATE_COMPLETED) {
      throw new Error(`the task did not complete: ${JSON.stringify(result).slice(0, 300)}`);
    }
  };
  print({ ready: true });
  for await (const line of createInterface({ input: process.stdin })) {
    const command = JSON.parse(line) as { run?: { tasks: number; inFlight: number } };
    if (command.run === undefined) continue;
    const { tasks, inFlight } = command.run;
    const latencies: number[] = [];
    let issued = 0;
    const lane = async () => {
      while (issued < tasks) {
        issued++;
        const t0 = performance.now();
        await delegate();
        latencies.push(performance.now() - t0);
      }
    };
    await Promise.all(Array.from({ length: inFlight }, lane));
    print({ done: true, latencies });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench gateway client failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
