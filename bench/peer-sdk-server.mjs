// The reference side of `npm run bench:peer`: the official @a2a-js/sdk server
// (DefaultRequestHandler, InMemoryTaskStore, JSON-RPC over HTTP with express)
// on 127.0.0.1. Its agent completes every task it is sent, as the worker of
// switchboard's side of the bench does. Plain JavaScript so that its RSS is
// not inflated by a TypeScript loader. Prints `{"port":N}` once listening;
// answers `GET /rss` with its resident set size. `--sqlite FILE`: the SDK's
// own durable task store instead (`DatabaseTaskStore` over Kysely's SQLite
// dialect and better-sqlite3, its table made by the SDK's migrator, WAL with
// synchronous=NORMAL as the broker's default).
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import express from 'express';
import { A2A_PROTOCOL_VERSION, AGENT_CARD_PATH, Role, TaskState } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler } from '@a2a-js/sdk/server/express';
import { benchAgentCard } from './bench-agent-card.mjs';

function textPart(value) {
  return { content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

const worker = {
  async execute(requestContext, eventBus) {
    const { taskId, contextId, userMessage } = requestContext;
    eventBus.publish(
      AgentEvent.task(
        requestContext.task ?? {
          id: taskId,
          contextId,
          status: { state: TaskState.TASK_STATE_SUBMITTED, timestamp: new Date().toISOString(), message: undefined },
          artifacts: [],
          history: [userMessage],
          metadata: undefined,
        },
      ),
    );
    eventBus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: {
          state: TaskState.TASK_STATE_COMPLETED,
          timestamp: new Date().toISOString(),
          message: {
            role: Role.ROLE_AGENT,
            messageId: crypto.randomUUID(),
            parts: [textPart('done')],
            taskId,
            contextId,
            extensions: [],
            metadata: {},
            referenceTaskIds: [],
          },
        },
        metadata: undefined,
      }),
    );
  },
  async cancelTask() {},
};

/** The task store: in memory, or `--sqlite FILE` (the SDK's own, on a SQLite file). */
async function taskStore() {
  const at = process.argv.indexOf('--sqlite');
  if (at === -1) return new InMemoryTaskStore();
  const file = process.argv[at + 1];
  const require = createRequire(import.meta.url);
  const migrator = join(dirname(require.resolve('@a2a-js/sdk')), 'cli', 'a2a_db.js');
  const migrated = spawnSync(process.execPath, [migrator, 'upgrade', '--url', `sqlite:${file}`], { encoding: 'utf8' });
  if (migrated.status !== 0) throw new Error(`a2a-db upgrade failed: ${migrated.stderr}`);
  // Loaded only here: the in-memory server's RSS (bench:peer) carries none of it.
  const { DatabaseTaskStore } = await import('@a2a-js/sdk/server/database');
  const { default: Database } = await import('better-sqlite3');
  const { Kysely, SqliteDialect } = await import('kysely');
  const database = new Database(file);
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  return new DatabaseTaskStore(new Kysely({ dialect: new SqliteDialect({ database }) }));
}

async function main() {
  const app = express();
  const port = await new Promise((resolve, reject) => {
    const server = app.listen(0, '127.0.0.1', (error) => (error ? reject(error) : resolve(server.address().port)));
  });
  const url = `http://127.0.0.1:${port}/`;
  const card = benchAgentCard({
    name: 'bench worker',
    description: 'completes every task',
    url,
    protocolVersion: A2A_PROTOCOL_VERSION,
  });
  const requestHandler = new DefaultRequestHandler(card, await taskStore(), worker);
  app.get('/rss', (_req, res) => res.json({ rss: process.memoryUsage.rss() }));
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler }));
  app.use(jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
  process.stdout.write(`${JSON.stringify({ port })}\n`);
}

main().catch((error) => {
  process.stderr.write(`${error?.stack ?? error}\n`);
  process.exit(1);
});
