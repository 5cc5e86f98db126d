import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fc } from '@fast-check/vitest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBroker } from '../../src/actors/broker/broker.js';
import type { V1Artifact, V1TaskState, V1TaskStatus } from '../../src/protocol/a2a-v1/schemas.js';
import { TaskMirror } from '../../src/remote/remote-task-mirror.js';
import type { SwitchboardClient } from '../../src/transport/client.js';
import { connectInProcess } from '../../src/transport/in-process.js';

// What a remote says about one task, in order: statuses and artifacts. The
// bridge sees the same thing again after a broken stream (a resubscribe
// answers the whole task first) and at every poll (the whole task each
// time); written into the local task through a TaskMirror, the local
// sender must see exactly what it sees when each is delivered once.

type Said = { status: { state: V1TaskState; text?: string } } | { artifact: { id: string; text: string } };

const LIVE: V1TaskState[] = ['TASK_STATE_WORKING', 'TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED'];
const ENDS: V1TaskState[] = ['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED'];

const said: fc.Arbitrary<Said> = fc.oneof(
  fc.record({
    status: fc.record({
      state: fc.constantFrom(...LIVE),
      text: fc.option(fc.constantFrom('a', 'b', 'c'), { nil: undefined }),
    }),
  }),
  fc.record({ artifact: fc.record({ id: fc.constantFrom('x', 'y', 'z'), text: fc.constantFrom('1', '2') }) }),
);

/** A remote's story: some statuses and artifacts, then (maybe) an end. */
const story = fc.tuple(
  fc.array(said, { maxLength: 8 }),
  fc.option(fc.record({ state: fc.constantFrom(...ENDS), text: fc.option(fc.constant('bye'), { nil: undefined }) }), {
    nil: undefined,
  }),
);

/** How each step is delivered: how many times, and whether a whole-task snapshot follows it. */
const delivery = fc.array(fc.record({ times: fc.integer({ min: 1, max: 3 }), snapshot: fc.boolean() }), {
  minLength: 9,
  maxLength: 9,
});

function v1Status(step: { state: V1TaskState; text?: string }, index: number, tag: string): V1TaskStatus {
  return step.text === undefined
    ? { state: step.state }
    : {
        state: step.state,
        message: { messageId: `${tag}-m${index}`, role: 'ROLE_AGENT', parts: [{ text: step.text }] },
      };
}

function v1Artifact(step: { id: string; text: string }): V1Artifact {
  return { artifactId: step.id, parts: [{ text: step.text }] };
}

describe('a TaskMirror writes what a remote says into the local task once, however often it is seen', () => {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-mirror-'));
  const broker = createBroker({ path: join(dir, 'broker.db') });
  let client: SwitchboardClient;
  let lead: string;
  let worker: string;
  let run = 0;

  beforeAll(async () => {
    client = (await connectInProcess(broker)).client;
    lead = (await client.register({ name: 'lead', contextId: 'local' })).token;
    worker = (await client.register({ name: 'far', contextId: 'remote' })).token;
  });

  afterAll(async () => {
    await client.close();
    await broker.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** What the local sender received about a task: each status and artifact, in order. */
  async function seen(taskId: string): Promise<string[]> {
    const { events } = await client.eventsSince({ token: lead, after: 0, limit: 1000 });
    const out: string[] = [];
    for (const event of events) {
      if (event.method !== 'a2a.task.event' || event.params.event.taskId !== taskId) continue;
      const e = event.params.event;
      const text = (parts: readonly { kind: string; text?: string }[] = []) =>
        parts.map((p) => (p.kind === 'text' ? p.text : '')).join('');
      if (e.kind === 'status-update') out.push(`${e.status.state}:${text(e.status.message?.parts)}`);
      if (e.kind === 'artifact-update') out.push(`artifact:${e.artifact.artifactId}:${text(e.artifact.parts)}`);
    }
    return out;
  }

  /** Tells a fresh local task the story; with `how`, each step as often as it says, with snapshots. */
  async function tell(steps: Said[], how?: { times: number; snapshot: boolean }[]): Promise<string[]> {
    const tag = `r${run++}`;
    const { task } = await client.send({ token: lead, to: 'far', message: { parts: [{ kind: 'text', text: tag }] } });
    const mirror = await TaskMirror.load(client, worker, task.id);
    let status: V1TaskStatus = { state: 'TASK_STATE_SUBMITTED' };
    const artifacts = new Map<string, V1Artifact>();
    for (const [index, step] of steps.entries()) {
      const times = how?.[index]?.times ?? 1;
      for (let i = 0; i < times; i++) {
        if ('status' in step) {
          status = v1Status(step.status, index, tag);
          await mirror.status(status);
        } else {
          if (!artifacts.has(step.artifact.id)) artifacts.set(step.artifact.id, v1Artifact(step.artifact));
          await mirror.artifact(v1Artifact(step.artifact));
        }
      }
      if (how?.[index]?.snapshot) {
        await mirror.whole({ id: 'remote', contextId: 'remote', status, artifacts: [...artifacts.values()] });
      }
    }
    return seen(task.id);
  }

  it('delivered again and again, with whole-task snapshots between, it reads as delivered once', async () => {
    await fc.assert(
      fc.asyncProperty(story, delivery, async ([middle, end], how) => {
        const steps: Said[] = end === undefined ? middle : [...middle, { status: end }];
        const once = await tell(steps);
        const again = await tell(steps, how);
        expect(again).toEqual(once);
        // Nothing twice: no artifact id written twice, no status repeated with the same state and message.
        const artifactIds = once.filter((s) => s.startsWith('artifact:')).map((s) => s.split(':')[1]);
        expect(new Set(artifactIds).size).toBe(artifactIds.length);
        for (let i = 1; i < once.length; i++) {
          if (!once[i]?.startsWith('artifact:')) expect(once[i] === once[i - 1] && once[i]?.endsWith(':')).toBe(false);
        }
      }),
      { numRuns: 40 },
    );
  }, 120_000);
});
