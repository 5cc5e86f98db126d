import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { ArtifactChunkReceiver } from '../../src/actors/coordinator/artifact-chunks.js';
import { ARTIFACT_CHUNK_TYPE, type ArtifactChunk } from '../../src/protocol/artifact-chunk.js';

// The Coordinator's side of streamed artifacts: chunks placed by their offset,
// so that a hop run again after a crash (streaming its text from the start)
// adds no text twice, a lost chunk leaves no gap, and nothing follows the end.

/** The chunks one run of a step sends: its text cut at `cuts`, the last one marked. */
function run(text: string, cuts: number[]): ArtifactChunk[] {
  const at = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
  const bounds = [0, ...at.filter((c) => c > 0 && c < text.length), text.length];
  const chunks: ArtifactChunk[] = [];
  for (let i = 0; i + 1 < bounds.length; i++) {
    chunks.push({
      type: ARTIFACT_CHUNK_TYPE,
      itemId: 'item-1',
      hop: 0,
      role: 'writer',
      artifactId: 'answer-0.1-model-0',
      offset: bounds[i]!,
      text: text.slice(bounds[i], bounds[i + 1]),
      lastChunk: i + 2 === bounds.length,
    });
  }
  return chunks;
}

describe('ArtifactChunkReceiver', () => {
  test.prop([
    fc.string({ minLength: 1, maxLength: 60 }),
    fc.array(fc.nat(), { maxLength: 8 }),
    fc.array(fc.nat(), { maxLength: 8 }),
    fc.nat(),
    fc.array(fc.boolean(), { maxLength: 16 }),
  ])(
    'a run cut short then run again: the chunks let out are the text, in order, each character once',
    (text, firstCuts, secondCuts, crashAt, lost) => {
      const receiver = new ArtifactChunkReceiver();
      const first = run(text, firstCuts);
      // The first run is killed after some of its chunks (never its last); some chunks of either run are lost.
      const sentFirst = first.slice(0, crashAt % first.length);
      const second = run(text, secondCuts);
      const out = [...sentFirst, ...second]
        .filter((_, i) => lost[i] !== true || i >= sentFirst.length + second.length - 1)
        .map((c) => receiver.accept(c))
        .filter((c) => c !== undefined);
      let offset = 0;
      for (const c of out) {
        expect(c.offset).toBe(offset);
        expect(c.append).toBe(offset > 0);
        offset += c.text.length;
      }
      const got = out.map((c) => c.text).join('');
      expect(text.startsWith(got)).toBe(true);
      // Nothing lost: the whole text, ended by the last chunk.
      if (!lost.some(Boolean)) {
        expect(got).toBe(text);
        expect(out.at(-1)?.lastChunk).toBe(true);
      }
    },
  );

  it('lets nothing out after the last chunk, and follows an ended item anew', () => {
    const receiver = new ArtifactChunkReceiver();
    const [only] = run('done', []);
    expect(receiver.accept(only!)).toMatchObject({ text: 'done', offset: 0, append: false, lastChunk: true });
    expect(receiver.accept(only!)).toBeUndefined();
    receiver.forget('item-1');
    expect(receiver.accept(only!)).toMatchObject({ text: 'done' });
  });
});
