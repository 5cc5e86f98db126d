import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { SendMessageRequest, type StreamResponse, type TaskState } from '@a2a-js/sdk';
import {
  type Client,
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';

export const BIN = join(import.meta.dirname, '..', '..', 'bin', 'switchboard.js');

/** Runs `switchboard gateway keys ...`; answers stdout (fails the test on a non-zero exit). */
export function keysCli(args: string[]): string {
  const run = spawnSync(process.execPath, [BIN, 'gateway', 'keys', ...args], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`gateway keys ${args.join(' ')} exited ${run.status}: ${run.stderr}`);
  return run.stdout;
}

/** The first line `keys add` prints: the key. */
export function addKey(file: string, name: string, agents: string): string {
  return keysCli(['add', name, '--agents', agents, '--keys', file]).split('\n')[0] as string;
}

export interface GatewayProcess {
  child: ChildProcess;
  url: string;
  stderr: () => string;
}

/** A real `switchboard gateway` process; resolves with its base URL once it listens. */
export function startGateway(args: string[]): Promise<GatewayProcess> {
  const child = spawn(process.execPath, [BIN, 'gateway', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (t: string) => {
    stderr += t;
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`gateway exited ${code}: ${stderr.slice(-2000)}`)));
    child.stdout?.setEncoding('utf8').on('data', (t: string) => {
      stdout += t;
      const match = /switchboard gateway on (https?\S+)/.exec(stdout);
      if (match) resolve({ child, url: match[1] as string, stderr: () => stderr });
    });
  });
}

/** A `fetch` that sends `key` (when given) as the bearer key. */
export function keyedFetch(key: string | undefined): typeof fetch {
  return (input, init) => {
    const headers = new Headers(init?.headers);
    if (key !== undefined) headers.set('Authorization', `Bearer ${key}`);
    return fetch(input, { ...init, headers });
  };
}

/** An SDK client of one agent of the gateway, sending `key` (when given) as its bearer key. */
export async function sdkClient(
  url: string,
  agent: string,
  key: string | undefined,
  binding: 'jsonrpc' | 'rest' = 'jsonrpc',
): Promise<Client> {
  const fetchImpl = keyedFetch(key);
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [
        binding === 'jsonrpc' ? new JsonRpcTransportFactory({ fetchImpl }) : new RestTransportFactory({ fetchImpl }),
      ],
      preferredTransports: [binding === 'jsonrpc' ? 'JSONRPC' : 'HTTP+JSON'],
    }),
  );
  return factory.createFromUrl(`${url}/agents/${agent}/`);
}

/** A message request; `immediately`: answered at once with the task as it is, not once it ends. */
export function send(text: string, taskId?: string, immediately = false): SendMessageRequest {
  return SendMessageRequest.fromJSON({
    ...(immediately ? { configuration: { returnImmediately: true } } : {}),
    message: {
      messageId: `m-${Math.random().toString(36).slice(2)}`,
      role: 'ROLE_USER',
      parts: [{ text }],
      ...(taskId === undefined ? {} : { taskId }),
    },
  });
}

export async function collect(stream: AsyncGenerator<StreamResponse>): Promise<StreamResponse[]> {
  const out: StreamResponse[] = [];
  for await (const response of stream) out.push(response);
  return out;
}

export function stateOf(response: StreamResponse): TaskState | undefined {
  const payload = response.payload;
  if (payload?.$case === 'task') return payload.value.status?.state;
  if (payload?.$case === 'statusUpdate') return payload.value.status?.state;
  return undefined;
}
