import type { Readable, Writable } from 'node:stream';
import {
  AbstractMessageReader,
  AbstractMessageWriter,
  type DataCallback,
  type Disposable,
  type Message,
  type MessageConnection,
  type MessageReader,
  type MessageWriter,
  ResponseError,
  createMessageConnection,
} from 'vscode-jsonrpc/node';
import { afterEach, describe, expect, it } from 'vitest';
import { RawServe, tempDir, text } from './helpers.js';

/** NDJSON in: vscode-jsonrpc speaks Content-Length framing by default, switchboard one message per line. */
class NdjsonMessageReader extends AbstractMessageReader implements MessageReader {
  constructor(private readonly readable: Readable) {
    super();
  }

  listen(callback: DataCallback): Disposable {
    let rest = '';
    const onData = (chunk: Buffer) => {
      rest += chunk.toString('utf8');
      let newline = rest.indexOf('\n');
      while (newline >= 0) {
        const line = rest.slice(0, newline);
        rest = rest.slice(newline + 1);
        if (line.trim() !== '') callback(JSON.parse(line) as Message);
        newline = rest.indexOf('\n');
      }
    };
    const onClose = () => this.fireClose();
    this.readable.on('data', onData);
    this.readable.on('close', onClose);
    return {
      dispose: () => {
        this.readable.off('data', onData);
        this.readable.off('close', onClose);
      },
    };
  }
}

/** NDJSON out. */
class NdjsonMessageWriter extends AbstractMessageWriter implements MessageWriter {
  constructor(private readonly writable: Writable) {
    super();
  }

  write(message: Message): Promise<void> {
    return new Promise((resolve, reject) => {
      this.writable.write(`${JSON.stringify(message)}\n`, (error) => (error ? reject(error) : resolve()));
    });
  }

  end(): void {
    this.writable.end();
  }
}

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

function connectVscode(): { connection: MessageConnection; server: RawServe } {
  const tmp = tempDir();
  cleanups.push(tmp.cleanup);
  const server = new RawServe(tmp.db);
  // RawServe reads stdout itself; vscode-jsonrpc gets its own view of the same lines.
  const connection = createMessageConnection(
    new NdjsonMessageReader(server.child.stdout),
    new NdjsonMessageWriter(server.child.stdin),
  );
  connection.listen();
  cleanups.push(async () => {
    connection.dispose();
    await server.end();
  });
  return { connection, server };
}

interface Registered {
  agentId: string;
  token: string;
}

describe('interop: vscode-jsonrpc drives switchboard serve', () => {
  it('handshakes, registers, delegates and receives the counterpart events as notifications', async () => {
    const { connection } = connectVscode();
    const events: { recipient: string; seq: number; event: { status: { state: string } } }[] = [];
    connection.onNotification('a2a.task.event', (params: (typeof events)[number]) => {
      events.push(params);
    });
    const host = await connection.sendRequest<{ protocolVersion: number; capabilities: string[] }>('app.handshake', {
      protocolVersion: 10,
      client: { name: 'vscode-jsonrpc', version: '10' },
    });
    expect(host.protocolVersion).toBe(10);
    expect(host.capabilities).toContain('a2a');

    const worker = await connection.sendRequest<Registered>('a2a.agents.register', { name: 'worker', contextId: 's' });
    const requester = await connection.sendRequest<Registered>('a2a.agents.register', {
      name: 'requester',
      contextId: 's',
    });
    const { agents } = await connection.sendRequest<{ agents: { name: string }[] }>('a2a.agents.list', {
      token: requester.token,
    });
    expect(agents.map((a) => a.name)).toEqual(['worker']);
    const { task } = await connection.sendRequest<{ task: { id: string } }>('a2a.message.send', {
      token: requester.token,
      to: 'worker',
      message: text('go'),
    });
    await connection.sendRequest('a2a.tasks.status', { token: worker.token, id: task.id, state: 'completed' });
    const got = await connection.sendRequest<{ task: { status: { state: string } } }>('a2a.tasks.get', {
      token: requester.token,
      id: task.id,
    });
    expect(got.task.status.state).toBe('completed');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(events.map((e) => [e.recipient, e.seq, e.event.status.state])).toEqual([
      [worker.agentId, 1, 'submitted'],
      [requester.agentId, 1, 'completed'],
    ]);
    const since = await connection.sendRequest<{ events: { seq: number; method: string }[] }>('a2a.events.since', {
      token: requester.token,
      after: 0,
    });
    expect(since.events.map((e) => [e.seq, e.method])).toEqual([[1, 'a2a.task.event']]);
  });

  it('surfaces A2A errors and standard errors as ResponseError with the code and data', async () => {
    const { connection } = connectVscode();
    const agent = await connection.sendRequest<Registered>('a2a.agents.register', { name: 'a', contextId: 's' });
    const unknownTask = await connection
      .sendRequest('a2a.tasks.get', { token: agent.token, id: 'nope' })
      .catch((e: unknown) => e);
    expect(unknownTask).toBeInstanceOf(ResponseError);
    expect((unknownTask as ResponseError<{ errorCode: string }>).code).toBe(1400);
    expect((unknownTask as ResponseError<{ errorCode: string }>).data?.errorCode).toBe('A2A_UNKNOWN_TASK');
    const unknownMethod = await connection.sendRequest('a2a.nope', {}).catch((e: unknown) => e);
    expect((unknownMethod as ResponseError).code).toBe(-32601);
    const invalid = await connection.sendRequest('a2a.tasks.get', { token: agent.token }).catch((e: unknown) => e);
    expect((invalid as ResponseError).code).toBe(-32602);
    expect((invalid as ResponseError<{ issues: unknown[] }>).data?.issues.length).toBeGreaterThan(0);
    const noPeers = await connection.sendRequest('a2a.agents.list', { token: agent.token }).catch((e: unknown) => e);
    expect((noPeers as ResponseError<{ errorCode: string }>).data?.errorCode).toBe('A2A_NO_PEERS');
  });

  it('handles many concurrent requests from vscode-jsonrpc, each answered once', async () => {
    const { connection } = connectVscode();
    const worker = await connection.sendRequest<Registered>('a2a.agents.register', { name: 'w', contextId: 'c' });
    const requester = await connection.sendRequest<Registered>('a2a.agents.register', { name: 'r', contextId: 'c' });
    const sends = Array.from({ length: 100 }, (_, i) =>
      connection.sendRequest<{ task: { id: string } }>('a2a.message.send', {
        token: requester.token,
        to: 'w',
        message: text(`job ${i}`),
      }),
    );
    const tasks = await Promise.all(sends);
    expect(new Set(tasks.map((t) => t.task.id)).size).toBe(100);
    const { tasks: listed } = await connection.sendRequest<{ tasks: unknown[] }>('a2a.tasks.list', {
      token: worker.token,
      role: 'worker',
    });
    expect(listed).toHaveLength(100);
  });
});
