import { describe, expect, it } from 'vitest';
import { type RunState, initialRun, stepRun } from '../../src/machines/workflow-run-machine.js';
import { type RunEffect, WORKFLOW_RUN_TRANSITIONS, applyEffect } from '../../src/machines/workflow-run-transitions.js';
import type { WorkflowRunEvent } from '../../src/protocol/workflow.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';

/**
 * The transition table is the one place an effect meets an event: each row
 * names the event it takes and the effect that event has. `applyEffect`
 * given a pair no row makes (or a context in which the row's condition
 * cannot hold) is inert: it changes what every accepted move changes (the
 * usage, the cleared refusal) and nothing of what the effect is for. Checked
 * over every such pair, in every kind of context a run passes through.
 */

const definition = parseWorkflowDefinition({
  id: 'pairs',
  version: 1,
  start: 'plan',
  deadline: 60_000,
  stages: {
    plan: { role: 'lead', next: [{ on: 'succeeded', goto: 'fan' }] },
    fan: {
      parallel: { branches: { a: { role: 'w' }, b: { role: 'w' } } },
      next: [{ on: 'succeeded', goto: 'review' }],
    },
    review: { role: 'lead', approval: { approvers: ['chief'] } },
  },
});

const USAGE = { inputTokens: 3, outputTokens: 4, costUsd: 0.5, elapsedMs: 6 };

/** The runs compared: one in each kind of context (each state, a spawn asked for, a join open, a hop waiting on its own children). */
function runs(): Record<string, RunState> {
  const pending = initialRun({ runId: 'item', definition, deadline: { at: 5_000_000, ms: 60_000 } });
  const planning = stepRun(pending, { type: 'START' });
  const spawning = stepRun(planning, { type: 'HOP_SUCCEEDED', hop: 1, attempt: 1, output: { x: 1 } });
  const joining = stepRun(spawning, { type: 'CHILDREN_SPAWNED', hop: 2 });
  const gated = stepRun(
    stepRun(stepRun(joining, { type: 'CHILD_SETTLED', hop: 2, branch: 'a', outcome: 'completed', output: 1 }), {
      type: 'CHILD_SETTLED',
      hop: 2,
      branch: 'b',
      outcome: 'completed',
      output: 2,
    }),
    { type: 'TICK', now: 2_000 },
  );
  const asking = stepRun(planning, { type: 'HOP_SUSPENDED', hop: 1, attempt: 1, continuation: 'k1' });
  const parenting = stepRun(planning, {
    type: 'HOP_SUSPENDED',
    hop: 1,
    attempt: 1,
    continuation: 'k2',
    children: [{ key: 'c1' }, { key: 'c2' }],
  });
  const undated = stepRun(initialRun({ runId: 'item', definition }), { type: 'START' });
  const all = { pending, planning, spawning, joining, gated, asking, parenting, undated };
  for (const [name, run] of Object.entries(all)) {
    // Each context is the one its name says, or the comparison proves less than it claims.
    expect(run.context.refusal, name).toBeNull();
  }
  expect(spawning.context.directive.kind).toBe('spawn');
  expect(joining.context.join).not.toBeNull();
  expect(gated.value).toBe('awaiting-approval');
  expect(asking.value).toBe('suspended');
  expect(parenting.context.join).not.toBeNull();
  expect(undated.context.deadline).toBeNull();
  return all;
}

/** An event of each type, naming the context's current hop, attempt and (where it has one) continuation. */
function eventsFor(run: RunState): WorkflowRunEvent[] {
  const { hop, attempt } = run.context;
  const continuation = run.context.directive.kind === 'await-reply' ? run.context.directive.continuation : 'k';
  return [
    { type: 'START' },
    { type: 'HOP_SUCCEEDED', hop, attempt, usage: USAGE, output: { y: 2 } },
    { type: 'HOP_FAILED', hop, attempt, errorType: 'Boom', message: 'it broke', usage: USAGE },
    { type: 'CHILDREN_SPAWNED', hop },
    { type: 'CHILD_SETTLED', hop, branch: 'a', outcome: 'completed', output: 3, usage: USAGE, hops: 2 },
    { type: 'HOP_SUSPENDED', hop, attempt, continuation: 'k9', children: [{ key: 'z' }] },
    { type: 'HOP_RESUMED', hop, continuation, usage: USAGE },
    { type: 'APPROVAL_REQUIRED', hop, reason: 'a look', approvers: ['chief'] },
    { type: 'APPROVED', by: 'chief' },
    { type: 'DENIED', by: 'chief', reason: 'no' },
    { type: 'GOVERNANCE_DENIED', hop, reason: 'too much', policy: 'p' },
    { type: 'HOP_TIMED_OUT', hop, attempt, timeouts: 1, timeoutMs: 10 },
    { type: 'HOP_TIMED_OUT', hop, attempt, timeouts: 1, timeoutMs: 10, continuation, usage: USAGE },
    { type: 'TICK', now: 999_999 },
    { type: 'CANCEL', by: 'ops', reason: 'done' },
  ];
}

