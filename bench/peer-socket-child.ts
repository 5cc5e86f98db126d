/**
 * A client process of `npm run bench:peer -- --socket`: one of the 4
 * requesters or 4 workers on the host broker's socket, or one of the 8 SDK
 * clients over HTTP. argv: ROLE (requester | worker | sdk) INDEX TARGET
 * (the socket path, or the SDK server's URL). Reads commands from stdin, one
 * JSON line each: `{"run":{"tasks":N,"inFlight":K}}` (requesters and SDK
 * clients: delegate N times, K at a time, then print
 * `{"done":true,"latencies":[ms...]}`); end of stdin stops it. Prints
 * `{"ready":true}` once connected and registered.
 */
import { createInterface } from 'node:readline';
import { Role, TaskState } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';
import { type SwitchboardClient, connect } from '../dist/transport/client.js';

const [role = '', indexText = '0', target = ''] = process.argv.slice(2);
const index = Number(indexText);
const WORKERS = 4;
/** Requesters rotate: a context may create 128 tasks and a registration send 200 messages. */
const TASKS_PER_REQUESTER = 120;
const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);

async function worker(client: SwitchboardClient): Promise<() => Promise<void>> {
  const { token } = await client.register({ name: `worker-${index}`, contextId: 'bench-workers' });
  const done = { parts: [{ kind: 'text' as const, text: 'done' }] };
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const events = await client.wait({ token, timeoutSeconds: 1 });
      for (const event of events) {
        if (event.method !== 'a2a.task.event' || event.params.event.kind !== 'status-update') continue;
        if (event.params.event.status.state !== 'submitted') continue;
        // It does not read the task back: no history in the answer.
        void client.setStatus({
          token,
          id: event.params.event.taskId,
          state: 'completed',
          message: done,
          historyLength: 0,
        });
      }
    }
  })();
  return async () => {
    stopped = true;
    await loop;
  };
}

function requester(client: SwitchboardClient): () => Promise<void> {
  let contexts = 0;
  let used = TASKS_PER_REQUESTER;
  let current: Promise<{ token: string; outstanding: number; retired: boolean }> | undefined;
  let sent = 0;
  const release = (r: { token: string; outstanding: number; retired: boolean }) => {
    if (r.retired && r.outstanding === 0) void client.deregister({ token: r.token });
  };
  return async () => {
    if (used >= TASKS_PER_REQUESTER || current === undefined) {
      const previous = current;
      current = client
        .register({ name: 'requester', contextId: `bench-r${index}-${contexts++}` })
        .then(({ token }) => ({ token, outstanding: 0, retired: false }));
      used = 0;
      if (previous) {
        void previous.then((r) => {
          r.retired = true;
          release(r);
        });
      }
    }
    used++;
    const r = await current;
    r.outstanding++;
    const { task } = await client.send({
      token: r.token,
      to: `worker-${sent++ % WORKERS}`,
      message: { parts: [{ kind: 'text', text: 'do the thing' }] },
    });
    for (;;) {
      const events = await client.wait({ token: r.token, taskId: task.id, timeoutSeconds: 30 });
      if (events.length === 0) throw new Error(`task ${task.id} did not complete within 30 s`);
      if (
        events.some(
          (e) => e.method === 'a2a.task.event' && e.params.event.kind === 'status-update' && e.params.event.final,
        )
      )
        break;
    }
    r.outstanding--;
    release(r);
  };
}

async function sdkDelegate(): Promise<() => Promise<void>> {
  const client = await new ClientFactory().createFromUrl(target);
  return async () => {
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
    if (result.status?.state !== TaskState.TASK_STATE_COMPLETED) throw new Error('the SDK task did not complete');
  };
}

async function run(delegate: () => Promise<void>, tasks: number, inFlight: number): Promise<number[]> {
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
  return latencies;
}

async function main() {
  let client: SwitchboardClient | undefined;
  let delegate: (() => Promise<void>) | undefined;
  let stop: (() => Promise<void>) | undefined;
  if (role === 'sdk') delegate = await sdkDelegate();
  else {
    client = await connect({ socket: target });
    if (role === 'worker') stop = await worker(client);
    else delegate = requester(client);
  }
  print({ ready: true });
  for await (const line of createInterface({ input: process.stdin })) {
    const command = JSON.parse(line) as { run?: { tasks: number; inFlight: number } };
    if (command.run && delegate)
      print({ done: true, latencies: await run(delegate, command.run.tasks, command.run.inFlight) });
  }
  await stop?.();
  await client?.close();
}

main().catch((error: unknown) => {
  process.stderr.write(
    `bench child ${role} ${index} failed: ${error instanceof Error ? error.stack : String(error)}\n`,
  );
  process.exit(1);
});
