import { CONNECTION_ANSWER_BUDGET_BYTES, MAX_LINE_BYTES } from '../protocol/bounds.js';

/** The bound a batch's answer crossed: its line, or its connection's budget. */
export type SpentBound = 'MAX_LINE_BYTES' | 'CONNECTION_ANSWER_BUDGET_BYTES';

/**
 * Bytes kept free in a batch's line for each of its calls not yet answered,
 * so that their error entries (an id and a message) still fit in it.
 */
export const ENTRY_RESERVE_BYTES = 1024;

/**
 * Bytes of answers (by the recent estimate) one batch may have being
 * computed at once: a batch of large answers is worked through a few at a
 * time, so that the other connections' calls get their turn in between.
 */
export const BATCH_IN_FLIGHT_BYTES = 4 * 1024 * 1024;

/**
 * The least size a batch's call is weighed at before it runs, whatever the
 * recent answers: an answer's size is unknown until it is built, so a batch
 * has at most `BATCH_IN_FLIGHT_BYTES / MIN_CALL_ESTIMATE_BYTES` (16) calls
 * being computed at once.
 */
export const MIN_CALL_ESTIMATE_BYTES = 256 * 1024;

/**
 * One connection's budget of answer bytes: the answers of its batches,
 * computed and held until their batch's line is written, count against
 * `maxBytes` (`CONNECTION_ANSWER_BUDGET_BYTES`); each batch's answer also
 * stays within one line (`lineBytes`). Pure bookkeeping: the server asks and
 * acts.
 */
export class AnswerBudget {
  /** Bytes of batch answers held now. */
  held = 0;

  constructor(
    readonly maxBytes = CONNECTION_ANSWER_BUDGET_BYTES,
    readonly lineBytes = MAX_LINE_BYTES,
  ) {}

  /** A batch of `calls` requests starts: its tally. */
  openBatch(calls: number): BatchTally {
    return new BatchTally(this, calls);
  }
}

/**
 * A batch's answers as they come: each is kept (counted in its line and in
 * the connection's budget) or refused, and after the first refusal the
 * batch is spent: the rest of its calls are not run and their answers not
 * serialized.
 */
export class BatchTally {
  /** Bytes of the batch's line so far: `[`, `]` and each entry with its comma. */
  bytes = 2;
  /** Calls of the batch not yet answered. */
  unanswered: number;
  /** Calls of the batch dispatched and not yet answered. */
  inFlight = 0;
  /** Set once an answer did not fit: the bound it crossed. */
  spent: SpentBound | undefined;
  private counted = 0;
  private closed = false;

  constructor(
    private readonly budget: AnswerBudget,
    calls: number,
  ) {
    this.unanswered = calls;
  }

  /** The connection's budget, in bytes. */
  get maxBytes(): number {
    return this.budget.maxBytes;
  }

  /** The bound of the batch's line, in bytes. */
  get lineBytes(): number {
    return this.budget.lineBytes;
  }

  /**
   * May one more call of the batch be dispatched now, given `estimate`, the
   * size of recent answers? Always when none is in flight (so a batch never
   * stalls); otherwise only while the answers in flight would still fit its
   * line and stay within `BATCH_IN_FLIGHT_BYTES`.
   */
  mayDispatch(estimate: number): boolean {
    if (this.inFlight === 0) return true;
    const each = Math.max(estimate, MIN_CALL_ESTIMATE_BYTES);
    if ((this.inFlight + 1) * each > BATCH_IN_FLIGHT_BYTES) return false;
    return this.bytes + (this.inFlight + 1) * each + this.reserve(this.inFlight + 1) <= this.budget.lineBytes;
  }

  /**
   * An answer of `size` bytes arrived: true when it is kept (and counted),
   * false when it would cross a bound (the batch is then spent, and the
   * caller sends an error in its place).
   */
  admit(size: number): boolean {
    if (this.spent !== undefined) return false;
    const entry = size + 1;
    if (this.bytes + entry + this.reserve(1) > this.budget.lineBytes) {
      this.spent = 'MAX_LINE_BYTES';
      return false;
    }
    if (this.budget.held + entry > this.budget.maxBytes) {
      this.spent = 'CONNECTION_ANSWER_BUDGET_BYTES';
      return false;
    }
    this.count(entry);
    return true;
  }

  /** An error entry of `size` bytes takes a call's place (errors are always kept: they are small and reserved for). */
  addError(size: number): void {
    this.count(size + 1);
  }

  /** One call of the batch is answered (kept, refused or an error). */
  answered(): void {
    this.unanswered--;
  }

  /** The batch's line was handed to the writer: its bytes leave the connection's budget. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.budget.held -= this.counted;
  }

  private count(bytes: number): void {
    this.bytes += bytes;
    this.counted += bytes;
    this.budget.held += bytes;
  }

  /** Bytes kept free for the error entries of the calls after these `taking` ones. */
  private reserve(taking: number): number {
    return Math.max(0, this.unanswered - taking) * ENTRY_RESERVE_BYTES;
  }
}
