import { createHash } from 'node:crypto';
import type { WorkQueue } from '../../bus/work-queue.js';
import type { Logger } from '../../log/logger.js';
import {
  ARTIFACT_CHUNK_TYPE,
  type ArtifactChunk,
  MAX_CHUNK_CHARS,
  MAX_STREAMED_ARTIFACT_CHARS,
  chunkEnvelope,
  chunkKey,
} from '../../protocol/artifact-chunk.js';
import type { WorkHeaders } from '../../protocol/work-envelope.js';
import type { HopStream } from './handler.js';

/** The longest bus key kept as it is (longer ones are hashed). */
const MAX_KEY_CHARS = 200;
/** How long a hop's completion waits at most for its chunks still to be published. */
export const STREAM_FLUSH_MS = 2_000;

interface ArtifactState {
  /** Characters written so far (the next chunk's offset). */
  written: number;
  /** Text written but not yet published. */
  pending: string;
  name: string | undefined;
  ended: boolean;
  /** Whether the first chunk (with the name) went out. */
  named: boolean;
}

/**
 * The artifact chunks of one hop, on their way to the bus: text the handler
 * writes is published on the results role as chunks (`artifact-chunk.ts`),
 * one publish in flight at a time; what is written meanwhile joins the next
 * chunk (so a fast writer makes fewer, bigger chunks, each at most
 * `MAX_CHUNK_CHARS`). Writing never waits and never throws: a chunk the bus
 * refuses is dropped (logged), and an artifact past
 * `MAX_STREAMED_ARTIFACT_CHARS` streams no more.
 */
export class HopChunks implements HopStream {
  readonly #bus: WorkQueue;
  readonly #role: string;
  readonly #resultsRole: string;
  readonly #headers: WorkHeaders;
  readonly #log: Logger;
  readonly #artifacts = new Map<string, ArtifactState>();
  /** Artifacts with text (or an end) to publish, in the order they were written. */
  readonly #queue: string[] = [];
  #sending: Promise<void> | undefined;
  #closed = false;

  constructor(options: { bus: WorkQueue; role: string; resultsRole: string; headers: WorkHeaders; log: Logger }) {
    this.#bus = options.bus;
    this.#role = options.role;
    this.#resultsRole = options.resultsRole;
    this.#headers = options.headers;
    this.#log = options.log;
  }

  write(artifactId: string, text: string, options: { name?: string } = {}): void {
    if (this.#closed || typeof artifactId !== 'string' || artifactId.length === 0 || typeof text !== 'string') return;
    if (text.length === 0) return;
    const state = this.#state(artifactId, options.name);
    if (state.ended) return;
    const room = MAX_STREAMED_ARTIFACT_CHARS - state.written - state.pending.length;
    if (room <= 0) return;
    state.pending += text.length <= room ? text : text.slice(0, room);
    this.#enqueue(artifactId);
  }

  end(artifactId: string): void {
    if (this.#closed) return;
    const state = this.#artifacts.get(artifactId);
    if (state === undefined || state.ended) return;
    state.ended = true;
    this.#enqueue(artifactId);
  }

  /** Waits (at most `ms`) for what was written to be published; writes after it are dropped. */
  async flush(ms: number = STREAM_FLUSH_MS): Promise<void> {
    this.#closed = true;
    const sending = this.#sending;
    if (sending === undefined) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([sending, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
    clearTimeout(timer);
  }

  #state(artifactId: string, name: string | undefined): ArtifactState {
    let state = this.#artifacts.get(artifactId);
    if (state === undefined) {
      state = { written: 0, pending: '', name, ended: false, named: false };
      this.#artifacts.set(artifactId, state);
    }
    return state;
  }

  #enqueue(artifactId: string): void {
    if (!this.#queue.includes(artifactId)) this.#queue.push(artifactId);
    this.#sending ??= this.#send().finally(() => {
      this.#sending = undefined;
    });
  }

  /** Publishes chunks, one at a time, until nothing is left to send. */
  async #send(): Promise<void> {
    for (;;) {
      const artifactId = this.#queue[0];
      if (artifactId === undefined) return;
      const state = this.#artifacts.get(artifactId);
      if (state === undefined) {
        this.#queue.shift();
        continue;
      }
      const text = state.pending.slice(0, MAX_CHUNK_CHARS);
      state.pending = state.pending.slice(text.length);
      const last = state.ended && state.pending.length === 0;
      if (state.pending.length === 0) this.#queue.shift();
      const chunk: ArtifactChunk = {
        type: ARTIFACT_CHUNK_TYPE,
        itemId: this.#headers.runId,
        hop: this.#headers.hop,
        role: this.#role,
        artifactId,
        offset: state.written,
        text,
        lastChunk: last,
      };
      if (!state.named && state.name !== undefined) chunk.name = state.name;
      state.named = true;
      state.written += text.length;
      if (text.length === 0 && !last) continue;
      await this.#publish(chunk);
    }
  }

  async #publish(chunk: ArtifactChunk): Promise<void> {
    const key = chunkKey(this.#headers.idempotencyKey, chunk);
    const idempotencyKey =
      key.length <= MAX_KEY_CHARS ? key : `chunk:${createHash('sha256').update(key).digest('base64url')}`;
    try {
      await this.#bus.publish(this.#resultsRole, chunkEnvelope(this.#headers, chunk), { idempotencyKey });
    } catch (error) {
      this.#log.warn(
        { err: error, artifactId: chunk.artifactId, offset: chunk.offset },
        'an artifact chunk was dropped',
      );
    }
  }
}
