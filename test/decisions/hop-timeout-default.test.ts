import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import {
  type CoordinatorInput,
  type ItemView,
  type StartBody,
  decide,
  hopTimeout,
  timerDue,
} from '../../src/decisions/coordinator-decisions.js';
import { timeoutMessage } from '../../src/machines/workflow-run-transitions.js';
import type { ResultEnvelope } from '../../src/protocol/work-envelope.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import { governanceCascade } from '../../src/workflow/governance-cascade.js';
import type { HopRecord } from '../../src/workflow/records.js';

/**
 * The deployment's default hop timeout (`DecisionEnv.hopTimeoutMs`), in the
 * pure decisions: a hop whose stage sets no `timeout` is re-published under
 * its key each time it is out longer than the default, and fails
 * (`HopTimedOut`) once its retry policy's attempts are used up; a stage's own
 * `timeout` wins; without a default (absent or 0) such a hop is never timed
 * out. `timerDue` (the engine's cheap look at the rows) says an item is due
 * exactly when the timer decision changes it.
 */
function definitionOf(maximumAttempts: number, stageTimeout: number | undefined) {
  return parseWorkflowDefinition({
    id: 'untimed',
    version: 1,
    start: 'a',
    defaults: { retry: { maximumAttempts, initialInterval: 0 } },
    stages: {
      a: {
        role: 'ra',
        ...(stageTimeout === undefined ? {} : { timeout: stageTimeout }),
        next: [{ on: 'succeeded', end: 'completed' }],
      },
    },
  });
}

const governance = governanceCascade({ knownRoles: ['ra', 'rq'] });

function harness(hopTimeoutMs: number | undefined) {
  let now = 1_000_000;
  let n = 0;
  const env = () => ({
    now,
    nextId: () => `id-${String(++n).padStart(6, '0')}`,
    governance,
    ...(hopTimeoutMs === undefined ? {} : { hopTimeoutMs }),
  });
  return {
    env,
    advance: (ms: number) => {
      now += ms;
    },
    now: () => now,
  };
}

function create(h: ReturnType<typeof harness>, definition: ReturnType<typeof definitionOf>): ItemView {
  const input: CoordinatorInput = {
    kind: 'create',
    itemId: 'item-1',
    taskId: null,
    definition,
    keepDefinition: true,
    input: [{ kind: 'text', text: 'go' }],
    budget: null,
    attributes: null,
  };
  return decide(undefined, input, h.env()).view!;
}

const out = (view: ItemView, kind: HopRecord['kind']) =>
  [...view.hops.values()].find((x) => x.kind === kind && x.state === 'dispatched');

