import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { CoordinatorGovernance } from '../../src/actors/coordinator/policies.js';
import { type CoordinatorInput, type DecisionEnv, decide } from '../../src/decisions/coordinator-decisions.js';
import type { Part } from '../../src/protocol/parts.js';
import type { WorkflowDefinition } from '../../src/protocol/workflow.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import type { AncestorRollup } from '../../src/workflow/records.js';

/**
 * The rules of a work item's creation as `decide` writes it, each stated on
 * its own: its row (as given, nothing spent, not ended, not mirrored yet),
 * its audit entry and event, its run started at the stage asked for (else
 * the definition's start) with the earlier of its own and its inherited
 * deadline, its ancestors kept, and its definition kept when asked.
 */

const ROLES = ['a', 'b', 'c'];
const NOW = 5_000_000;

type CreateInput = Extract<CoordinatorInput, { kind: 'create' }>;

function env(): DecisionEnv {
  let n = 0;
  return {
    now: NOW,
    nextId: () => `id-${++n}`,
    governance: new CoordinatorGovernance({ knownRoles: ROLES, maxHops: 100 }),
  };
}

/** A sequence of role stages s0 → s1 → …, with or without a deadline of its own. */
const definitionArb: fc.Arbitrary<WorkflowDefinition> = fc
  .record({
    id: fc.stringMatching(/^[a-z][a-z0-9-]{0,7}$/),
    version: fc.integer({ min: 1, max: 9 }),
    roles: fc.array(fc.constantFrom(...ROLES), { minLength: 1, maxLength: 4 }),
    deadline: fc.option(fc.integer({ min: 1, max: 100_000 }), { nil: undefined }),
  })
  .map(({ id, version, roles, deadline }) => {
    const stages: Record<string, object> = {};
    roles.forEach((role, i) => {
      stages[`s${i}`] = { role, ...(i + 1 < roles.length ? { next: [{ on: 'succeeded', goto: `s${i + 1}` }] } : {}) };
    });
    return parseWorkflowDefinition({
      id,
      version,
      start: 's0',
      stages,
      ...(deadline === undefined ? {} : { deadline }),
    });
  });

const partArb: fc.Arbitrary<Part> = fc.oneof(
  fc.string({ minLength: 1, maxLength: 6 }).map((text): Part => ({ kind: 'text', text })),
  fc
    .dictionary(fc.string({ minLength: 1, maxLength: 3 }), fc.integer(), { maxKeys: 2 })
    .map((data): Part => ({ kind: 'data', data })),
);

const ancestorArb: fc.Arbitrary<AncestorRollup> = fc.record({
  id: fc.stringMatching(/^[a-z]{1,4}$/),
  budget: fc.constant(null),
  tree: fc.record({
    usage: fc.record({
      inputTokens: fc.nat({ max: 100 }),
      outputTokens: fc.nat({ max: 100 }),
      costUsd: fc.constant(0),
      elapsedMs: fc.nat({ max: 100 }),
    }),
    hops: fc.nat({ max: 10 }),
  }),
});

/**
 * A create input on a definition: an inherited deadline or none (at times at
 * the very instant of the definition's own, with another duration), a stage
 * to start at or none, ancestors or none.
 */
const createArb: fc.Arbitrary<CreateInput> = definitionArb.chain((definition) => {
  const stages = Object.keys(definition.stages);
  const own = definition.deadline;
  const inheritedAt =
    own === undefined
      ? fc.integer({ min: NOW + 1, max: NOW + 100_000 })
      : fc.oneof(fc.constant(NOW + own), fc.integer({ min: NOW + 1, max: NOW + 100_000 }));
  return fc
    .record(
      {
        itemId: fc.stringMatching(/^[a-z0-9]{1,8}$/),
        taskId: fc.option(fc.stringMatching(/^t-[a-z0-9]{1,6}$/), { nil: null }),
        keepDefinition: fc.boolean(),
        input: fc.array(partArb, { maxLength: 3 }),
        budget: fc.option(fc.record({ maxTokens: fc.integer({ min: 1_000, max: 9_000 }) }), { nil: null }),
        attributes: fc.option(fc.dictionary(fc.stringMatching(/^[a-z]{1,4}$/), fc.oneof(fc.string(), fc.integer())), {
          nil: null,
        }),
        deadline: fc.option(
          fc.option(fc.record({ at: inheritedAt, ms: fc.integer({ min: 1, max: 100_000 }) }), { nil: null }),
          { nil: undefined },
        ),
        startStage: fc.option(fc.constantFrom(...stages), { nil: undefined }),
        ancestors: fc.option(fc.array(ancestorArb, { minLength: 1, maxLength: 3 }), { nil: undefined }),
      },
      { requiredKeys: ['itemId', 'taskId', 'keepDefinition', 'input', 'budget', 'attributes'] },
    )
    .map((r): CreateInput => ({ kind: 'create', definition, ...r }));
});

