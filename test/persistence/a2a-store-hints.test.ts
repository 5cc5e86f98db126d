import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { A2A_MIGRATION_SET } from '../../src/persistence/a2a/schema.js';
import { A2AStore, type TaskHead } from '../../src/persistence/a2a/store.js';
import { type SqliteDatabase, openDatabase } from '../../src/persistence/kernel/database.js';
import { migrate } from '../../src/persistence/kernel/migrations.js';
import type { Message } from '../../src/protocol/task.js';
import { tempDir } from '../broker/helpers.js';

/** Runs `body` on a broker store over a fresh migrated file, then closes and removes it. */
function withStore(body: (d: SqliteDatabase, store: A2AStore) => void): void {
  const { dir, cleanup } = tempDir();
  const d = openDatabase(join(dir, 'hints.db'));
  try {
    migrate(d, A2A_MIGRATION_SET);
    body(d, new A2AStore(d));
  } finally {
    d.close();
    cleanup();
  }
}

const at = '2026-12-07T00:00:00.000Z';
const head: TaskHead = {
  taskId: 't1',
  contextId: 'c',
  requesterName: 'req',
  agentContextId: 'c',
  agentName: 'wrk',
  state: 'submitted',
  status: { state: 'submitted', timestamp: at },
  historyCount: 1,
  createdAt: at,
  updatedAt: at,
};
const message = (messageId: string): Message => ({
  kind: 'message',
  messageId,
  role: 'agent',
  from: 'wrk',
  taskId: 't1',
  contextId: 'c',
  timestamp: at,
  parts: [{ kind: 'text', text: messageId }],
});

describe('what the broker store remembers of its rows', () => {
  it('refers to a message by the position it was just appended at, and by its id once its append was rolled back and forgotten', () => {
    withStore((d, store) => {
      d.transaction(() => {
        store.insertTask(head, 'm0');
        store.appendMessage({ ...message('m0'), role: 'user', from: 'req' }, 1, 'c');
      })();
      const withStatus = (m: Message): TaskHead => ({
        ...head,
        historyCount: 2,
        state: 'working',
        status: { state: 'working', timestamp: at, message: m },
      });
      // Appended and referred to in one transaction: by its position.
      d.transaction(() => {
        store.appendMessage(message('m1'), 2, 'c');
        store.writeHead(withStatus(message('m1')));
      })();
      expect(d.prepare('SELECT status FROM a2a_tasks').get()).toEqual({ status: '2' });
      // An append rolled back: the broker forgets (its commit queue says so), and the status refers by id.
      expect(() =>
        d.transaction(() => {
          store.appendMessage(message('m2'), 3, 'c');
          throw new Error('refused');
        })(),
      ).toThrow('refused');
      store.forgetHints();
      d.transaction(() => store.writeHead(withStatus(message('m2'))))();
      expect(JSON.parse((d.prepare('SELECT status FROM a2a_tasks').get() as { status: string }).status)).toEqual({
        message: { $m: 'm2' },
      });
      expect(store.taskHead('t1')?.status.message).toEqual({ $m: 'm2' });
    });
  });

  it('writes an event of a task only while the task row is there, whatever it read of it before the row was deleted and forgotten', () => {
    withStore((d, store) => {
      d.transaction(() => store.insertTask(head, 'm0'))();
      expect(store.taskHead('t1')?.taskId).toBe('t1');
      d.prepare('DELETE FROM a2a_tasks').run();
      store.forgetHints();
      const event = {
        seq: 1,
        method: 'a2a.task.event' as const,
        params: {
          recipient: 'a1',
          recipientName: 'wrk',
          contextId: 'c',
          seq: 1,
          event: { kind: 'status-update' as const, taskId: 't1', contextId: 'c', status: head.status, final: false },
        },
      };
      expect(() => store.appendEvent({ contextId: 'c', name: 'wrk' }, event, 't1', at)).toThrow('no task t1');
    });
  });
});
