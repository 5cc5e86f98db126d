import { afterEach, describe, expect, it } from 'vitest';
import type { ItemStatus } from '../../src/actors/coordinator/types.js';
import { createModelAgent } from '../../src/agents/model-agent.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import { type Fixture, deployments, openFixture } from '../coordinator/helpers.js';
import { streamingModel } from './scripted-model.js';

// A model agent's answer streams to the human edge as the model writes it:
// artifact chunks of the hop go on the bus beside its result, and the
// Coordinator makes them events of the item (`watch`) and artifact updates
// of the item's A2A task. The model is the AI SDK's MockLanguageModelV3,
// streaming its answer in pieces (no hosted model is reached).

const answerOnce = parseWorkflowDefinition({
  id: 'answer-once',
  version: 1,
  title: 'one model agent answers',
  start: 'answer',
  stages: { answer: { role: 'writer', next: [{ on: 'succeeded', end: 'completed' }] } },
});

const PIECES = ['The health ', 'endpoint answers ', '200 with ', 'the build ', 'version.'];
const ANSWER = PIECES.join('');

describe("a model agent's answer, streamed", () => {
  let f: Fixture | undefined;
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  it('reaches watch(itemId) in order, each character once, and the item task as one artifact', async () => {
    const agent = createModelAgent({ model: streamingModel(PIECES, 40), ask: false });
    f = await openFixture({ definitions: [answerOnce], deployments: deployments({ writer: agent }) });
    const { coordinator } = f;
    const id = await coordinator.createWorkItem({ workflow: 'answer-once', input: 'Add a health endpoint' });
    const seen: ItemStatus[] = [];
    await new Promise<void>((resolve, reject) =>
      coordinator.watch(id).subscribe({ next: (s) => seen.push(s), error: reject, complete: resolve }),
    );
    expect(seen.at(-1)?.state).toBe('completed');
    const chunks = seen.filter((s) => s.event.kind === 'artifact-chunk').map((s) => s.event.artifact!);
    // Several chunks (the model wrote five pieces, 40 ms apart), in order, with no gap and no overlap.
    expect(chunks.length).toBeGreaterThan(1);
    let offset = 0;
    for (const [i, chunk] of chunks.entries()) {
      expect(chunk.offset).toBe(offset);
      expect(chunk.append).toBe(i > 0);
      expect(chunk.lastChunk).toBe(i === chunks.length - 1);
      expect(chunk.artifactId).toBe(chunks[0]!.artifactId);
      offset += chunk.text.length;
    }
    expect(chunks.map((c) => c.text).join('')).toBe(ANSWER);
    // Every chunk came before the hop's completion.
    const completedAt = seen.findIndex((s) => s.event.kind === 'hop-completed');
    expect(seen.findLastIndex((s) => s.event.kind === 'artifact-chunk')).toBeLessThan(completedAt);

    // The item's A2A task, as its requester reads it: the streamed artifact whole, then the item's output.
    await coordinator.mirrored();
    const item = (await coordinator.getItem(id))!;
    const requester = await coordinator.broker!.register({ name: 'edge', contextId: id, kind: 'parent' });
    const { task } = await coordinator.broker!.getTask({ token: requester.token, id: item.taskId! });
    const streamed = task.artifacts.find((a) => a.artifactId === chunks[0]!.artifactId);
    expect(streamed?.parts.map((p) => (p.kind === 'text' ? p.text : '')).join('')).toBe(ANSWER);
    expect(task.artifacts.find((a) => a.artifactId === 'item-output')?.parts).toEqual([{ kind: 'text', text: ANSWER }]);
    expect(task.status.state).toBe('completed');

    // What the requester waits on: its durable events carry the chunks as artifact updates, in order,
    // the first a new artifact, each after it appended, the last one ending it.
    const updates: { text: string; append: boolean; lastChunk: boolean }[] = [];
    for (let after = 0; ; ) {
      const page = await coordinator.broker!.eventsSince({ token: requester.token, after, limit: 100 });
      if (page.events.length === 0) break;
      for (const e of page.events) {
        after = e.seq;
        if (e.method !== 'a2a.task.event' || e.params.event.kind !== 'artifact-update') continue;
        const update = e.params.event;
        if (update.artifact.artifactId !== chunks[0]!.artifactId) continue;
        updates.push({
          text: update.artifact.parts.map((p) => (p.kind === 'text' ? p.text : '')).join(''),
          append: update.append ?? false,
          lastChunk: update.lastChunk ?? false,
        });
      }
    }
    expect(updates.length).toBeGreaterThan(1);
    expect(updates.map((u) => u.text).join('')).toBe(ANSWER);
    expect(updates.map((u) => u.append)).toEqual(updates.map((_, i) => i > 0));
    expect(updates.at(-1)?.lastChunk).toBe(true);
  }, 30_000);
});
