import type { Readable, Writable } from 'node:stream';
import type { Logger } from '../log/logger.js';
import { silentLogger } from '../log/logger.js';
import { MAX_BATCH_REQUESTS, MAX_LINE_BYTES, MAX_LINE_NESTING } from '../protocol/bounds.js';
import { answerBudgetSpent, answerTooLarge, isBrokerError } from '../protocol/broker-error.js';
import type { JsonRpcId } from '../protocol/jsonrpc.js';
import {
  JSONRPC_INVALID_REQUEST,
  JSONRPC_PARSE_ERROR,
  type JsonRpcErrorObject,
  logInternalFailure,
  toJsonRpcError,
} from './jsonrpc-errors.js';
import { AnswerBudget, type BatchTally } from './answer-budget.js';
import { LineWriter } from './line-writer.js';
import { lineNesting } from './line-nesting.js';
import { LineSplitter, isBlankLine } from './ndjson.js';
import { rawIdLiteral } from './raw-id.js';

/**
 * Routes one call. May throw or reject; the server turns that into an error
 * answer. `call.park()` says the call, still unanswered, waits on something
 * outside the connection (a blocking send waiting for its task): it stops
 * holding one of the connection's slots for calls in flight, so the calls
 * behind it run.
 */
export type Dispatch = (method: string, params: unknown, call: DispatchedCall) => unknown;

/** What a dispatched call may tell the server about itself. */
export interface DispatchedCall {
  /** The call, still unanswered, waits outside the connection: it no longer holds a slot. */
  park(): void;
}

export interface JsonRpcServerOptions {
  /** Requests come in here (the peer's output, e.g. stdin). */
  input: Readable;
  /** Answers and notifications go out here (e.g. stdout). */
  output: Writable;
  dispatch: Dispatch;
  logger?: Logger;
  /** Bytes of one line (default 32 MiB). */
  maxLineBytes?: number;
  /** Characters of output held back before input is paused (default 1 MiB). */
  outputHighWaterMark?: number;
  /** Calls in flight before input is paused until half of them are answered (default 4096). */
  maxInFlight?: number;
}

/**
 * Characters of answers a connection lets be computed and not yet written:
 * calls are dispatched in a window of about this many characters over the
 * size of recent answers (at least one call, at most `maxInFlight`).
 */
const ANSWER_BUDGET_CHARS = 2 * MAX_LINE_BYTES;

/**
 * Calls a new connection may have in flight before any is answered: the
 * window then grows by one per answer (doubling per round of answers) up to
 * what the answer budget allows, so that a first burst of calls whose
 * answers are large is never all computed at once.
 */
const INITIAL_WINDOW = 8;

/** A request read and not yet answered: its parsed message and, when a number cannot hold it, its id as written. */
interface Job {
  message: unknown;
  rawId: string | undefined;
  /** Takes the answer line (undefined for a notification). */
  done: (line: string | undefined, idText: string) => void;
  /** The tally of the batch the request came in, if any. */
  batch?: BatchTally;
  /** Set when its answer was counted in its batch's tally (an answer that is not is an error entry). */
  admitted?: boolean;
}

/**
 * JSON-RPC 2.0 over NDJSON on a pair of streams. Calls are dispatched as they
 * are read, without waiting for earlier ones, so that a broker can gather the
 * calls of one tick into one commit; answers go out as they settle (the `id`
 * matches them). Calls wait in a queue (and input pauses) while output is
 * congested or while the answers in flight would hold more than a budget of
 * characters, so that neither a peer that does not read nor one that asks
 * for large answers can make the server buffer without bound.
 */
