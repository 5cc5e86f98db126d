import { join } from 'node:path';
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { RECENT_HISTORIES_KEPT } from '../../src/persistence/a2a/recent-histories.js';
import { A2A_MIGRATION_SET } from '../../src/persistence/a2a/schema.js';
import { A2AStore, type TaskHead } from '../../src/persistence/a2a/store.js';
import { type SqliteDatabase, openDatabase } from '../../src/persistence/kernel/database.js';
import { migrate } from '../../src/persistence/kernel/migrations.js';
import type { Message } from '../../src/protocol/task.js';
import { tempDir } from '../broker/helpers.js';

/** Runs `body` on a broker store over a fresh migrated file, then closes and removes it. */
function withStore<T>(body: (d: SqliteDatabase, store: A2AStore) => T): T {
  const { dir, cleanup } = tempDir();
  const d = openDatabase(join(dir, 'histories.db'));
  try {
    migrate(d, A2A_MIGRATION_SET);
    return body(d, new A2AStore(d));
  } finally {
    d.close();
    cleanup();
  }
}

const at = '2026-12-07T00:00:00.000Z';
const TASKS = ['t1', 't2', 't3'] as const;

function headOf(taskId: string, historyCount: number): TaskHead {
  return {
    taskId,
    contextId: 'ctx',
    requesterName: 'req',
    agentContextId: 'ctx',
    agentName: 'wrk',
    state: 'submitted',
    status: { state: 'submitted', timestamp: at },
    historyCount,
    createdAt: at,
    updatedAt: at,
  };
}

/** What a message may be, as the rows store it in every form: compact or not, its id as 16 bytes or as text. */
const messageShape = fc.record({
  uuid: fc.boolean(),
  id: fc.stringMatching(/^[a-z0-9-]{1,12}$/),
  role: fc.constantFrom('user' as const, 'agent' as const),
  from: fc.constantFrom('req', 'wrk', 'wörker-ü', '代理'),
  text: fc.oneof(
    fc.string({ maxLength: 40 }),
    fc.string({ unit: 'grapheme', maxLength: 20 }),
    fc.constant('x'.repeat(1200)),
  ),
  timestamp: fc.boolean(),
  context: fc.constantFrom('task', 'other', 'none'),
  metadata: fc.option(fc.dictionary(fc.stringMatching(/^[a-z]{1,5}$/), fc.integer()), { nil: undefined }),
});
type Shape = typeof messageShape extends fc.Arbitrary<infer T> ? T : never;

let serial = 0;
function messageOf(taskId: string, shape: Shape): Message {
  serial++;
  const messageId = shape.uuid ? crypto.randomUUID() : `${shape.id}-${serial}`;
  const message: Record<string, unknown> = { kind: 'message', messageId, role: shape.role, from: shape.from, taskId };
  if (shape.context === 'task') message.contextId = 'ctx';
  if (shape.context === 'other') message.contextId = 'elsewhere';
  if (shape.timestamp) message.timestamp = at;
  message.parts = [{ kind: 'text', text: shape.text }];
  if (shape.metadata !== undefined) message.metadata = shape.metadata;
  return message as unknown as Message;
}

type Op =
  | { kind: 'create'; task: number; shape: Shape }
  | { kind: 'append'; task: number; shape: Shape; at: 'next' | 'gap' | number }
  | { kind: 'artifact'; task: number }
  | { kind: 'rolledBack'; task: number; shape: Shape }
  | { kind: 'forget' };

const task = fc.integer({ min: 0, max: TASKS.length - 1 });
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('create' as const), task, shape: messageShape }) },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('append' as const),
      task,
      shape: messageShape,
      at: fc.oneof(
        { weight: 4, arbitrary: fc.constant('next' as const) },
        { weight: 2, arbitrary: fc.constant('gap' as const) },
        { weight: 2, arbitrary: fc.integer({ min: 1, max: 4 }) },
      ),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('artifact' as const), task }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('rolledBack' as const), task, shape: messageShape }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('forget' as const) }) },
);