/** The effects that name the event they take (each but the routing ones, 'budget-exceeded' and 'none'). */
const GUARDED: RunEffect[] = [
  'suspend',
  'resume',
  'require-approval',
  'approve',
  'deny',
  'governance-deny',
  'deadline-exceeded',
  'republish',
  'settle-branch',
  'spawned',
  'resume-children',
  'cancel',
];

/** The event types each effect is paired with by some row of the table. */
function pairs(): Map<RunEffect, Set<string>> {
  const out = new Map<RunEffect, Set<string>>();
  for (const row of WORKFLOW_RUN_TRANSITIONS) {
    const types = out.get(row.effect) ?? new Set<string>();
    types.add(row.event);
    out.set(row.effect, types);
  }
  return out;
}

/** What an inert effect leaves: the move every accepted event makes ('none'), with a republished hop's usage not taken. */
function inert(run: RunState, event: WorkflowRunEvent, effect: RunEffect) {
  const none = applyEffect(run.context, event, 'none');
  return effect === 'republish' ? { ...none, usage: run.context.usage } : none;
}

describe('an effect given an event no row pairs it with', () => {
  const paired = pairs();

  it('every guarded effect is paired with at least one event, and none with all of them', () => {
    for (const effect of GUARDED) {
      const types = paired.get(effect);
      expect(types?.size, effect).toBeGreaterThan(0);
      expect(types!.size, effect).toBeLessThan(8);
    }
  });

  it('changes nothing an accepted move does not, in every kind of context', () => {
    let checked = 0;
    for (const [name, run] of Object.entries(runs())) {
      for (const event of eventsFor(run)) {
        for (const effect of GUARDED) {
          if (paired.get(effect)!.has(event.type)) continue;
          expect(applyEffect(run.context, event, effect), `${effect} on ${event.type} (${name})`).toEqual(
            inert(run, event, effect),
          );
          checked++;
        }
      }
    }
    // 8 contexts, 15 events, 12 effects, each effect paired with one to four of the 14 types.
    expect(checked).toBeGreaterThan(1_000);
  });

  it('follows no route on an event the table never routes', () => {
    const routed = new Set([...paired.get('follow-route')!, ...paired.get('enter-start')!]);
    expect([...routed].sort()).toEqual(['CHILD_SETTLED', 'HOP_FAILED', 'HOP_SUCCEEDED', 'HOP_TIMED_OUT', 'START']);
    for (const [name, run] of Object.entries(runs())) {
      for (const event of eventsFor(run)) {
        if (routed.has(event.type)) continue;
        for (const effect of ['follow-route', 'enter-start'] as const) {
          expect(applyEffect(run.context, event, effect), `${effect} on ${event.type} (${name})`).toEqual(
            inert(run, event, effect),
          );
        }
      }
    }
  });
});

describe('an effect on its own event where its row cannot hold', () => {
  const all = runs();
  const settle = (hop: number): WorkflowRunEvent => ({
    type: 'CHILD_SETTLED',
    hop,
    branch: 'a',
    outcome: 'completed',
    output: 1,
  });
  const cases: { name: string; run: RunState; event: WorkflowRunEvent; effect: RunEffect }[] = [
    // 'join-open' needs a join.
    { name: 'a settle without a join', run: all.planning!, event: settle(1), effect: 'settle-branch' },
    // 'join-decided' is taken only while the hop waits on its children (a reply awaited).
    {
      name: 'children ending while no reply is awaited',
      run: all.joining!,
      event: settle(2),
      effect: 'resume-children',
    },
    // 'current-spawn' needs a spawn asked for.
    {
      name: 'a spawn confirmed while the children are awaited already',
      run: all.joining!,
      event: { type: 'CHILDREN_SPAWNED', hop: 2 },
      effect: 'spawned',
    },
    {
      name: 'a spawn confirmed while a hop is out',
      run: all.planning!,
      event: { type: 'CHILDREN_SPAWNED', hop: 1 },
      effect: 'spawned',
    },
    // 'past-deadline' needs a deadline.
    {
      name: 'a tick without a deadline',
      run: all.undated!,
      event: { type: 'TICK', now: 10 ** 12 },
      effect: 'deadline-exceeded',
    },
    // 'current-timeout' resumes a hop only for its query's timeout (one with a continuation).
    {
      name: "a hop's own timeout (no continuation)",
      run: all.asking!,
      event: { type: 'HOP_TIMED_OUT', hop: 1, attempt: 1, timeouts: 1 },
      effect: 'resume',
    },
  ];

  for (const { name, run, event, effect } of cases) {
    it(`${effect}: ${name}`, () => {
      expect(applyEffect(run.context, event, effect)).toEqual(inert(run, event, effect));
    });
  }
});
