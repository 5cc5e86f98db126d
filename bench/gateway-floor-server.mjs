// The floor of `npm run bench:gateway`: the least a server can do and keep
// its tasks durable. node:http, no framework, one better-sqlite3 file (WAL,
// synchronous=NORMAL, as the broker's default) and, per SendMessage, two
// transactions: the task, its message and an event for its agent; then, on
// the next turn of the event loop, the agent's completion, its message and an
// event for the client. Then the v1.0 task as the answer. No validation, no
// authentication, no state machine, no second party: not a server anyone
// should run, a measure of what HTTP and two durable writes cost on this
// machine. Plain JavaScript, as bench/peer-sdk-server.mjs. argv: DB. Prints
// `{"port":N}` once listening; serves its agent card at
// /.well-known/agent-card.json and JSON-RPC at /.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import Database from 'better-sqlite3';
import { benchAgentCard } from './bench-agent-card.mjs';

const db = new Database(process.argv[2] ?? ':memory:');
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.exec(`
  CREATE TABLE IF NOT EXISTS tasks (task INTEGER PRIMARY KEY, id TEXT UNIQUE, context_id TEXT, state TEXT, status TEXT, updated_at TEXT);
  CREATE TABLE IF NOT EXISTS messages (task INTEGER, position INTEGER, body TEXT, PRIMARY KEY (task, position));
  CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY, party TEXT, task INTEGER, params TEXT);
`);
const insertTask = db.prepare('INSERT INTO tasks (id, context_id, state, status, updated_at) VALUES (?, ?, ?, ?, ?)');
const insertMessage = db.prepare('INSERT INTO messages (task, position, body) VALUES (?, ?, ?)');
const insertEvent = db.prepare('INSERT INTO events (party, task, params) VALUES (?, ?, ?)');
const updateTask = db.prepare('UPDATE tasks SET state = ?, status = ?, updated_at = ? WHERE task = ?');
const create = db.transaction((id, contextId, message, status) => {
  const task = insertTask.run(id, contextId, 'submitted', status, new Date().toISOString()).lastInsertRowid;
  insertMessage.run(task, 0, message);
  insertEvent.run('agent', task, status);
  return task;
});
const complete = db.transaction((task, message, status) => {
  updateTask.run('completed', status, new Date().toISOString(), task);
  insertMessage.run(task, 1, message);
  insertEvent.run('client', task, status);
});

function send(res, value) {
  const body = JSON.stringify(value);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

const server = http.createServer((req, res) => {
  if (req.method === 'GET') {
    const url = `http://127.0.0.1:${server.address().port}/`;
    const description = 'completes every task, durably, and nothing more';
    send(res, benchAgentCard({ name: 'floor', description, url, protocolVersion: '1.0' }));
    return;
  }
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const request = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    const sent = request.params.message;
    const id = randomUUID();
    const contextId = randomUUID();
    const user = { messageId: sent.messageId, contextId, taskId: id, role: sent.role, parts: sent.parts };
    const task = create(id, contextId, JSON.stringify(user), JSON.stringify({ state: 'TASK_STATE_SUBMITTED' }));
    setImmediate(() => {
      const parts = [{ text: 'done', mediaType: 'text/plain' }];
      const agent = { messageId: randomUUID(), contextId, taskId: id, role: 'ROLE_AGENT', parts, metadata: {} };
      const status = { state: 'TASK_STATE_COMPLETED', message: agent, timestamp: new Date().toISOString() };
      complete(task, JSON.stringify(agent), JSON.stringify(status));
      send(res, {
        jsonrpc: '2.0',
        id: request.id,
        result: { task: { id, contextId, status, history: [user, agent], artifacts: [] } },
      });
    });
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`));
