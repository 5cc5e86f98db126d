/**
 * The transport floor of the socket variant of bench:peer: a bare NDJSON
 * JSON-RPC server on a Unix socket that answers the calls of a delegation
 * with the broker's shapes and routes the same events between connections,
 * and does nothing else: no validation, no storage, no task machine, no
 * bounds. The bench drives it with the same client processes as the broker
 * (this package's client, `connect({ socket })`), so its CPU per delegation
 * is what the wire alone costs a server on this machine: JSON in and out,
 * socket reads and writes, the event loop. A broker that also keeps the rows
 * of a delegation can cost no less than this plus the raw SQLite writes.
 *
 * argv: SOCKET_PATH. Prints `{"listening":true}` once it listens; stops on SIGTERM.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { handshakeResult } from '../dist/protocol/handshake.js';
import { VERSION } from '../dist/version.js';

const path = process.argv[2];
/** agentId -> { connection, contextId, name, seq } */
const agents = new Map();
/** token -> agentId */
const tokens = new Map();
/** name -> agentIds (the bench's names are unique per live agent) */
const byName = new Map();
/** taskId -> { requester, worker, message } */
const tasks = new Map();

function taskOf(taskId, entry, state, history) {
  const now = new Date().toISOString();
  return {
    kind: 'task',
    id: taskId,
    contextId: entry.requester.contextId,
    agentName: entry.worker.name,
    agentContextId: entry.worker.contextId,
    requesterName: entry.requester.name,
    status: { state, timestamp: now },
    history,
    artifacts: [],
    createdAt: now,
    updatedAt: now,
  };
}

/** Writes one event to the party's connection (one write per connection per tick, like the broker). */
function notify(agent, contextId, event) {
  agent.seq++;
  const params = { recipient: agent.agentId, recipientName: agent.name, contextId, seq: agent.seq, event };
  agent.connection.out.push(JSON.stringify({ jsonrpc: '2.0', method: 'a2a.task.event', params }));
  agent.connection.schedule();
}

function handle(connection, method, p) {
  switch (method) {
    case 'app.handshake':
      return handshakeResult(VERSION);
    case 'a2a.agents.register': {
      const agentId = randomUUID();
      const token = randomUUID() + randomUUID();
      const agent = { agentId, connection, contextId: p.contextId, name: p.name, seq: 0 };
      agents.set(agentId, agent);
      tokens.set(token, agentId);
      byName.set(p.name, agentId);
      connection.agents.push(token);
      const card = { agentId, contextId: p.contextId, name: p.name, kind: 'subagent', description: '', skills: [] };
      return { agentId, token, card };
    }
    case 'a2a.agents.deregister': {
      const agentId = tokens.get(p.token);
      tokens.delete(p.token);
      agents.delete(agentId);
      return { deregistered: true };
    }
    case 'a2a.events.since':
      return { events: [] };
    case 'a2a.message.send': {
      const requester = agents.get(tokens.get(p.token));
      const worker = agents.get(byName.get(p.to));
      const taskId = randomUUID();
      const entry = { requester, worker };
      tasks.set(taskId, entry);
      const message = {
        kind: 'message',
        messageId: randomUUID(),
        role: 'user',
        from: requester.name,
        taskId,
        contextId: requester.contextId,
        timestamp: new Date().toISOString(),
        parts: p.message.parts,
      };
      const task = taskOf(taskId, entry, 'submitted', [message]);
      notify(worker, requester.contextId, {
        kind: 'status-update',
        taskId,
        contextId: requester.contextId,
        status: task.status,
        final: false,
        message,
      });
      return { task };
    }
    case 'a2a.tasks.status': {
      const entry = tasks.get(p.id);
      tasks.delete(p.id);
      const task = taskOf(p.id, entry, p.state, []);
      notify(entry.requester, entry.requester.contextId, {
        kind: 'status-update',
        taskId: p.id,
        contextId: entry.requester.contextId,
        status: task.status,
        final: true,
      });
      return { task };
    }
    default:
      throw new Error(`the relay does not serve ${method}`);
  }
}

const server = createServer((socket) => {
  socket.setEncoding('utf8');
  const connection = {
    out: [],
    agents: [],
    scheduled: false,
    schedule() {
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        if (this.out.length === 0 || socket.destroyed) return;
        socket.write(`${this.out.join('\n')}\n`);
        this.out = [];
      });
    },
  };
  let rest = '';
  socket.on('data', (chunk) => {
    rest += chunk;
    const lines = rest.split('\n');
    rest = lines.pop();
    for (const line of lines) {
      if (line === '') continue;
      const request = JSON.parse(line);
      let answer;
      try {
        answer = { jsonrpc: '2.0', id: request.id, result: handle(connection, request.method, request.params) };
      } catch (error) {
        answer = { jsonrpc: '2.0', id: request.id, error: { code: -32601, message: String(error.message) } };
      }
      connection.out.push(JSON.stringify(answer));
    }
    connection.schedule();
  });
  const release = () => {
    for (const token of connection.agents) agents.delete(tokens.get(token));
  };
  socket.on('close', release);
  socket.on('error', () => {});
});
server.listen(path, () => process.stdout.write(`${JSON.stringify({ listening: true })}\n`));
process.on('SIGTERM', () => {
  server.close();
  process.exit(0);
});
