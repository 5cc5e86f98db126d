import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { CoordinatorStore, CoordinatorTables } from '../../src/persistence/coordinator/coordinator-store.js';
import type { AuditEntryInput } from '../../src/protocol/audit.js';
import { type HopRecord, type ItemChanges, type ItemRecord, dispatchedHop } from '../../src/workflow/records.js';

/**
 * The contract every `CoordinatorStore` keeps. A store's test file calls
 * `runCoordinatorStoreContract(name, factory)`; nothing here knows how a store
 * keeps anything: it only commits batches of decided changes and loads them
 * back (and reads the audit entries the store appended, through the factory).
 */

export interface ContractStore {
  store: CoordinatorStore & CoordinatorTables;
  /** The audit entries committed so far, in order (kind and item). */
  audit(): Promise<{ kind: string; itemId: string | null }[]>;
  /** How many times the head was signed (a checkpoint in the commit of an item's end). */
  checkpoints(): number;
  /** Another handle onto the same data, as after a restart. */
  reopen(): Promise<CoordinatorStore>;
  /** Closes and removes everything the factory opened. */
  cleanup(): Promise<void>;
}

export type CoordinatorStoreFactory = () => Promise<ContractStore>;

const ZERO = { inputTokens: 0, outputTokens: 0, costUsd: 0, elapsedMs: 0 };

export function item(id: string, extra: Partial<ItemRecord> = {}): ItemRecord {
  return {
    id,
    taskId: `task-${id}`,
    workflow: { id: 'wf', version: 1 },
    state: 'running',
    stage: 'plan',
    hop: 1,
    hops: 1,
    input: [{ kind: 'text', text: `input of ${id}` }],
    budget: { maxTokens: 1000 },
    attributes: { team: 'a' },
    usage: { ...ZERO },
    failure: null,
    approval: null,
    createdAt: 1000,
    updatedAt: 1000,
    finishedAt: null,
    output: null,
    mirrored: false,
    ...extra,
  };
}

function hop(itemId: string, n: number, extra: Partial<HopRecord> = {}): HopRecord {
  return {
    ...dispatchedHop({
      id: `${itemId}-hop-${n}`,
      itemId,
      seq: n,
      hop: n,
      attempt: 1,
      kind: 'stage',
      stage: 'plan',
      role: 'planner',
      idempotencyKey: `${itemId}/${n}/1`,
      continuation: null,
      askedBy: null,
      dispatchedAt: 1000,
      activeSince: 1000,
    }),
    ...extra,
  };
}

function audit(kind: AuditEntryInput['kind'], itemId: string): AuditEntryInput {
  return { kind, itemId, actor: 'coordinator', data: { n: 1 } };
}

export function created(id: string): ItemChanges {
  const h = hop(id, 1);
  return {
    itemId: id,
    definition: { ref: { id: 'wf', version: 1 }, body: { id: 'wf', version: 1, stages: {} } },
    item: item(id),
    created: true,
    run: { machineVersion: 1, snapshot: { value: 'running', context: { runId: id } } },
    hops: [{ hop: h, created: true }],
    usage: [],
    outbox: [{ kind: 'start', body: { role: 'planner', taskId: h.id } }],
    audit: [audit('item-created', id), audit('dispatch', id)],
    ended: false,
  };
}

