import type { ArtifactChunk } from '../../protocol/artifact-chunk.js';
import type { ItemEvent } from '../../workflow/records.js';

/** A chunk as it goes out: the part of its text the receiver did not have yet. */
export type ChunkOut = NonNullable<ItemEvent['artifact']>;

/** The most artifacts followed at once (the oldest is forgotten past it). */
const MAX_FOLLOWED = 10_000;

/**
 * What the Coordinator has of each artifact streamed by chunks: how much
 * text, and whether it ended. A chunk is placed by its `offset`: what the
 * receiver already has is dropped (a chunk sent again after a redelivered hop
 * ran its step again), a chunk that would leave a gap is dropped (one before
 * it was lost), and nothing comes after an artifact's last chunk. So the
 * chunks let out for an artifact are its text, in order, each character once.
 * Memory only: after a restart an artifact is followed anew.
 */
export class ArtifactChunkReceiver {
  readonly #artifacts = new Map<string, { length: number; ended: boolean }>();

  /** The part of the chunk to let out, or undefined when there is none. */
  accept(chunk: ArtifactChunk): ChunkOut | undefined {
    const key = `${chunk.itemId}\n${chunk.artifactId}`;
    const known = this.#artifacts.get(key) ?? { length: 0, ended: false };
    if (known.ended || chunk.offset > known.length) return undefined;
    const end = chunk.offset + chunk.text.length;
    if (end < known.length || (end === known.length && !chunk.lastChunk)) return undefined;
    const text = chunk.text.slice(known.length - chunk.offset);
    const out: ChunkOut = {
      artifactId: chunk.artifactId,
      text,
      offset: known.length,
      append: known.length > 0,
      lastChunk: chunk.lastChunk,
    };
    if (chunk.name !== undefined) out.name = chunk.name;
    this.#artifacts.delete(key);
    this.#artifacts.set(key, { length: end, ended: chunk.lastChunk });
    if (this.#artifacts.size > MAX_FOLLOWED) {
      const oldest = this.#artifacts.keys().next().value;
      if (oldest !== undefined) this.#artifacts.delete(oldest);
    }
    return out;
  }

  /** Forgets an item's artifacts (it ended). */
  forget(itemId: string): void {
    const prefix = `${itemId}\n`;
    for (const key of this.#artifacts.keys()) if (key.startsWith(prefix)) this.#artifacts.delete(key);
  }
}
