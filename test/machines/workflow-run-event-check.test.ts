import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { type AnyMachineSnapshot, createActor, initialTransition, transition } from 'xstate';
import { initialRun, runStateOf, stepRun, workflowRunMachine } from '../../src/machines/workflow-run-machine.js';
import type { WorkflowRunContext } from '../../src/machines/workflow-run-transitions.js';
import { WorkflowRunEventSchema } from '../../src/protocol/workflow.js';
import { DEV_SDLC } from '../workflow/fixtures.js';

/** The run machine's check of an event's shape is `WorkflowRunEventSchema`: it refuses exactly what the schema refuses. */

const value = fc.oneof(
  fc.anything(),
  fc.constantFrom(undefined, null, -1, 0, -0, 1, 2, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, '1', {}, []),
);
const usage = fc.oneof(
  fc.record(
    { inputTokens: value, outputTokens: value, costUsd: value, elapsedMs: value, extra: value },
    { requiredKeys: [] },
  ),
  fc.record({
    inputTokens: fc.nat(),
    outputTokens: fc.nat(),
    costUsd: fc.double({ min: 0, noNaN: true }),
    elapsedMs: fc.double({ min: 0, noNaN: true }),
  }),
  value,
);
const eventLike = fc.record(
  {
    type: fc.oneof(fc.constantFrom('START', 'HOP_SUCCEEDED', 'HOP_FAILED', 'CANCEL'), fc.string()),
    hop: fc.oneof(fc.integer({ min: -2, max: 5 }), value),
    attempt: fc.oneof(fc.integer({ min: -2, max: 5 }), value),
    usage,
    extra: value,
  },
  // XState delivers only events with a string type: the rest may be missing.
  { requiredKeys: ['type'] },
);

const [pending] = initialTransition(workflowRunMachine, { runId: 'item-1', definition: DEV_SDLC });
const [running] = transition(workflowRunMachine, pending, { type: 'START' });

function refusalOf(snapshot: AnyMachineSnapshot, event: unknown): WorkflowRunContext['refusal'] {
  const [next] = transition(workflowRunMachine, snapshot as typeof pending, event as never);
  return next.context.refusal;
}

describe('the run machine event check', () => {
  test.prop([eventLike, fc.boolean()], { numRuns: 500 })(
    'refuses as malformed exactly what the schema refuses, in any state',
    (event, started) => {
      if (event.type === '*') {
        // XState reserves the wildcard type and throws before any guard runs; the schema refuses it too, and the
        // Coordinator sends only events it built (never one of this type).
        expect(() => refusalOf(started ? running : pending, event)).toThrow(/wildcard/);
        expect(WorkflowRunEventSchema.safeParse(event).success).toBe(false);
        return;
      }
      const refusal = refusalOf(started ? running : pending, event);
      expect(refusal?.reason === 'malformed').toBe(!WorkflowRunEventSchema.safeParse(event).success);
    },
  );

  it('the wildcard type, which XState reserves: sending it throws, and the schema refuses it', () => {
    for (const snapshot of [pending, running]) {
      expect(() => refusalOf(snapshot, { type: '*' })).toThrow(/wildcard/);
    }
    expect(WorkflowRunEventSchema.safeParse({ type: '*' }).success).toBe(false);
  });

  it('accepts the events of every hop', () => {
    const usage = { inputTokens: 100, outputTokens: 20, costUsd: 0.0001, elapsedMs: 3 };
    expect(refusalOf(pending, { type: 'START' })).toBeNull();
    for (const event of [
      { type: 'START' },
      { type: 'HOP_SUCCEEDED', hop: 1, attempt: 1 },
      { type: 'HOP_SUCCEEDED', hop: 4, attempt: 2, usage },
    ]) {
      expect(WorkflowRunEventSchema.safeParse(event).success).toBe(true);
      expect(refusalOf(running, event)?.reason).not.toBe('malformed');
    }
    expect(refusalOf(running, { type: 'HOP_SUCCEEDED', hop: 1, attempt: 1, usage })).toBeNull();
    for (const event of [
      { type: 'START', hop: 1 },
      { type: 'HOP_SUCCEEDED', hop: 0, attempt: 1 },
      { type: 'HOP_SUCCEEDED', hop: 1, attempt: 1, usage: { ...usage, costUsd: -1 } },
      { type: 'HOP_SUCCEEDED', hop: 1, attempt: 1, note: 'x' },
    ]) {
      expect(refusalOf(running, event)?.reason).toBe('malformed');
      expect(WorkflowRunEventSchema.safeParse(event).success).toBe(false);
    }
  });
});