export function runCoordinatorStoreContract(name: string, factory: CoordinatorStoreFactory): void {
  describe(`CoordinatorStore contract: ${name}`, () => {
    let s: ContractStore | undefined;
    afterEach(async () => {
      await s?.cleanup();
      s = undefined;
    });

    it('commits an item with its hops, run, outbox and audit; loads them back, also from another handle', async () => {
      s = await factory();
      const { store } = s;
      const committed = await store.commit({ changes: [created('a')], deleteOutbox: [] });
      expect(committed.outbox).toHaveLength(1);
      expect(committed.outbox[0]).toEqual([
        { id: expect.any(Number), itemId: 'a', kind: 'start', body: { role: 'planner', taskId: 'a-hop-1' } },
      ]);
      const loaded = await store.loadItem('a');
      // Every field as committed (the new item's row is written whole, in one statement).
      expect(loaded?.item).toEqual(created('a').item);
      expect(loaded?.item.input).toEqual([{ kind: 'text', text: 'input of a' }]);
      expect(loaded?.item.budget).toEqual({ maxTokens: 1000 });
      expect(loaded?.hops).toEqual([hop('a', 1)]);
      expect(loaded?.run).toEqual({ machineVersion: 1, snapshot: { value: 'running', context: { runId: 'a' } } });
      expect((await store.loadLive()).map((x) => x.item.id)).toEqual(['a']);
      expect(await store.loadOutbox()).toEqual(committed.outbox[0]);
      expect(await store.loadDefinition({ id: 'wf', version: 1 })).toEqual({ id: 'wf', version: 1, stages: {} });
      expect(await store.loadDefinition({ id: 'wf', version: 2 })).toBeUndefined();
      expect(await s.audit()).toEqual([
        { kind: 'item-created', itemId: 'a' },
        { kind: 'dispatch', itemId: 'a' },
      ]);
      const other = await s.reopen();
      expect((await other.loadItem('a'))?.hops).toEqual([hop('a', 1)]);
      expect(await store.loadItem('nope')).toBeUndefined();
    });

    it('writes an item created and changed again in one batch as the later change leaves it', async () => {
      s = await factory();
      const { store } = s;
      const later: ItemChanges = {
        ...created('c'),
        item: item('c', { stage: 'build', hop: 2, hops: 2, updatedAt: 1500, usage: { ...ZERO, inputTokens: 3 } }),
        created: false,
        run: { machineVersion: 1, snapshot: { value: 'running', context: { runId: 'c', hop: 2 } } },
        hops: [],
        usage: [],
        outbox: [],
        audit: [],
        definition: undefined,
      };
      await store.commit({ changes: [created('c'), later], deleteOutbox: [] });
      const loaded = await store.loadItem('c');
      expect(loaded?.item).toEqual(later.item);
      expect(loaded?.run).toEqual(later.run);
      expect(loaded?.hops).toEqual([hop('c', 1)]);
    });

    it('applies later changes in order: hop updates, new hops, usage; ended items leave the live ones and each end signs the head', async () => {
      s = await factory();
      const { store } = s;
      await store.commit({ changes: [created('a'), created('b')], deleteOutbox: [] });
      const done = { ...hop('a', 1), state: 'completed' as const, finishedAt: 2000, activeSince: null };
      const second = hop('a', 2, { seq: 2 });
      const usage = [
        {
          hopId: 'a-hop-1',
          itemId: 'a',
          agent: 'planner',
          model: 'm',
          inputTokens: 10,
          outputTokens: 2,
          costUsd: 0.5,
          elapsedMs: 7,
          at: 2000,
        },
      ];
      const step1: ItemChanges = {
        itemId: 'a',
        item: item('a', {
          hop: 2,
          hops: 2,
          usage: { inputTokens: 10, outputTokens: 2, costUsd: 0.5, elapsedMs: 7 },
          updatedAt: 2000,
        }),
        created: false,
        hops: [
          {
            hop: { ...done, usage: { inputTokens: 10, outputTokens: 2, costUsd: 0.5, elapsedMs: 7 }, model: 'm' },
            created: false,
          },
          { hop: second, created: true },
        ],
        usage,
        outbox: [],
        audit: [audit('result', 'a'), audit('cost', 'a')],
        ended: false,
      };
      // The same item twice in one batch: the second change sees the first.
      const step2: ItemChanges = {
        itemId: 'a',
        item: item('a', {
          state: 'completed',
          hop: 2,
          hops: 2,
          finishedAt: 3000,
          updatedAt: 3000,
          usage: step1.item.usage,
          output: {
            state: 'completed',
            stage: 'plan',
            hop: 2,
            role: 'planner',
            parts: [{ kind: 'text', text: 'the plan' }],
            artifacts: [{ artifactId: 'plan', name: 'plan.md', parts: [{ kind: 'text', text: '# plan' }] }],
          },
        }),
        created: false,
        hops: [{ hop: { ...second, state: 'completed', finishedAt: 3000, activeSince: null }, created: false }],
        usage: [],
        outbox: [],
        audit: [audit('item-completed', 'a')],
        ended: true,
      };
      // And b ends in the same batch: each end is signed (two checkpoints).
      const bEnds: ItemChanges = {
        itemId: 'b',
        item: item('b', { state: 'canceled', finishedAt: 3000, updatedAt: 3000 }),
        created: false,
        hops: [],
        usage: [],
        outbox: [],
        audit: [audit('item-canceled', 'b')],
        ended: true,
      };
      const before = s.checkpoints();
      await store.commit({ changes: [step1, step2, bEnds], deleteOutbox: [] });
      expect(s.checkpoints()).toBe(before + 2);
      const a = await store.loadItem('a');
      expect(a?.item).toMatchObject({ state: 'completed', finishedAt: 3000, usage: { inputTokens: 10, costUsd: 0.5 } });
      // The output is kept with the item, whole.
      expect(a?.item.output).toEqual(step2.item.output);
      expect((await store.loadItem('b'))?.item.output).toBeNull();
      expect(a?.hops.map((h) => `${h.id}:${h.state}`)).toEqual(['a-hop-1:completed', 'a-hop-2:completed']);
      expect(a?.hops[0]).toMatchObject({ model: 'm', usage: { inputTokens: 10, outputTokens: 2, elapsedMs: 7 } });
      expect(await store.loadLive()).toEqual([]);
      expect((await s.audit()).map((r) => r.kind)).toEqual([
        'item-created',
        'dispatch',
        'item-created',
        'dispatch',
        'result',
        'cost',
        'item-completed',
        'item-canceled',
      ]);
    });

    it('a batch is all or nothing: one bad change leaves the tables, the outbox and the audit as they were', async () => {
      s = await factory();
      const { store } = s;
      const first = await store.commit({ changes: [created('a')], deleteOutbox: [] });
      const auditBefore = await s.audit();
      const outboxBefore = await store.loadOutbox();
      // The second change re-uses an idempotency key another hop holds: the store must refuse it.
      const clash: ItemChanges = {
        ...created('c'),
        definition: undefined,
        hops: [{ hop: hop('c', 1, { idempotencyKey: 'a/1/1' }), created: true }],
      };
      await expect(
        store.commit({ changes: [created('b'), clash], deleteOutbox: first.outbox[0]!.map((r) => r.id) }),
      ).rejects.toThrow();
      expect(await store.loadItem('b')).toBeUndefined();
      expect(await store.loadItem('c')).toBeUndefined();
      expect(await store.loadOutbox()).toEqual(outboxBefore);
      expect(await s.audit()).toEqual(auditBefore);
      expect((await store.loadLive()).map((x) => x.item.id)).toEqual(['a']);
      // And the store goes on: the next batch commits.
      await store.commit({ changes: [created('b')], deleteOutbox: [] });
      expect((await store.loadLive()).map((x) => x.item.id)).toEqual(['a', 'b']);
    });

    it("adds each change's rollup to the live subtree usage of its item and ancestors, in the commit, all or nothing", async () => {
      s = await factory();
      const { store } = s;
      const charge = (itemIds: string[], tokens: number, hops: number) => ({
        itemIds,
        usage: { inputTokens: tokens, outputTokens: 1, costUsd: tokens / 1000, elapsedMs: 5 },
        hops,
      });
      // With a definition kept (PostgreSQL: statement by statement), then without (one statement), two changes a batch.
      await store.commit({ changes: [{ ...created('root'), rollup: charge(['root'], 0, 1) }], deleteOutbox: [] });
      await store.commit({
        changes: [
          { ...created('root.1.a'), definition: undefined, rollup: charge(['root.1.a', 'root'], 10, 1) },
          { ...created('root.1.b'), definition: undefined, rollup: charge(['root.1.b', 'root'], 7, 2) },
        ],
        deleteOutbox: [],
      });
      const trees = await store.loadTreeUsage(['root', 'root.1.a', 'root.1.b', 'none']);
      expect(trees.get('root')).toEqual({
        usage: { inputTokens: 17, outputTokens: 3, costUsd: 0.017, elapsedMs: 15 },
        hops: 4,
      });
      expect(trees.get('root.1.a')).toEqual({
        usage: { inputTokens: 10, outputTokens: 1, costUsd: 0.01, elapsedMs: 5 },
        hops: 1,
      });
      expect(trees.has('none')).toBe(false);
      // A batch that fails adds nothing.
      const clash: ItemChanges = {
        ...created('c'),
        definition: undefined,
        hops: [{ hop: hop('c', 1, { idempotencyKey: 'root/1/1' }), created: true }],
        rollup: charge(['c', 'root'], 100, 1),
      };
      await expect(store.commit({ changes: [clash], deleteOutbox: [] })).rejects.toThrow();
      expect((await store.readTreeUsage(['root'])).get('root')?.usage.inputTokens).toBe(17);
      expect((await (await s.reopen()).loadTreeUsage(['root'])).get('root')?.hops).toBe(4);
    });

    it('deletes published outbox rows with a batch, even an empty one; keeps a definition once', async () => {
      s = await factory();
      const { store } = s;
      const one = await store.commit({ changes: [created('a')], deleteOutbox: [] });
      const two = await store.commit({ changes: [created('b')], deleteOutbox: [] });
      expect((await store.loadOutbox()).map((r) => r.itemId)).toEqual(['a', 'b']);
      expect(two.outbox[0]![0]!.id).toBeGreaterThan(one.outbox[0]![0]!.id);
      await store.commit({ changes: [], deleteOutbox: one.outbox[0]!.map((r) => r.id) });
      expect((await store.loadOutbox()).map((r) => r.itemId)).toEqual(['b']);
      expect(await store.loadDefinition({ id: 'wf', version: 1 })).toEqual({ id: 'wf', version: 1, stages: {} });
      const reopened = await s.reopen();
      expect((await reopened.loadOutbox()).map((r) => r.itemId)).toEqual(['b']);
    });

    it("answers the console's reads: a newest-first page filtered by state and workflow, workflow ids, roles, totals", async () => {
      s = await factory();
      const { store } = s;
      const at = (id: string, createdAt: number, extra: Partial<ItemRecord> = {}): ItemChanges => {
        const c = created(id);
        return { ...c, item: item(id, { createdAt, updatedAt: createdAt, ...extra }) };
      };
      const other: ItemChanges = {
        ...at('d', 4000, { workflow: { id: 'other', version: 2 }, state: 'completed', finishedAt: 4500 }),
        definition: {
          ref: { id: 'other', version: 2 },
          body: { id: 'other', version: 2, stages: { write: { role: 'writer' }, check: { role: 'checker' } } },
        },
        hops: [{ hop: hop('d', 1, { role: 'writer' }), created: true }],
      };
      await store.commit({
        changes: [
          at('a', 1000, { usage: { inputTokens: 10, outputTokens: 5, costUsd: 0.25, elapsedMs: 1 } }),
          at('b', 3000, {
            state: 'awaiting-approval',
            usage: { inputTokens: 1, outputTokens: 2, costUsd: 0.5, elapsedMs: 1 },
          }),
          at('c', 2000),
          other,
        ],
        deleteOutbox: [],
      });
      const ids = (items: ItemRecord[]) => items.map((i) => i.id);
      expect(ids(await store.readItemPage({}))).toEqual(['d', 'b', 'c', 'a']);
      expect(ids(await store.readItemPage({ limit: 2 }))).toEqual(['d', 'b']);
      expect(ids(await store.readItemPage({ limit: 2, offset: 2 }))).toEqual(['c', 'a']);
      expect(ids(await store.readItemPage({ offset: 4 }))).toEqual([]);
      expect(ids(await store.readItemPage({ state: 'running' }))).toEqual(['c', 'a']);
      expect(ids(await store.readItemPage({ workflow: 'wf' }))).toEqual(['b', 'c', 'a']);
      expect(ids(await store.readItemPage({ workflow: 'other', state: 'completed' }))).toEqual(['d']);
      expect(ids(await store.readItemPage({ workflow: 'other', state: 'running' }))).toEqual([]);
      expect((await store.readItemPage({ state: 'awaiting-approval' }))[0]).toMatchObject({
        id: 'b',
        usage: { costUsd: 0.5, inputTokens: 1, outputTokens: 2 },
      });
      // The hops of many items in one read, each item's in order; an item without hops (or unknown) is absent.
      const hopsOf = await store.readHopsOfItems(['d', 'a', 'zz', 'd']);
      expect([...hopsOf.keys()].sort()).toEqual(['a', 'd']);
      expect(hopsOf.get('d')).toEqual(await store.readHops('d'));
      expect(hopsOf.get('a')).toEqual(await store.readHops('a'));
      expect(hopsOf.get('a')?.length).toBeGreaterThan(0);
      expect((await store.readHopsOfItems([])).size).toBe(0);
      expect(await store.readWorkflowIds()).toEqual(['other', 'wf']);
      // The stages' roles of the kept definitions and the roles hops went to, each once, sorted.
      expect(await store.readRoles()).toEqual(['checker', 'planner', 'writer']);
      expect(await store.readItemTotals()).toEqual({
        byState: { running: 2, 'awaiting-approval': 1, completed: 1 },
        total: 4,
        costUsd: 0.75,
        inputTokens: 11,
        outputTokens: 7,
      });
      // A child's usage is in its root's rollup: the totals count each tree once, by its root. A root
      // whose attribute's value reads like the parent key is still a root.
      await store.commit({
        changes: [
          at('a.1.0', 5000, {
            attributes: { 'switchboard.parent': 'a', 'switchboard.branch': '1:0' },
            usage: { inputTokens: 4, outputTokens: 1, costUsd: 0.1, elapsedMs: 1 },
          }),
          at('e', 6000, {
            state: 'completed',
            finishedAt: 6500,
            attributes: { note: '"switchboard.parent":"a"' },
            usage: { inputTokens: 1, outputTokens: 1, costUsd: 0.05, elapsedMs: 1 },
          }),
        ],
        deleteOutbox: [],
      });
      expect(await store.readItemTotals()).toEqual({
        byState: { running: 3, 'awaiting-approval': 1, completed: 2 },
        total: 6,
        costUsd: 0.8,
        inputTokens: 12,
        outputTokens: 8,
      });
    });

    it("keeps a run's open join of any size through changed branches, new joins, a refused batch retried and restarts", async () => {
      s = await factory();
      const contract = s;
      let writer: CoordinatorStore = contract.store;
      // Reads go through another handle: a read through the writer would tell it what the rows hold.
      const reader = await contract.reopen();
      // An item whose creation a refused batch repeats (its row is there: the batch fails as a whole).
      await writer.commit({ changes: [created('taken')], deleteOutbox: [] });
      type Branch = { key: string; state: string; output: unknown; error: null; budget: null };
      const joinOf = (branches: Branch[]) =>
        branches.length === 0
          ? null
          : {
              stage: 'fan',
              hop: 2,
              kind: 'map',
              need: branches.length,
              all: true,
              collect: false,
              maxConcurrency: 4,
              branches,
            };
      const snapshotOf = (id: string, branches: Branch[], note: number) => ({
        status: 'active',
        value: 'fanning',
        historyValue: {},
        context: { runId: id, join: joinOf(branches), note },
        children: {},
      });
      const change = (id: string, snapshot: unknown, at: number): ItemChanges => ({
        itemId: id,
        item: item(id, { updatedAt: at }),
        created: false,
        run: { machineVersion: 1, snapshot },
        hops: [],
        usage: [],
        outbox: [],
        audit: [],
        ended: false,
      });
      const step = fc.oneof(
        fc.record({
          kind: fc.constant('join' as const),
          size: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 40 })),
        }),
        fc.record({
          kind: fc.constant('settle' as const),
          at: fc.array(fc.nat(60), { minLength: 1, maxLength: 5 }),
          out: fc.string({ maxLength: 6 }),
        }),
        fc.record({ kind: fc.constant('refused' as const), at: fc.array(fc.nat(60), { minLength: 1, maxLength: 3 }) }),
        fc.record({ kind: fc.constant('restart' as const) }),
      );
      let run = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 5, maxLength: 16 }), async (steps) => {
          const id = `fan-${run++}`;
          await writer.commit({ changes: [created(id)], deleteOutbox: [] });
          let branches: Branch[] = [];
          let at = 2000;
          let expected: unknown = (await reader.loadItem(id))!.run!.snapshot;
          const settled = (from: Branch[], positions: number[], out: string) => {
            const next = [...from];
            for (const p of positions) {
              if (next.length === 0) break;
              const i = p % next.length;
              next[i] = { ...next[i]!, state: 'succeeded', output: { out, i, at } };
            }
            return next;
          };
          for (const st of steps) {
            at++;
            if (st.kind === 'restart') {
              writer = await contract.reopen();
            } else if (st.kind === 'refused') {
              const tried = settled(branches, st.at, 'refused');
              const snapshot = snapshotOf(id, tried, at);
              await expect(
                writer.commit({ changes: [change(id, snapshot, at), created('taken')], deleteOutbox: [] }),
              ).rejects.toThrow();
              expect((await reader.loadItem(id))!.run!.snapshot).toEqual(expected);
              // Tried again, the same branch objects: now committed.
              await writer.commit({ changes: [change(id, snapshot, at)], deleteOutbox: [] });
              branches = tried;
              expected = snapshot;
            } else {
              branches =
                st.kind === 'join'
                  ? Array.from({ length: st.size }, (_, i) => ({
                      key: `k${i}`,
                      state: 'running',
                      output: null,
                      error: null,
                      budget: null,
                    }))
                  : settled(branches, st.at, st.out);
              expected = snapshotOf(id, branches, at);
              await writer.commit({ changes: [change(id, expected, at)], deleteOutbox: [] });
            }
            expect((await reader.loadItem(id))!.run!.snapshot).toEqual(expected);
          }
          expect((await writer.loadItem(id))!.run!.snapshot).toEqual(expected);
        }),
        { numRuns: 8 },
      );
    });
  });
}
