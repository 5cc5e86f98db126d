import { type MessageRow, messageRowBytes } from './message-rows.js';

/** Tasks whose histories the store keeps at most (past this, the oldest kept is dropped). */
export const RECENT_HISTORIES_KEPT = 256;
/** What the kept rows weigh at most, all histories together, in wire bytes (past this, the oldest are dropped). */
export const RECENT_HISTORY_BYTES = 4 * 1024 * 1024;
/** A row that weighs more is not kept: its task's history is read from the rows from then on. */
export const RECENT_ROW_MAX_BYTES = 64 * 1024;

interface History {
  readonly rows: MessageRow[];
  /** `messageRowBytes` of each row, in the same order. */
  readonly bytes: number[];
  /** Their sum. */
  total: number;
}

/** The last messages of a kept history, and what they weigh on the wire (`MESSAGE_BYTES` summed). */
export interface HistoryTail {
  rows: MessageRow[];
  bytes: number;
}

/** String methods of ES2024, which Node 20 has (the project's types stop at ES2023). */
interface WellFormed {
  isWellFormed(): boolean;
}

/**
 * Whether a row reads back as it was written: SQLite stores a string that is
 * not well-formed UTF-16 (a lone surrogate) as bytes that read back as other
 * characters, so such a row is not kept. A body is JSON text, always well-formed.
 */
function readsBackAsWritten(row: MessageRow): boolean {
  const id = row.message_id;
  return (
    (typeof id !== 'string' || (id as unknown as WellFormed).isWellFormed()) &&
    (row.from_name as unknown as WellFormed).isWellFormed()
  );
}

/**
 * The row as kept: an id held as bytes gets its own 16 (a small `Buffer` is a
 * view into a shared 8 KiB pool, which a kept view would keep alive).
 */
function ownRow(row: MessageRow): MessageRow {
  const id = row.message_id;
  if (typeof id === 'string') return row;
  const own = Buffer.alloc(id.length);
  id.copy(own);
  return { ...row, message_id: own };
}

/**
 * The histories of tasks created by this store, as the rows it wrote, so that
 * a task just written is answered without reading its messages back (a
 * blocking send's answer is built inside the call that settles its task).
 * A history is kept from its task's first message while each message after it
 * is appended at the next position and the task has no artifact: the rows
 * kept are then exactly the task's rows, and its artifacts none. Anything
 * else drops it (a later read goes to the rows): a gap, a position out of
 * order, an artifact, a row over `RECENT_ROW_MAX_BYTES` or one that would not
 * read back as written. At most `RECENT_HISTORIES_KEPT` histories and
 * `RECENT_HISTORY_BYTES` are kept, the oldest dropped first. The store forgets
 * them all whenever a call's writes are rolled back and whenever rows are
 * deleted (`forget`), as its other hints. Rows are never handed out to be
 * changed: messages are rebuilt from them as from rows read.
 */
export class RecentHistories {
  private readonly byTask = new Map<string, History>();
  private total = 0;

  /** A message row was written at `position` (1-based) of the task's history. */
  appended(taskId: string, position: number, row: MessageRow): void {
    const bytes = messageRowBytes(row);
    if (bytes > RECENT_ROW_MAX_BYTES || !readsBackAsWritten(row)) {
      this.drop(taskId);
      return;
    }
    if (position === 1) {
      this.drop(taskId);
      this.byTask.set(taskId, { rows: [ownRow(row)], bytes: [bytes], total: bytes });
      this.total += bytes;
    } else {
      const history = this.byTask.get(taskId);
      if (history === undefined) return;
      if (position !== history.rows.length + 1) {
        this.drop(taskId);
        return;
      }
      history.rows.push(ownRow(row));
      history.bytes.push(bytes);
      history.total += bytes;
      this.total += bytes;
    }
    while (this.byTask.size > RECENT_HISTORIES_KEPT || this.total > RECENT_HISTORY_BYTES) {
      const oldest = this.byTask.keys().next();
      if (oldest.done) break;
      this.drop(oldest.value);
    }
  }

  /** An artifact of the task was written: its history alone no longer says what it holds. */
  artifactWritten(taskId: string): void {
    this.drop(taskId);
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
    return { rows: history.rows.slice(from), bytes };
  }

  /** What the kept rows weigh, all histories together (`messageRowBytes` summed). */
  get bytes(): number {
    return this.total;
  }

  /** Forgets every history kept (a rollback, a delete). */
  forget(): void {
    this.byTask.clear();
    this.total = 0;
  }

  private drop(taskId: string): void {
    const history = this.byTask.get(taskId);
    if (history === undefined) return;
    this.total -= history.total;
    this.byTask.delete(taskId);
  }
}