/** `stepRun`, the same machine as a pure function, checks an event's shape the same way: by the schema, first. */
describe('the run machine event check, stepped', () => {
  const runPending = initialRun({ runId: 'item-1', definition: DEV_SDLC });
  const runRunning = stepRun(runPending, { type: 'START' });

  test.prop([eventLike, fc.boolean()], { numRuns: 500 })(
    'refuses as malformed exactly what the schema refuses, and a malformed event changes nothing but the refusal',
    (event, started) => {
      const before = started ? runRunning : runPending;
      const after = stepRun(before, event as never);
      const malformed = !WorkflowRunEventSchema.safeParse(event).success;
      expect(after.context.refusal?.reason === 'malformed').toBe(malformed);
      if (malformed) {
        expect(after.value).toBe(before.value);
        expect({ ...after.context, refusal: null }).toEqual({ ...before.context, refusal: null });
        expect(after.context.refusal).toEqual({ event: event.type, state: before.value, reason: 'malformed' });
      }
    },
  );

  it('a well-named event of a taken type with a field the schema refuses moves nothing (a CANCEL by a number)', () => {
    const after = stepRun(runRunning, { type: 'CANCEL', by: 42 } as never);
    expect(after.value).toBe('running');
    expect(after.context.refusal).toEqual({ event: 'CANCEL', state: 'running', reason: 'malformed' });
    // The same event well formed is taken.
    expect(stepRun(runRunning, { type: 'CANCEL', by: 'ops' }).value).toBe('canceled');
  });

  it('names an event without a string type by String, as malformed', () => {
    for (const [event, name] of [
      [null, 'null'],
      [undefined, 'undefined'],
      [42, '42'],
      ['START', 'START'],
      [{ type: 7 }, '[object Object]'],
      [{}, '[object Object]'],
    ] as const) {
      const after = stepRun(runRunning, event as never);
      expect(after.value).toBe('running');
      expect(after.context.refusal).toEqual({ event: name, state: 'running', reason: 'malformed' });
    }
  });

  it('the actor names a refused event by its type, as stepRun does', () => {
    const [next] = transition(workflowRunMachine, running, { type: 'CANCEL', by: 42 } as never);
    expect(next.context.refusal).toEqual({ event: 'CANCEL', state: 'running', reason: 'malformed' });
    const [late] = transition(workflowRunMachine, running, { type: 'HOP_SUCCEEDED', hop: 9, attempt: 1 });
    expect(late.context.refusal).toEqual({ event: 'HOP_SUCCEEDED', state: 'running', reason: 'stale-hop' });
  });

  it('runStateOf reads the state of a live snapshot and of a persisted one', () => {
    expect(runStateOf(running)).toBe('running');
    expect(runStateOf(pending)).toBe('pending');
    const actor = createActor(workflowRunMachine, { input: { runId: 'item-2', definition: DEV_SDLC } });
    actor.start();
    actor.send({ type: 'START' });
    actor.send({ type: 'CANCEL', by: 'ops' });
    const persisted = JSON.parse(JSON.stringify(actor.getPersistedSnapshot()));
    expect(runStateOf(persisted)).toBe('canceled');
    actor.stop();
  });
});
