import { describe, expect, it } from 'vitest';
import { type ItemView, decide } from '../../src/decisions/coordinator-decisions.js';
import type { ResultEnvelope } from '../../src/protocol/work-envelope.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import { governanceCascade } from '../../src/workflow/governance-cascade.js';

/**
 * `decide` on a failed hop's result that names its dead letter: the dead
 * letter is purged (an outbox row, carried out after the commit) when the
 * run handles the failure on purpose, or when the item was canceled already;
 * it stays when the failure fails the item with nothing to handle it.
 */
describe('decide: the dead letter of a handled failure is purged', () => {
  const definition = parseWorkflowDefinition({
    id: 'routed',
    version: 1,
    start: 'a',
    stages: {
      a: {
        role: 'ra',
        next: [
          { on: 'succeeded', end: 'completed' },
          { on: 'failed', errorType: 'Routed', goto: 'b' },
          { on: 'failed', errorType: 'Ends', end: 'failed', reason: 'ended on purpose' },
        ],
      },
      b: { role: 'rb', next: [{ on: 'succeeded', end: 'completed' }] },
    },
  });
  let n = 0;
  const env = () => ({
    now: 1_000 + n,
    nextId: () => `id-${++n}`,
    governance: governanceCascade({ knownRoles: ['ra', 'rb'] }),
  });

  function created(): ItemView {
    const d = decide(
      undefined,
      {
        kind: 'create',
        itemId: 'item-1',
        taskId: null,
        definition,
        keepDefinition: false,
        input: [{ kind: 'text', text: 'go' }],
        budget: null,
        attributes: null,
      },
      env(),
    );
    return d.view!;
  }

  function failure(view: ItemView, type: string, deadLetter?: string): ResultEnvelope {
    const hop = [...view.hops.values()].find((h) => h.state === 'dispatched')!;
    return {
      kind: 'result',
      headers: {
        taskId: hop.id,
        runId: view.item.id,
        hop: hop.hop,
        attempt: hop.attempt,
        idempotencyKey: hop.idempotencyKey,
      },
      role: hop.role,
      outcome: 'failed',
      parts: [],
      artifacts: [],
      error: { type, message: 'it failed', stack: `${type}: it failed\n    at handler (file:///h.mjs:1:1)` },
      deliveries: 1,
      ...(deadLetter === undefined ? {} : { deadLetter }),
    };
  }

  const purges = (d: ReturnType<typeof decide>) =>
    (d.changes?.outbox ?? []).filter((row) => row.kind === 'purge-dead-letter').map((row) => row.body);

  it('a failure a next rule routes on: its dead letter is purged, and the hop keeps the stack', () => {
    const view = created();
    const d = decide(view, { kind: 'result', result: failure(view, 'Routed', '42') }, env());
    expect(d.handling).toBe('applied');
    expect(d.view?.item.stage).toBe('b');
    expect(purges(d)).toEqual([{ role: 'ra', id: '42' }]);
    const failed = [...d.view!.hops.values()].find((h) => h.state === 'failed');
    expect(failed?.error?.stack).toContain('at handler (file:///h.mjs:1:1)');
  });

  it('a failure a rule ends the item on is handled too', () => {
    const view = created();
    const d = decide(view, { kind: 'result', result: failure(view, 'Ends', '43') }, env());
    expect(d.view?.item.failure?.code).toBe('RULE_ENDED');
    expect(purges(d)).toEqual([{ role: 'ra', id: '43' }]);
  });

  it('a failure nothing routes fails the item and its dead letter stays', () => {
    const view = created();
    const d = decide(view, { kind: 'result', result: failure(view, 'Surprise', '44') }, env());
    expect(d.view?.item.state).toBe('failed');
    expect(d.view?.item.failure?.code).toBe('NON_RETRYABLE');
    expect(purges(d)).toEqual([]);
  });

  it("a canceled item's hop failing late: its dead letter is purged", () => {
    const view = created();
    const canceled = decide(view, { kind: 'cancel', by: 'ops', reason: 'not needed' }, env()).view!;
    expect(canceled.item.state).toBe('canceled');
    const d = decide(canceled, { kind: 'result', result: failure(view, 'Surprise', '45') }, env());
    expect(d.handling).toBe('late');
    expect(purges(d)).toEqual([{ role: 'ra', id: '45' }]);
  });

  it('a failure that names no dead letter purges nothing', () => {
    const view = created();
    const d = decide(view, { kind: 'result', result: failure(view, 'Routed') }, env());
    expect(d.view?.item.stage).toBe('b');
    expect(purges(d)).toEqual([]);
  });
});
