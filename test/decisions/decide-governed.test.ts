import { describe, expect, it } from 'vitest';
import { decide } from '../../src/decisions/coordinator-decisions.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import { governanceCascade } from '../../src/workflow/governance-cascade.js';

/** `decide` asks nothing above it: it runs the cascade it is given and hands back each check it ran, for the caller to trace. */
describe('decide: the governance checks come back in the decision', () => {
  const definition = parseWorkflowDefinition({
    id: 'governed',
    version: 1,
    start: 'a',
    stages: { a: { role: 'ra', next: [{ on: 'succeeded', end: 'completed' }] } },
  });
  const create = (knownRoles: string[]) => {
    let n = 0;
    return decide(
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
      { now: 1_000, nextId: () => `id-${++n}`, governance: governanceCascade({ knownRoles }) },
    );
  };

  it('one check per governance audit row, with the hop it checked and the cascade verdicts', () => {
    const d = create(['ra']);
    const rows = (d.changes?.audit ?? []).filter((a) => a.kind === 'governance');
    expect(d.governed).toHaveLength(1);
    expect(rows).toHaveLength(1);
    const [check] = d.governed;
    expect(check?.ctx).toMatchObject({ itemId: 'item-1', stage: 'a', role: 'ra', hop: 1, attempt: 1 });
    expect(check?.decision.decision).toBe('allow');
    expect(check?.decision.verdicts).toEqual(rows[0]?.data.verdicts);
  });

  it('a denied hop is reported too', () => {
    const d = create(['rb']);
    expect(d.governed.map((g) => g.decision.decision)).toEqual(['deny']);
    expect(d.view?.item.state).toBe('failed');
  });
});