export class JsonRpcServer {
  readonly writer: LineWriter;
  private readonly input: Readable;
  private readonly dispatch: Dispatch;
  private readonly logger: Logger;
  private readonly splitter: LineSplitter;
  /** Requests read and not yet answered (queued or dispatched). */
  private unanswered = 0;
  /** Requests dispatched and not yet answered. */
  private dispatched = 0;
  private queue: Job[] = [];
  private queueHead = 0;
  private pumping = false;
  private waitingForDrain = false;
  /** A decaying maximum of recent answer sizes (characters): sets the dispatch window. */
  private answerEstimate = 1;
  /** Grows by one per answer from `INITIAL_WINDOW`: caps the window until answers are known small. */
  private ramp = INITIAL_WINDOW;
  /** The connection's budget of batch answer bytes held. */
  readonly budget = new AnswerBudget();
  private inputEnded = false;
  private stopping = false;
  private inputPaused = false;
  private pausedForLoad = false;
  private readonly maxInFlight: number;
  private idleWaiters: (() => void)[] = [];
  private readonly done: Promise<void>;
  private resolveDone!: () => void;
  private readonly noMoreCalls: Promise<void>;
  private resolveNoMoreCalls!: () => void;

  constructor(options: JsonRpcServerOptions) {
    this.input = options.input;
    this.dispatch = options.dispatch;
    this.logger = options.logger ?? silentLogger();
    this.maxInFlight = options.maxInFlight ?? 4096;
    this.writer = new LineWriter(options.output, { highWaterMark: options.outputHighWaterMark });
    this.splitter = new LineSplitter(
      {
        line: (text) => this.onLine(text),
        oversized: (bytes) => this.onOversized(bytes),
        invalidUtf8: (bytes) => this.onInvalidUtf8(bytes),
      },
      { maxLineBytes: options.maxLineBytes },
    );
    this.done = new Promise((resolve) => {
      this.resolveDone = resolve;
    });
    this.noMoreCalls = new Promise((resolve) => {
      this.resolveNoMoreCalls = resolve;
    });
    this.input.on('data', this.onData);
    this.input.on('end', this.onInputEnd);
    this.input.on('error', this.onInputError);
    this.input.on('close', this.onInputEnd);
  }

  /** Calls read and not yet answered. */
  get pending(): number {
    return this.unanswered;
  }

  /** Resolves once no more calls will be read: input ended, or `stop` was called (calls may still be unanswered). */
  get callsEnded(): Promise<void> {
    return this.noMoreCalls;
  }

  /** Resolves once input has ended (or `stop` was called), every call is answered and output is flushed. */
  get closed(): Promise<void> {
    return this.done;
  }

  /** Writes a notification (no `id`). */
  notify(method: string, params: unknown): void {
    this.writer.write(JSON.stringify({ jsonrpc: '2.0', method, params }));
  }

  /**
   * Writes a notification whose params are already JSON text: the same line
   * `notify` writes for those params.
   */
  notifyText(method: string, paramsJson: string): void {
    this.writer.writePieces(['{"jsonrpc":"2.0","method":', JSON.stringify(method), ',"params":', paramsJson, '}']);
  }

  /** Stops reading, answers the calls read so far, flushes output. */
  stop(): Promise<void> {
    if (!this.stopping) {
      this.stopping = true;
      this.detachInput();
      this.input.pause();
      void this.finish();
    }
    return this.done;
  }

  private readonly onData = (chunk: Buffer | string): void => {
    this.splitter.push(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk);
    this.pump();
  };

  private readonly onInputEnd = (): void => {
    if (this.inputEnded) return;
    this.inputEnded = true;
    this.splitter.end();
    this.pump();
    if (!this.stopping) {
      this.stopping = true;
      this.detachInput();
      void this.finish();
    }
  };

  private readonly onInputError = (error: Error): void => {
    this.logger.warn({ err: { message: error.message } }, 'input stream failed');
    this.onInputEnd();
  };

  private detachInput(): void {
    this.input.off('data', this.onData);
    this.input.off('end', this.onInputEnd);
    this.input.off('error', this.onInputError);
    this.input.off('close', this.onInputEnd);
    // Keep an error after detaching from becoming an uncaught exception.
    this.input.on('error', () => {});
  }

