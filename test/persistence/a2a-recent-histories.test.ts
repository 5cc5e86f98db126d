import { join } from 'node:path';
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { messageRowBytes } from '../../src/persistence/a2a/message-rows.js';
import {
  RECENT_HISTORIES_KEPT,
  RECENT_HISTORY_BYTES,
  RECENT_ROW_MAX_BYTES,
  RecentHistories,
} from '../../src/persistence/a2a/recent-histories.js';
import { A2A_MIGRATION_SET } from '../../src/persistence/a2a/schema.js';
import { A2AStore, type TaskHead, idKey } from '../../src/persistence/a2a/store.js';
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
  // A lone surrogate is stored as bytes that read back as other characters.
  id: fc.oneof(fc.stringMatching(/^[a-z0-9-]{1,12}$/), fc.constant('ask-\ud800')),
  role: fc.constantFrom('user' as const, 'agent' as const),
  from: fc.constantFrom('req', 'wrk', 'wörker-ü', '代理', 'wrk-\udc00'),
  text: fc.oneof(
    fc.string({ maxLength: 40 }),
    fc.string({ unit: 'grapheme', maxLength: 20 }),
    fc.constant('x'.repeat(1200)),
    fc.constant('y'.repeat(RECENT_ROW_MAX_BYTES)),
  ),
  timestamp: fc.boolean(),
  context: fc.constantFrom('task', 'other', 'none'),
  metadata: fc.option(fc.dictionary(fc.stringMatching(/^[a-z]{1,5}$/), fc.integer()), { nil: undefined }),
});
type Shape = typeof messageShape extends fc.Arbitrary<infer T> ? T : never;

/** A message of one short text, its id as text. */
const plainShape: Shape = {
  uuid: false,
  id: 'm',
  role: 'user',
  from: 'req',
  text: 'hi',
  timestamp: false,
  context: 'none',
  metadata: undefined,
};

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
  test.prop([fc.array(op, { minLength: 1, maxLength: 25 })], { numRuns: 150 })(
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
    // Each run writes and reads a file: under a full suite on two cores this takes its time.
    180_000,
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
      const weight = new A2AStore(d).taskBytes(headOf('t1', 2));
      // The rows go behind the store's back: what it answers with is what it kept.
      d.prepare('DELETE FROM a2a_messages').run();
      expect(store.loadTask(headOf('t1', 2))).toStrictEqual(expected);
      expect(store.taskBytes(headOf('t1', 2))).toBe(weight);
      expect(store.taskWithin(headOf('t1', 2), undefined, weight)).toStrictEqual(expected);
      expect(store.loadTask(headOf('t1', 2), 1).history).toStrictEqual([expected.history[1]]);
      // Told of the delete, it reads the rows again: none are left.
      store.forgetHints();
      expect(store.loadTask(headOf('t1', 2)).history).toEqual([]);
    });
  });

  it('drops a history with a gap, so that a gap filled later is read in its order', () => {
    withStore((d, store) => {
      const shape = plainShape;
      d.transaction(() => {
        const first = messageOf('t1', shape);
        store.insertTask(headOf('t1', 1), first.messageId);
        store.appendMessage(first, 1, 'ctx');
        store.appendMessage(messageOf('t1', shape), 3, 'ctx');
        store.appendMessage(messageOf('t1', shape), 2, 'ctx');
        store.writeHead(headOf('t1', 3));
      })();
      const read = new A2AStore(d).loadTask(headOf('t1', 3));
      expect(read.history).toHaveLength(3);
      expect(store.loadTask(headOf('t1', 3))).toStrictEqual(read);
    });
  });

  it(`keeps the histories of the last ${RECENT_HISTORIES_KEPT} tasks created at most`, () => {
    withStore((d, store) => {
      const shape = plainShape;
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

describe('what the kept histories weigh', () => {
  const row = (text: string, id: string | Buffer = 'm') => ({
    message_id: id,
    role: 'user' as const,
    from_name: 'req',
    body: JSON.stringify({ parts: [{ kind: 'text', text }] }),
  });

  it(`keeps no row over ${RECENT_ROW_MAX_BYTES} bytes, and at most ${RECENT_HISTORY_BYTES} bytes in all, the oldest dropped first`, () => {
    const kept = new RecentHistories();
    kept.appended('small', 1, row('hi'));
    kept.appended('small', 2, row('x'.repeat(RECENT_ROW_MAX_BYTES)));
    // Its history is dropped, not kept without that row.
    expect(kept.tail('small', 2, undefined)).toBeUndefined();
    expect(kept.tail('small', 1, undefined)).toBeUndefined();
    expect(kept.bytes).toBe(0);
    const big = row('z'.repeat(RECENT_ROW_MAX_BYTES - 200));
    const each = messageRowBytes(big);
    expect(each).toBeLessThanOrEqual(RECENT_ROW_MAX_BYTES);
    const fit = Math.floor(RECENT_HISTORY_BYTES / each);
    for (let i = 0; i <= fit; i++) kept.appended(`t${i}`, 1, big);
    expect(kept.bytes).toBe(fit * each);
    expect(kept.tail('t0', 1, undefined)).toBeUndefined();
    expect(kept.tail('t1', 1, undefined)?.bytes).toBe(each);
    expect(kept.tail(`t${fit}`, 1, undefined)?.rows).toHaveLength(1);
    kept.artifactWritten('t1');
    expect(kept.bytes).toBe((fit - 1) * each);
    kept.forget();
    expect(kept.bytes).toBe(0);
  });

  it('holds a message id kept as bytes in 16 bytes of its own, not in a view of a shared pool', () => {
    const kept = new RecentHistories();
    const id = idKey(crypto.randomUUID());
    expect(Buffer.isBuffer(id) && id.buffer.byteLength > 16).toBe(true);
    kept.appended('t', 1, row('hi', id));
    const held = kept.tail('t', 1, undefined)?.rows[0]?.message_id as Buffer;
    expect(held.buffer.byteLength).toBe(16);
    expect(held.equals(id as Buffer)).toBe(true);
  });

  it('keeps no row that would not read back as written (a lone surrogate in its id or sender)', () => {
    const kept = new RecentHistories();
    kept.appended('a', 1, row('hi', 'ask-\ud800'));
    kept.appended('b', 1, { ...row('hi'), from_name: 'wrk-\udc00' });
    kept.appended('c', 1, row('hi', 'fine'));
    expect(kept.tail('a', 1, undefined)).toBeUndefined();
    expect(kept.tail('b', 1, undefined)).toBeUndefined();
    expect(kept.tail('c', 1, undefined)?.rows).toHaveLength(1);
  });
});
