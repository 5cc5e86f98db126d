import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { CoordinatorGovernance } from '../../src/actors/coordinator/policies.js';
import {
  BRANCH_ATTRIBUTE,
  type CoordinatorInput,
  type Decision,
  type ItemView,
  PARENT_ATTRIBUTE,
  type SettleBody,
  type SpawnBody,
  type StartBody,
  ZERO_TREE_USAGE,
  decide,
} from '../../src/decisions/coordinator-decisions.js';
import { persistRun, restoreRun } from '../../src/machines/workflow-run-machine.js';
import type { ResultEnvelope } from '../../src/protocol/work-envelope.js';
import type { WorkflowDefinition } from '../../src/protocol/workflow.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import { parentOf } from '../../src/workflow/item-tree.js';
import type { AncestorRollup, ItemChanges, TreeUsage } from '../../src/workflow/records.js';

/**
 * Budgets over a tree of work items, at the level of the pure decisions: a
 * root over a child (over two grandchildren) and a leaf child, driven by
 * `decide` alone (no store: this file keeps what a store would, applying
 * each decision's `rollup`), with random results, duplicates, late results
 * after a cancel, cancels, the outbox rows carried out in random order, and
 * runs snapshotted and restored. After every step: each item's live rollup
 * is the sum of its subtree's own usage and hops, a hop starts only while
 * its item's own subtree and every ancestor's have budget left (children
 * still running count against their parent: a parent whose join went on
 * without a canceled child cannot spend what that child still charges), so
 * no budget is exceeded by more than one hop in flight per item under it, an ended item never moves, and
 * no hop's result is charged twice.
 */

/** The most tokens one result charges: the overrun one hop in flight can bring. */
const MAX_CHARGE = 30;

const leaf = parseWorkflowDefinition({
  id: 'leaf',
  version: 1,
  start: 'work',
  defaults: { retry: { maximumAttempts: 1 } },
  stages: { work: { role: 'w', maxVisits: 4, next: [{ on: 'succeeded', goto: 'work' }] } },
});
const mid = parseWorkflowDefinition({
  id: 'mid',
  version: 1,
  start: 'prep',
  defaults: { retry: { maximumAttempts: 1 } },
  stages: {
    prep: { role: 'w', next: [{ on: 'succeeded', goto: 'fan' }] },
    // One branch decides the join: the other is canceled, and may still charge while its parent goes on.
    fan: {
      parallel: {
        branches: { x: { workflow: 'leaf@1' }, y: { workflow: 'leaf@1' } },
        join: 'any',
        onBranchFailure: 'collect',
      },
      next: [{ on: 'succeeded', goto: 'wrap' }],
    },
    wrap: { role: 'w' },
  },
});
const root = parseWorkflowDefinition({
  id: 'root',
  version: 1,
  start: 'fan',
  stages: {
    fan: {
      parallel: {
        branches: { a: { workflow: 'mid@1' }, b: { workflow: 'leaf@1' } },
        join: 'all',
        onBranchFailure: 'collect',
      },
      next: [{ on: 'succeeded', goto: 'after' }],
    },
    after: { role: 'w' },
  },
});
const BY_REF: Record<string, WorkflowDefinition> = { 'leaf@1': leaf, 'mid@1': mid };
const governance = new CoordinatorGovernance({ knownRoles: ['w'], maxHops: 50 });

type Cmd =
  | { t: 'result'; pick: number; ok: boolean; tokens: number }
  | { t: 'again'; pick: number }
  | { t: 'deliver'; pick: number }
  | { t: 'cancel'; pick: number }
  | { t: 'restore'; pick: number };