describe("a work item's creation", () => {
  test.prop([createArb])(
    'its row is the input as given, with nothing spent, not ended and not mirrored yet',
    (input) => {
      const d = decide(undefined, input, env());
      expect(d.handling).toBe('applied');
      expect(d.refusal).toBeUndefined();
      expect(d.changes?.created).toBe(true);
      const item = d.changes!.item;
      expect(item).toEqual(d.view!.item);
      expect(item).toMatchObject({
        id: input.itemId,
        taskId: input.taskId,
        workflow: { id: input.definition.id, version: input.definition.version },
        input: input.input,
        budget: input.budget,
        attributes: input.attributes,
        usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, elapsedMs: 0 },
        createdAt: NOW,
        updatedAt: NOW,
        finishedAt: null,
        output: null,
        approval: null,
        mirrored: false,
      });
      expect(item.workflow).toEqual({ id: input.definition.id, version: input.definition.version });
    },
  );

  test.prop([createArb])(
    'its first audit entry is its creation by the edge: the workflow, the budget, how many input parts, the stage asked for',
    (input) => {
      const d = decide(undefined, input, env());
      expect(d.changes!.audit[0]).toEqual({
        kind: 'item-created',
        itemId: input.itemId,
        actor: 'edge',
        data: {
          workflow: { id: input.definition.id, version: input.definition.version },
          budget: input.budget,
          inputParts: input.input.length,
          ...(input.startStage === undefined ? {} : { startStage: input.startStage }),
        },
      });
      expect(d.changes!.audit.filter((e) => e.kind === 'item-created')).toHaveLength(1);
    },
  );

  test.prop([createArb])(
    "its first event says it was created, on which workflow and version, at the decision's time",
    (input) => {
      const d = decide(undefined, input, env());
      expect(d.events[0]).toMatchObject({
        kind: 'created',
        itemId: input.itemId,
        hop: null,
        detail: `work item created on ${input.definition.id}@${input.definition.version}`,
        at: NOW,
      });
    },
  );

  test.prop([createArb])(
    "its run starts at once, at the stage asked for, else the definition's start, and refuses nothing",
    (input) => {
      const d = decide(undefined, input, env());
      expect(d.refused).toEqual([]);
      expect(d.runEvents[0]).toEqual(
        input.startStage === undefined ? { type: 'START' } : { type: 'START', stage: input.startStage },
      );
      const stage = input.startStage ?? input.definition.start;
      expect(d.changes!.item.state).toBe('running');
      expect(d.changes!.item.stage).toBe(stage);
      expect(d.changes!.item.hop).toBe(1);
      expect(d.changes!.outbox.filter((o) => o.kind === 'start')).toHaveLength(1);
      expect((d.changes!.outbox[0]!.body as { role: string }).role).toBe(input.definition.stages[stage]!.role);
    },
  );

  test.prop([createArb])(
    "its run's deadline is the earlier of its definition's (from now) and the one it inherits; at the same instant, its own",
    (input) => {
      const d = decide(undefined, input, env());
      const own =
        input.definition.deadline === undefined
          ? null
          : { at: NOW + input.definition.deadline, ms: input.definition.deadline };
      const inherited = input.deadline ?? null;
      const want = own === null ? inherited : inherited === null ? own : inherited.at < own.at ? inherited : own;
      expect(d.view!.run!.context.deadline).toEqual(want);
    },
  );

  test.prop([createArb])('a child keeps its ancestors, parent first; a root has none', (input) => {
    const d = decide(undefined, input, env());
    expect(d.view!.ancestors?.map((a) => a.id)).toEqual(input.ancestors?.map((a) => a.id));
    // Its first hop is charged to each of them.
    expect(d.changes!.rollup?.itemIds).toEqual([input.itemId, ...(input.ancestors ?? []).map((a) => a.id)]);
  });

  test.prop([createArb])('its definition is kept with it when asked (its first item), else not', (input) => {
    const d = decide(undefined, input, env());
    expect(d.changes!.definition).toEqual(
      input.keepDefinition
        ? { ref: { id: input.definition.id, version: input.definition.version }, body: input.definition }
        : undefined,
    );
  });
});
