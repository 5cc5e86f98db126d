import { type MessageRow, messageRowBytes } from './message-rows.js';

/** Tasks whose histories the store keeps at most (past this, the oldest kept is dropped). */
export const RECENT_HISTORIES_KEPT = 256;

interface History {
  readonly rows: MessageRow[];
  /** `messageRowBytes` of each row, in the same order. */
  readonly bytes: number[];
}

/** The last messages of a kept history, and what they weigh on the wire (`MESSAGE_BYTES` summed). */
export interface HistoryTail {
  rows: MessageRow[];
  bytes: number;
}

/**
 * The histories of tasks created by this store, as the rows it wrote, so that
 * a task just written is answered without reading its messages back (a
 * blocking send's answer is built inside the call that settles its task).
 * A history is kept from its task's first message while each message after it
 * is appended at the next position and the task has no artifact: the rows
 * kept are then exactly the task's rows, and its artifacts none. Anything
 * else drops it (a later read goes to the rows). The store forgets them all
 * whenever a call's writes are rolled back and whenever rows are deleted
 * (`forget`), as its other hints. Rows are never handed out to be changed:
 * messages are rebuilt from them as from rows read.
 */
export class RecentHistories {
  private readonly byTask = new Map<string, History>();

  /** A message row was written at `position` (1-based) of the task's history. */
  appended(taskId: string, position: number, row: MessageRow): void {
    if (position === 1) {
      this.byTask.delete(taskId);
      if (this.byTask.size >= RECENT_HISTORIES_KEPT) {
        const oldest = this.byTask.keys().next();
        if (!oldest.done) this.byTask.delete(oldest.value);
      }
      this.byTask.set(taskId, { rows: [row], bytes: [messageRowBytes(row)] });
      return;
    }
    const history = this.byTask.get(taskId);
    if (history === undefined) return;
    if (position !== history.rows.length + 1) {
      this.byTask.delete(taskId);
      return;
    }
    history.rows.push(row);
    history.bytes.push(messageRowBytes(row));
  }

  /** An artifact of the task was written: its history alone no longer says what it holds. */
  artifactWritten(taskId: string): void {
    this.byTask.delete(taskId);
  }

  /**
   * The last `historyLength` rows of the task (all of them when undefined),
   * when its whole history of `count` messages is kept and it has no
   * artifact; else undefined.
   */
  tail(taskId: string, count: number, historyLength: number | undefined): HistoryTail | undefined {
    const history = this.byTask.get(taskId);
    if (history === undefined || history.rows.length !== count) return undefined;
    const from = historyLength === undefined ? 0 : Math.max(0, count - historyLength);
    let bytes = 0;
    for (let i = from; i < count; i++) bytes += history.bytes[i] as number;
    return { rows: from === 0 ? history.rows.slice() : history.rows.slice(from), bytes };
  }

  /** Forgets every history kept (a rollback, a delete). */
  forget(): void {
    this.byTask.clear();
  }
}