  private async finish(): Promise<void> {
    this.resolveNoMoreCalls();
    await this.whenIdle();
    await this.writer.flush();
    this.writer.detach();
    this.resolveDone();
  }

  private whenIdle(): Promise<void> {
    if (this.unanswered === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** How many calls may be dispatched and unanswered at once, given the size of recent answers. */
  private get window(): number {
    const room = Math.max(0, ANSWER_BUDGET_CHARS - this.budget.held);
    return Math.max(1, Math.min(this.maxInFlight, this.ramp, Math.floor(room / this.answerEstimate)));
  }

  /**
   * Dispatches queued calls while output keeps up and the window allows;
   * input is paused while calls wait, while output is congested and while
   * `maxInFlight` calls are in flight (until half of them are answered).
   */
  private pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.queueHead < this.queue.length) {
        if (this.writer.congested && !this.writer.closed) break;
        const job = this.queue[this.queueHead] as Job;
        const batch = job.batch;
        if (batch !== undefined && batch.spent !== undefined) {
          // The batch's answers reached a bound: the rest of it is answered at once, not run.
          this.queueHead++;
          this.refuse(job, batch);
          continue;
        }
        if (this.dispatched >= this.window) break;
        if (batch !== undefined && !batch.mayDispatch(this.answerEstimate)) break;
        this.queue[this.queueHead] = undefined as unknown as Job;
        this.queueHead++;
        this.run(job);
      }
      if (this.queueHead === this.queue.length) {
        this.queue = [];
        this.queueHead = 0;
      } else if (this.queueHead > 1024 && this.queueHead * 2 > this.queue.length) {
        this.queue = this.queue.slice(this.queueHead);
        this.queueHead = 0;
      }
    } finally {
      this.pumping = false;
    }
    if (this.writer.congested && !this.waitingForDrain) {
      this.waitingForDrain = true;
      void this.writer.whenDrained().then(() => {
        this.waitingForDrain = false;
        this.pump();
      });
    }
    this.updateInput();
  }

  private updateInput(): void {
    if (this.stopping) return;
    if (this.dispatched >= this.maxInFlight) this.pausedForLoad = true;
    else if (this.dispatched <= this.maxInFlight / 2) this.pausedForLoad = false;
    const pause =
      this.pausedForLoad || this.queueHead < this.queue.length || (this.writer.congested && !this.writer.closed);
    if (pause && !this.inputPaused) {
      this.inputPaused = true;
      this.input.pause();
    } else if (!pause && this.inputPaused) {
      this.inputPaused = false;
      this.input.resume();
    }
  }

  private enqueue(job: Job): void {
    this.unanswered++;
    this.queue.push(job);
  }

  /** A call of a spent batch: answered with `ANSWER_BUDGET_SPENT` (not run); a notification is dropped. */
  private refuse(job: Job, batch: BatchTally): void {
    const idText = idTextOf(job.message, job.rawId);
    const method = methodOf(job.message);
    const isNotification = job.message !== null && typeof job.message === 'object' && !Object.hasOwn(job.message, 'id');
    if (isNotification) this.logger.warn({ method }, 'a notification of a spent batch was not run');
    const line = isNotification
      ? undefined
      : errorLine(
          idText,
          toJsonRpcError(
            answerBudgetSpent(batch.spent ?? 'MAX_LINE_BYTES', maxOf(batch), false, answerHintFor(method)),
          ),
        );
    this.finishJob(job, line, idText);
  }

  private run(job: Job): void {
    this.dispatched++;
    if (job.batch !== undefined) job.batch.inFlight++;
    const idText = idTextOf(job.message, job.rawId);
    /** Holds a slot until it parks or is answered. */
    let holding = true;
    const letGo = () => {
      if (!holding) return false;
      holding = false;
      this.dispatched--;
      if (job.batch !== undefined) job.batch.inFlight--;
      return true;
    };
    const settle = (line: string | undefined) => {
      letGo();
      if (this.ramp < this.maxInFlight) this.ramp++;
      if (line !== undefined) this.answerEstimate = Math.max(line.length, this.answerEstimate * 0.75);
      this.finishJob(job, line, idText);
      this.pump();
    };
    const park = () => {
      if (letGo()) this.pump();
    };
    const answer = this.handle(job, idText, { park });
    if (answer === undefined || typeof answer === 'string') settle(answer);
    else void answer.then(settle);
  }

  /**
   * Hands a call's answer on. The line is written before the call stops
   * counting as unanswered, so that `stop()` never resolves ahead of an answer.
   */
  private finishJob(job: Job, line: string | undefined, idText: string): void {
    job.done(line, idText);
    this.unanswered--;
    if (this.unanswered === 0 && this.idleWaiters.length > 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const waiter of waiters) waiter();
    }
  }

  private onOversized(bytes: number): void {
    this.logger.warn({ bytes }, 'discarded a line longer than the line bound');
    this.writeError(null, {
      code: JSONRPC_INVALID_REQUEST,
      message: `Invalid Request: line exceeds ${this.splitter.maxLineBytes} bytes`,
    });
  }

  private onInvalidUtf8(bytes: number): void {
    this.logger.warn({ bytes }, 'discarded a line that is not valid UTF-8');
    this.writeError(null, {
      code: JSONRPC_PARSE_ERROR,
      message: 'Parse error: the line is not valid UTF-8; send every line as UTF-8 text',
    });
  }

  private onLine(text: string): void {
    if (isBlankLine(text)) return;
    // A linear scan spares the parser a pathologically nested line (it would hold every connection for seconds).
    const nesting = lineNesting(text, MAX_LINE_NESTING);
    if (nesting > MAX_LINE_NESTING) {
      this.logger.warn({ bytes: text.length }, 'refused a line nested deeper than the nesting bound');
      this.writeError(null, {
        code: JSONRPC_INVALID_REQUEST,
        message: `Invalid Request: the line nests arrays and objects more than ${MAX_LINE_NESTING} levels deep (MAX_LINE_NESTING); params may nest at most 64 levels (MAX_JSON_DEPTH)`,
        data: { limit: 'MAX_LINE_NESTING', max: MAX_LINE_NESTING },
      });
      return;
    }
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      this.writeError(null, { code: JSONRPC_PARSE_ERROR, message: 'Parse error' });
      return;
    }
    if (Array.isArray(message)) {
      this.onBatch(message, text);
      return;
    }
    this.enqueue({
      message,
      rawId: needsRawId(message) ? rawIdLiteral(text) : undefined,
      done: (line) => {
        if (line !== undefined) this.writer.write(line);
      },
    });
  }

  /**
   * A batch's calls go through the queue one by one like single calls; its
   * answer is written as one array line once all are answered, in pieces. An
   * answer that would take that line past `MAX_LINE_BYTES` is replaced by an
   * error saying to send the call alone.
   */
  private onBatch(messages: unknown[], text: string): void {
    if (messages.length === 0) {
      this.writeError(null, { code: JSONRPC_INVALID_REQUEST, message: 'Invalid Request: empty batch' });
      return;
    }
    if (messages.length > MAX_BATCH_REQUESTS) {
      this.writeError(null, {
        code: JSONRPC_INVALID_REQUEST,
        message: `Invalid Request: a batch holds at most ${MAX_BATCH_REQUESTS} requests (MAX_BATCH_REQUESTS), this one ${messages.length}: split it into smaller batches`,
        data: { limit: 'MAX_BATCH_REQUESTS', max: MAX_BATCH_REQUESTS },
      });
      return;
    }
    // Answers go in request order; a notification leaves its slot empty.
    const answers: (string | undefined)[] = new Array(messages.length);
    const batch = this.budget.openBatch(messages.length);
    const answered = (index: number, job: Job) => (line: string | undefined) => {
      // An answer was counted as it was serialized; an error entry is counted here.
      if (line !== undefined && job.admitted !== true) batch.addError(utf8Bytes(line));
      if (line !== undefined) answers[index] = line;
      batch.answered();
      if (batch.unanswered > 0) return;
      const pieces: string[] = [];
      for (const answer of answers) if (answer !== undefined) pieces.push(pieces.length === 0 ? '[' : ',', answer);
      batch.close();
      if (pieces.length === 0) return;
      pieces.push(']');
      this.writer.writePieces(pieces);
    };
    for (let i = 0; i < messages.length; i++) {
      const message = messages[i];
      const job: Job = {
        message,
        rawId: needsRawId(message) ? rawIdLiteral(text, i) : undefined,
        done: () => {},
        batch,
      };
      job.done = answered(i, job);
      this.enqueue(job);
    }
  }

  /**
   * A batch's answer of `bytes` bytes, just serialized: kept when it fits its
   * batch's line and the connection's budget, else replaced by an error for
   * its id (the first such answer spends the batch: the rest of it is not
   * run, and answers already being computed are not serialized).
   */
  private admitToBatch(
    job: Job,
    batch: BatchTally,
    line: string,
    bytes: number,
    idText: string,
    method: string,
  ): string {
    if (batch.admit(bytes)) {
      job.admitted = true;
      return line;
    }
    this.logger.warn(
      { method, bytes, limit: batch.spent },
      'a batch answer did not fit: the rest of its batch is not run',
    );
    const error =
      batch.spent === 'MAX_LINE_BYTES'
        ? answerTooLarge(bytes, true, answerHintFor(method))
        : answerBudgetSpent('CONNECTION_ANSWER_BUDGET_BYTES', maxOf(batch), true, answerHintFor(method));
    return errorLine(idText, toJsonRpcError(error));
  }

  /**
   * Handles one request object: undefined for a notification answered at
   * once (never answered), a serialized answer when it is known at once, or a
   * promise of one. Never throws, never rejects.
   */
  private handle(job: Job, idText: string, call: DispatchedCall): string | Promise<string | undefined> | undefined {
    const message = job.message;
    if (message === null || typeof message !== 'object' || Array.isArray(message)) {
      return errorLine('null', { code: JSONRPC_INVALID_REQUEST, message: 'Invalid Request: not a request object' });
    }
    const request = message as Record<string, unknown>;
    const hasId = Object.hasOwn(request, 'id');
    const id = request.id;
    const params = request.params;
    if (
      request.jsonrpc !== '2.0' ||
      typeof request.method !== 'string' ||
      (hasId && !isJsonRpcId(id)) ||
      (params !== undefined && (params === null || typeof params !== 'object'))
    ) {
      return errorLine('null', { code: JSONRPC_INVALID_REQUEST, message: 'Invalid Request' });
    }
    const method = request.method;
    let result: unknown;
    try {
      result = this.dispatch(method, params, call);
    } catch (error) {
      if (!hasId) return this.logNotificationFailure(method, error);
      return errorLine(idText, this.toError(method, error));
    }
    if (!hasId) {
      if (!isPromiseLike(result)) return undefined;
      return Promise.resolve(result).then(
        () => undefined,
        (error: unknown) => this.logNotificationFailure(method, error),
      );
    }
    if (!isPromiseLike(result)) return this.resultLine(method, idText, result, job);
    return Promise.resolve(result).then(
      (value) => this.resultLine(method, idText, value, job),
      (error: unknown) => errorLine(idText, this.toError(method, error)),
    );
  }

  /**
   * The answer line of a call that succeeded, or, when it cannot be sent
   * (not serializable, or longer than a line may be), an error saying so.
   */
  private resultLine(method: string, idText: string, result: unknown, job: Job): string {
    const batch = job.batch;
    if (batch?.spent !== undefined) {
      // Its batch is spent: the answer would be refused, so it is never serialized.
      return errorLine(
        idText,
        toJsonRpcError(answerBudgetSpent(batch.spent, maxOf(batch), true, answerHintFor(method))),
      );
    }
    let json: string | undefined;
    try {
      json = JSON.stringify(result === undefined ? null : result) ?? 'null';
    } catch (error) {
      if (!(error instanceof RangeError)) return errorLine(idText, this.toError(method, error));
      this.logger.warn({ method }, 'an answer was too large to serialize');
      return errorLine(idText, toJsonRpcError(answerTooLarge(undefined)));
    }
    const line = `{"jsonrpc":"2.0","id":${idText},"result":${json ?? 'null'}}`;
    const bytes = utf8Bytes(line);
    if (bytes > MAX_LINE_BYTES) {
      this.logger.warn({ method, bytes }, 'an answer was longer than the line bound');
      return errorLine(idText, toJsonRpcError(answerTooLarge(bytes, false, answerHintFor(method))));
    }
    return batch === undefined ? line : this.admitToBatch(job, batch, line, bytes, idText, method);
  }

  private toError(method: string, error: unknown): JsonRpcErrorObject {
    logInternalFailure(this.logger, method, error);
    return toJsonRpcError(error);
  }

  private logNotificationFailure(method: string, error: unknown): undefined {
    if (!isBrokerError(error)) this.toError(method, error);
    return undefined;
  }

  private writeError(id: JsonRpcId, error: JsonRpcErrorObject): void {
    this.writer.write(errorLine(JSON.stringify(id), error));
  }
}