describe('the histories the broker store keeps of the tasks it created', () => {
  test.prop([fc.array(op, { minLength: 1, maxLength: 25 })], { numRuns: 200 })(
    'a task is loaded and weighed exactly as its rows say, whatever was written, rolled back or forgotten',
    (ops) => {
      withStore((d, store) => {
        // The oracle: a store that kept nothing, on the same file, reads every task from its rows.
        const rows = () => new A2AStore(d);
        const created = new Set<string>();
        for (const o of ops) {
          if (o.kind === 'forget') {
            store.forgetHints();
            continue;
          }
          const taskId = TASKS[o.task] as string;
          const current = rows().taskHead(taskId);
          if (o.kind === 'create') {
            if (created.has(taskId)) continue;
            created.add(taskId);
            const message = messageOf(taskId, o.shape);
            d.transaction(() => {
              store.insertTask(headOf(taskId, 1), message.messageId);
              store.appendMessage(message, 1, 'ctx');
            })();
          } else if (current === undefined) {
            continue;
          } else if (o.kind === 'append') {
            // A position skipped leaves a gap, and a position given fills one out of order (or is
            // taken: refused and rolled back): what is kept must not stand for such a history.
            const position =
              o.at === 'next' ? current.historyCount + 1 : o.at === 'gap' ? current.historyCount + 2 : o.at;
            try {
              d.transaction(() => {
                store.appendMessage(messageOf(taskId, o.shape), position, 'ctx');
                store.writeHead({ ...current, historyCount: Math.max(position, current.historyCount) });
              })();
            } catch {
              store.forgetHints();
            }
          } else if (o.kind === 'artifact') {
            const artifactId = `a-${serial++}`;
            d.transaction(() =>
              store.putArtifact(taskId, { artifactId, parts: [{ kind: 'text', text: artifactId }] }, false, at),
            )();
          } else {
            expect(() =>
              d.transaction(() => {
                store.appendMessage(messageOf(taskId, o.shape), current.historyCount + 1, 'ctx');
                throw new Error('refused');
              })(),
            ).toThrow('refused');
            // The commit queue tells the store of every rollback.
            store.forgetHints();
          }
          for (const id of created) {
            const written = rows().taskHead(id) as TaskHead;
            // A head as read, and heads whose count is not the rows' (a caller's stale or early head).
            const heads = [written, { ...written, historyCount: written.historyCount + 1 }];
            if (written.historyCount > 1) heads.push({ ...written, historyCount: written.historyCount - 1 });
            for (const head of heads)
              for (const historyLength of [undefined, 0, 1, 2, 3, 100]) {
                const fresh = rows();
                expect(store.loadTask(head, historyLength)).toStrictEqual(fresh.loadTask(head, historyLength));
                expect(store.taskBytes(head, historyLength)).toBe(fresh.taskBytes(head, historyLength));
                expect(store.taskWithin(head, historyLength, 200)).toStrictEqual(
                  fresh.taskWithin(head, historyLength, 200),
                );
              }
          }
        }
      });
    },
  );

  it('answers a task it created from the rows it wrote, without reading them back', () => {
    withStore((d, store) => {
      const first = messageOf('t1', {
        uuid: true,
        id: 'a',
        role: 'user',
        from: 'req',
        text: 'do it',
        timestamp: true,
        context: 'task',
        metadata: undefined,
      });
      const second = { ...first, messageId: crypto.randomUUID(), role: 'agent' as const, from: 'wrk' };
      d.transaction(() => {
        store.insertTask(headOf('t1', 1), first.messageId);
        store.appendMessage(first, 1, 'ctx');
        store.appendMessage(second, 2, 'ctx');
        store.writeHead(headOf('t1', 2));
      })();
      const expected = new A2AStore(d).loadTask(headOf('t1', 2));
      expect(expected.history.map((m) => m.messageId)).toEqual([first.messageId, second.messageId]);
      // The rows go behind the store's back: what it answers with is what it kept.
      d.prepare('DELETE FROM a2a_messages').run();
      expect(store.loadTask(headOf('t1', 2))).toStrictEqual(expected);
      expect(store.loadTask(headOf('t1', 2), 1).history).toStrictEqual([expected.history[1]]);
      // Told of the delete, it reads the rows again: none are left.
      store.forgetHints();
      expect(store.loadTask(headOf('t1', 2)).history).toEqual([]);
    });
  });

  it(`keeps the histories of the last ${RECENT_HISTORIES_KEPT} tasks created at most`, () => {
    withStore((d, store) => {
      const shape: Shape = {
        uuid: false,
        id: 'm',
        role: 'user',
        from: 'req',
        text: 'hi',
        timestamp: false,
        context: 'none',
        metadata: undefined,
      };
      const ids = Array.from({ length: RECENT_HISTORIES_KEPT + 1 }, (_, i) => `task-${i}`);
      d.transaction(() => {
        for (const id of ids) {
          const message = messageOf(id, shape);
          store.insertTask(headOf(id, 1), message.messageId);
          store.appendMessage(message, 1, 'ctx');
        }
      })();
      d.prepare('DELETE FROM a2a_messages').run();
      // The first task's history was dropped for the last one's: it is read from the rows (gone).
      expect(store.loadTask(headOf(ids[0] as string, 1)).history).toEqual([]);
      expect(store.loadTask(headOf(ids[1] as string, 1)).history).toHaveLength(1);
      expect(store.loadTask(headOf(ids.at(-1) as string, 1)).history).toHaveLength(1);
    });
  });
});