const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      t: fc.constant('result' as const),
      pick: fc.nat(),
      ok: fc.integer({ min: 0, max: 9 }).map((n) => n < 7),
      tokens: fc.integer({ min: 0, max: MAX_CHARGE }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('again' as const), pick: fc.nat() }) },
  { weight: 6, arbitrary: fc.record({ t: fc.constant('deliver' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('cancel' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('restore' as const), pick: fc.nat() }) },
);

/** What a store keeps, as this model keeps it. */
class TreeModel {
  readonly views = new Map<string, ItemView>();
  readonly trees = new Map<string, TreeUsage>();
  /** Own tokens charged per item (its usage rows), and the usage rows per hop. */
  readonly ownTokens = new Map<string, number>();
  readonly rowsPerHop = new Map<string, number>();
  /** Own run hops per item: the distinct hops of its stage hop rows and of its spawns. */
  readonly ownHops = new Map<string, Set<number>>();
  /** Outbox rows not carried out yet. */
  readonly outbox: { itemId: string; kind: string; body: unknown }[] = [];
  /** Stage hops published (their start rows), results sent. */
  readonly started: { itemId: string; body: StartBody }[] = [];
  readonly sent: ResultEnvelope[] = [];
  /** The state and end time of each item once it ended. */
  readonly ended = new Map<string, { state: string; finishedAt: number }>();
  now = 1_000_000;
  #n = 0;

  env() {
    return { now: this.now, nextId: () => `id-${String(++this.#n).padStart(6, '0')}`, governance };
  }

  ancestors(parent: string | null): AncestorRollup[] {
    const out: AncestorRollup[] = [];
    for (let id = parent; id !== null; ) {
      const view = this.views.get(id);
      if (view === undefined) break;
      out.push({ id, budget: view.item.budget, tree: this.trees.get(id) ?? ZERO_TREE_USAGE });
      id = parentOf(view.item);
    }
    return out;
  }

  /** Decides one input with the ancestors a store would load, and applies the changes as a store would. */
  decide(view: ItemView | undefined, input: CoordinatorInput): Decision {
    const parent =
      input.kind === 'create' ? ((input.attributes?.[PARENT_ATTRIBUTE] as string | undefined) ?? null) : null;
    const ancestors = this.ancestors(view === undefined ? parent : parentOf(view.item));
    // A budgeted item's own subtree, live, as the engine reads it (a new item has none yet).
    const own =
      view !== undefined && view.item.budget !== null && view.item.finishedAt === null
        ? { tree: this.trees.get(view.item.id) ?? ZERO_TREE_USAGE }
        : {};
    const d =
      input.kind === 'create'
        ? decide(undefined, { ...input, ancestors }, this.env())
        : decide(view === undefined ? undefined : { ...view, ancestors, ...own }, input, this.env());
    if (d.changes !== null) {
      this.apply(d.changes);
      // A hop starts only while its item's own subtree and every ancestor's (this decision's charge counted)
      // have budget left: children still running count against their parent before they end.
      if (d.changes.hops.some((h) => h.created && h.hop.kind === 'stage')) {
        for (const a of this.ancestors(d.changes.itemId)) {
          const max = a.budget?.maxTokens;
          if (max !== undefined) expect(a.tree.usage.inputTokens + a.tree.usage.outputTokens).toBeLessThan(max);
        }
      }
    }
    if (d.view !== undefined && d.changes !== null) this.views.set(d.view.item.id, d.view);
    return d;
  }

  apply(c: ItemChanges): void {
    for (const row of c.usage) {
      this.ownTokens.set(row.itemId, (this.ownTokens.get(row.itemId) ?? 0) + row.inputTokens + row.outputTokens);
      this.rowsPerHop.set(row.hopId, (this.rowsPerHop.get(row.hopId) ?? 0) + 1);
    }
    const hops = this.ownHops.get(c.itemId) ?? new Set<number>();
    for (const { hop, created } of c.hops) if (created && hop.kind === 'stage') hops.add(hop.hop);
    for (const o of c.outbox) {
      if (o.kind === 'spawn') hops.add((o.body as SpawnBody).hop);
      if (o.kind === 'start') this.started.push({ itemId: c.itemId, body: o.body as StartBody });
      else this.outbox.push({ itemId: c.itemId, kind: o.kind, body: o.body });
    }
    this.ownHops.set(c.itemId, hops);
    if (c.rollup !== undefined) {
      for (const id of c.rollup.itemIds) {
        const t = this.trees.get(id) ?? ZERO_TREE_USAGE;
        this.trees.set(id, {
          usage: {
            inputTokens: t.usage.inputTokens + c.rollup.usage.inputTokens,
            outputTokens: t.usage.outputTokens + c.rollup.usage.outputTokens,
            costUsd: t.usage.costUsd + c.rollup.usage.costUsd,
            elapsedMs: t.usage.elapsedMs + c.rollup.usage.elapsedMs,
          },
          hops: t.hops + c.rollup.hops,
        });
      }
    }
  }

  /** The ids of the subtree under `id` (itself included), by the items' parent attributes. */
  subtree(id: string): string[] {
    const out = [id];
    for (const v of this.views.values()) {
      const p = parentOf(v.item);
      if (p !== null && out.includes(p) && !out.includes(v.item.id)) out.push(...this.subtree(v.item.id));
    }
    return [...new Set(out)];
  }
}

describe('budgets over a tree of work items: the pure decisions against a model', () => {
  test.prop(
    [fc.array(cmd, { minLength: 20, maxLength: 120 }), fc.option(fc.integer({ min: 10, max: 200 }), { nil: null })],
    { numRuns: 200 },
  )('rollups add up, budgets hold to one hop in flight, ended items stay ended', (cmds, maxTokens) => {
    const m = new TreeModel();
    const rootId = 'r';
    m.decide(undefined, {
      kind: 'create',
      itemId: rootId,
      taskId: null,
      definition: root,
      keepDefinition: false,
      input: [{ kind: 'text', text: 'go' }],
      budget: maxTokens === null ? null : { maxTokens },
      attributes: null,
    });

    for (const given of cmds) {
      m.now += 10;
      // A command with nothing to act on carries out an outbox row instead (the tree grows further).
      const out = m.started.filter((s) => m.views.get(s.itemId)?.hops.get(s.body.taskId)?.state === 'dispatched');
      const idle = (given.t === 'result' && out.length === 0) || (given.t === 'again' && m.sent.length === 0);
      const c: Cmd = idle ? { t: 'deliver', pick: given.pick } : given;
      const before = new Map([...m.views].map(([id, v]) => [id, v.item]));
      if (c.t === 'result' || c.t === 'again') {
        let result: ResultEnvelope | undefined;
        if (c.t === 'again') result = m.sent[c.pick % Math.max(1, m.sent.length)];
        else {
          // A hop still out (its row dispatched), of any item, ended or not (a late result).
          const s = out[c.pick % Math.max(1, out.length)];
          if (s !== undefined) {
            const headers = {
              taskId: s.body.taskId,
              runId: s.itemId,
              hop: s.body.hop,
              attempt: s.body.attempt,
              idempotencyKey: s.body.idempotencyKey,
            };
            const usage = { inputTokens: c.tokens, outputTokens: 0, costUsd: 0, model: 'm' };
            result = c.ok
              ? { kind: 'result', headers, role: 'w', outcome: 'completed', parts: [], artifacts: [], usage }
              : {
                  kind: 'result',
                  headers,
                  role: 'w',
                  outcome: 'failed',
                  parts: [],
                  artifacts: [],
                  usage,
                  error: { type: 'Boom', message: 'x' },
                  deliveries: 1,
                };
            m.sent.push(result);
          }
        }
        if (result === undefined) continue;
        m.decide(m.views.get(result.headers.runId), { kind: 'result', result });
      } else if (c.t === 'deliver') {
        if (m.outbox.length === 0) continue;
        const [row] = m.outbox.splice(c.pick % m.outbox.length, 1);
        if (row!.kind === 'spawn') {
          const body = row!.body as SpawnBody;
          if (m.views.has(body.childId)) continue;
          m.decide(undefined, {
            kind: 'create',
            itemId: body.childId,
            taskId: null,
            definition: body.definition ?? BY_REF[body.workflow!]!,
            keepDefinition: false,
            input: body.input,
            budget: body.budget,
            attributes: { [PARENT_ATTRIBUTE]: body.parentId, [BRANCH_ATTRIBUTE]: `${body.hop}:${body.branch}` },
            deadline: null,
          });
        } else if (row!.kind === 'settle') {
          const body = row!.body as SettleBody;
          const parent = m.views.get(body.parentId);
          if (parent !== undefined) m.decide(parent, { kind: 'child', settle: body });
        } else if (row!.kind === 'cancel-child') {
          const body = row!.body as { childId: string; reason: string };
          const child = m.views.get(body.childId);
          if (child !== undefined && child.item.finishedAt === null) {
            m.decide(child, { kind: 'cancel', by: null, reason: body.reason });
          }
        }
      } else if (c.t === 'cancel') {
        const live = [...m.views.values()].filter((v) => v.item.finishedAt === null);
        const v = live[c.pick % Math.max(1, live.length)];
        if (v !== undefined) m.decide(v, { kind: 'cancel', by: 'someone', reason: 'test' });
      } else if (c.t === 'restore') {
        // A run comes back from its snapshot (as JSON) and its definition.
        const live = [...m.views.values()].filter((v) => v.run !== null);
        const v = live[c.pick % Math.max(1, live.length)];
        if (v === undefined) continue;
        const snapshot = JSON.parse(JSON.stringify(persistRun(v.run!))) as { context: object };
        const run = restoreRun({
          ...snapshot,
          context: { ...snapshot.context, definition: v.run!.context.definition },
        });
        expect(run.value).toEqual(v.run!.value);
        m.views.set(v.item.id, { ...v, run });
      }

      for (const [id, view] of m.views) {
        const item = view.item;
        // An ended item never moves: its state and end stay as they were.
        const end = m.ended.get(id);
        if (end !== undefined) expect({ state: item.state, finishedAt: item.finishedAt }).toEqual(end);
        else if (item.finishedAt !== null) m.ended.set(id, { state: item.state, finishedAt: item.finishedAt });
        const was = before.get(id);
        if (was !== undefined && was.finishedAt !== null) expect(item.state).toBe(was.state);
        // Each item's live rollup is its subtree's own usage and hops, summed.
        const under = m.subtree(id);
        const tree = m.trees.get(id) ?? ZERO_TREE_USAGE;
        const own = under.reduce((s, x) => s + (m.ownTokens.get(x) ?? 0), 0);
        expect(tree.usage.inputTokens + tree.usage.outputTokens).toBe(own);
        expect(tree.hops).toBe(under.reduce((s, x) => s + (m.ownHops.get(x)?.size ?? 0), 0));
        // No budget exceeded by more than one hop in flight per item under it.
        const budget = item.budget?.maxTokens;
        if (budget !== undefined) expect(own).toBeLessThanOrEqual(budget + MAX_CHARGE * under.length);
      }
      // No hop's result charged twice.
      for (const count of m.rowsPerHop.values()) expect(count).toBe(1);
    }
  });
});
