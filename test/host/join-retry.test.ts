import { mkdirSync } from 'node:fs';
import { type Socket, createServer } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createBroker } from '../../src/actors/broker/broker.js';
import { BrokerSession } from '../../src/transport/broker-session.js';
import { connect } from '../../src/transport/client.js';
import { defaultSocketPath } from '../../src/transport/host-paths.js';
import { hostDir } from './helpers.js';

const saved = process.env.XDG_RUNTIME_DIR;
let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
  if (saved === undefined) delete process.env.XDG_RUNTIME_DIR;
  else process.env.XDG_RUNTIME_DIR = saved;
});

describe('connect({ db })', () => {
  it('joins again when the broker closes the connection before the handshake (it was stopping)', async () => {
    const h = hostDir();
    const run = join(h.dir, 'run');
    mkdirSync(run, { mode: 0o700 });
    process.env.XDG_RUNTIME_DIR = run;
    const socketPath = defaultSocketPath(h.db);
    mkdirSync(join(run, 'switchboard'), { mode: 0o700 });
    // A broker whose socket drops the first connection unanswered, as one closing for idleness does.
    const broker = createBroker({ path: h.db, socket: socketPath });
    let accepted = 0;
    const sockets: Socket[] = [];
    const server = createServer({ allowHalfOpen: true }, (socket) => {
      sockets.push(socket);
      if (accepted++ === 0) {
        socket.destroy();
        return;
      }
      new BrokerSession({ broker, input: socket, output: socket, connectionScoped: true });
    });
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    cleanups.push(async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await broker.close();
      h.cleanup();
    });
    const client = await connect({ db: h.db });
    cleanups.push(() => client.close());
    expect(accepted).toBe(2);
    const agent = await client.register({ contextId: 'c', name: 'a' });
    expect(agent.agentId).toBeTruthy();
  });
});