/** Bytes of `text` in UTF-8 (counted only when the length alone does not settle it). */
function utf8Bytes(text: string): number {
  return text.length * 3 <= MAX_LINE_BYTES ? text.length : Buffer.byteLength(text, 'utf8');
}

/** The method a request names, if it is a request object naming one. */
function methodOf(message: unknown): string | undefined {
  if (message === null || typeof message !== 'object') return undefined;
  const method = (message as { method?: unknown }).method;
  return typeof method === 'string' ? method : undefined;
}

/** How to ask a method for a smaller answer. */
/** What to do instead when a method's answer is longer than a line may be. */
export function answerHintFor(method: string | undefined): string {
  if (method === 'a2a.agents.list') return 'ask a2a.agents.list for smaller pages (limit) and follow nextCursor';
  if (method === 'a2a.events.since') return 'ask a2a.events.since for fewer events (limit)';
  return 'read the task with a2a.tasks.get and a smaller historyLength (a2a.message.send and a2a.tasks.status take historyLength too)';
}

/** The value of the bound a spent batch crossed. */
function maxOf(batch: BatchTally): number {
  return batch.spent === 'CONNECTION_ANSWER_BUDGET_BYTES' ? batch.maxBytes : batch.lineBytes;
}

/** True for a request whose numeric id `JSON.parse` may not have kept exactly. */
function needsRawId(message: unknown): boolean {
  if (message === null || typeof message !== 'object') return false;
  const id = (message as { id?: unknown }).id;
  return typeof id === 'number' && Number.isFinite(id) && !Number.isSafeInteger(id);
}

/** The id of an answer as JSON text: as written when `rawId` holds it, `null` for no valid id. */
function idTextOf(message: unknown, rawId: string | undefined): string {
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return 'null';
  const id = (message as { id?: unknown }).id;
  if (!isJsonRpcId(id)) return 'null';
  if (rawId !== undefined && typeof id === 'number') return rawId;
  return JSON.stringify(id);
}

function isJsonRpcId(value: unknown): value is JsonRpcId {
  return value === null || typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

function errorLine(idText: string, error: JsonRpcErrorObject): string {
  return `{"jsonrpc":"2.0","id":${idText},"error":${JSON.stringify(error)}}`;
}