describe('the default hop timeout in the decisions', () => {
  test.prop(
    [
      fc.integer({ min: 1, max: 4 }),
      fc.constantFrom(undefined, 0, 50, 1_000, 600_000),
      fc.option(fc.constantFrom(70, 2_000), { nil: undefined }),
      fc.array(fc.integer({ min: 1, max: 1_500_000 }), { minLength: 1, maxLength: 25 }),
    ],
    { numRuns: 200 },
  )(
    'a hop out past its timeout (its stage’s, else the default) is re-published until its attempts are used up, then fails',
    (maximumAttempts, hopTimeoutMs, stageTimeout, steps) => {
      const h = harness(hopTimeoutMs);
      const definition = definitionOf(maximumAttempts, stageTimeout);
      let view = create(h, definition);
      const first = out(view, 'stage')!;
      const timeout = stageTimeout ?? (hopTimeoutMs === 0 ? undefined : hopTimeoutMs);
      expect(hopTimeout(definition, 'a', hopTimeoutMs)).toBe(timeout);
      let republished = 0;
      for (const ms of steps) {
        h.advance(ms);
        const before = view;
        const hop = before.hops.get(first.id)!;
        const due = timerDue(before, h.now(), hopTimeoutMs);
        const d = decide(before, { kind: 'timer' }, h.env());
        // The engine decides only for items timerDue picks: those are exactly the ones the timer changes.
        expect(d.changes !== null).toBe(due);
        view = d.view ?? before;
        const after = view.hops.get(first.id)!;
        if (hop.state !== 'dispatched') {
          expect(due).toBe(false);
          continue;
        }
        const past = timeout !== undefined && h.now() >= hop.activeSince! + timeout * (hop.timeouts + 1);
        expect(due).toBe(past);
        if (!past) {
          expect(after).toEqual(hop);
          continue;
        }
        const timedOut = d.runEvents.find((e) => e.type === 'HOP_TIMED_OUT');
        expect(timedOut).toMatchObject({ timeouts: hop.timeouts + 1, timeoutMs: timeout });
        const rows = (d.changes?.audit ?? []).filter((r) => r.kind === 'timeout');
        if (hop.timeouts + 1 < maximumAttempts) {
          // Re-published as it went out: same key, the hop still out.
          republished += 1;
          expect(after).toMatchObject({ state: 'dispatched', timeouts: hop.timeouts + 1 });
          const starts = d.changes!.outbox.filter((o) => o.kind === 'start').map((o) => o.body as StartBody);
          expect(starts.map((b) => b.idempotencyKey)).toEqual([first.idempotencyKey]);
          expect(rows.map((r) => (r.data as { action: string }).action)).toEqual(['republished']);
          expect(rows[0]!.data).toMatchObject({ timeoutMs: timeout });
        } else {
          expect(after).toMatchObject({ state: 'failed', timeouts: hop.timeouts + 1, error: { type: 'HopTimedOut' } });
          expect(after.error!.message).toBe(
            `out longer than ${timeout} ms ${hop.timeouts + 1} times: its retry policy allows ${maximumAttempts}`,
          );
          expect(view.item).toMatchObject({ state: 'failed', failure: { code: 'RETRIES_EXHAUSTED' } });
          expect(rows.map((r) => (r.data as { action: string }).action)).toEqual(['failed']);
          expect(republished).toBe(maximumAttempts - 1);
        }
      }
      if (timeout === undefined) expect(view.hops.get(first.id)).toMatchObject({ state: 'dispatched', timeouts: 0 });
    },
  );

  it('a query asked by a stage with no timeout is re-published after the default, then fails as the answer', () => {
    const h = harness(1_000);
    let view = create(h, definitionOf(2, undefined));
    const hop = out(view, 'stage')!;
    const suspension: ResultEnvelope = {
      kind: 'result',
      headers: {
        taskId: hop.id,
        runId: view.item.id,
        hop: hop.hop,
        attempt: hop.attempt,
        idempotencyKey: hop.idempotencyKey,
      },
      role: 'ra',
      outcome: 'suspended',
      parts: [],
      artifacts: [],
      ask: { role: 'rq', continuationToken: 'tok-1', message: { parts: [{ kind: 'text', text: '?' }] } },
    };
    view = decide(view, { kind: 'result', result: suspension }, h.env()).view!;
    const query = out(view, 'query')!;
    h.advance(999);
    expect(timerDue(view, h.now(), 1_000)).toBe(false);
    h.advance(1);
    const again = decide(view, { kind: 'timer' }, h.env());
    expect(again.changes!.outbox.map((o) => (o.body as StartBody).idempotencyKey)).toEqual([query.idempotencyKey]);
    expect(again.view!.hops.get(query.id)).toMatchObject({ state: 'dispatched', timeouts: 1 });
    h.advance(1_000);
    const failed = decide(again.view!, { kind: 'timer' }, h.env());
    expect(failed.view!.hops.get(query.id)).toMatchObject({
      state: 'failed',
      error: { type: 'HopTimedOut', message: 'out longer than 1000 ms 2 times: the retry policy of stage a allows 2' },
    });
    // The hop that asked resumes with the failure as its answer.
    expect(failed.view!.hops.get(hop.id)?.state).toBe('dispatched');
  });

  it('an event of an earlier Coordinator (no timeoutMs) is told with its stage’s timeout', () => {
    const def = definitionOf(3, 250);
    expect(timeoutMessage(def, 'a', 3, 'hop')).toBe('out longer than 250 ms 3 times: its retry policy allows 3');
    expect(timeoutMessage(def, 'a', 3, 'hop', true, 9_000)).toBe(
      'out longer than 9000 ms 3 times: its retry policy allows 3',
    );
  });
});
