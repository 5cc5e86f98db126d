import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fc, test } from '@fast-check/vitest';
import { afterAll, describe, expect } from 'vitest';
import { CoordinatorGovernance } from '../../src/actors/coordinator/policies.js';
import {
  type CoordinatorInput,
  type ItemView,
  type StartBody,
  decide,
} from '../../src/decisions/coordinator-decisions.js';
import { restoreRun } from '../../src/machines/workflow-run-machine.js';
import { isFinalRunState } from '../../src/machines/workflow-run-transitions.js';
import { AuditLog } from '../../src/persistence/audit/sqlite-chain.js';
import { SqliteCoordinatorStore } from '../../src/persistence/coordinator/sqlite-store.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import type { ResultEnvelope } from '../../src/protocol/work-envelope.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import type { HopRecord } from '../../src/workflow/records.js';

/**
 * The pure decision function, driven with random inputs (results of every
 * outcome, duplicates, late results, answers, approvals by anyone, denials,
 * cancels, time passing, restarts from the tables) against a reference model
 * of the workflow, committing each decision through the SQLite store. After
 * every step: no hop's result applied twice, every audit row chained and
 * counted, costs add up (item = hops = cost rows = usage rows), terminal
 * items never move, and what the model expects of the run holds.
 */
const definitionWith = (extra: { deadline?: number }) =>
  parseWorkflowDefinition({
    id: extra.deadline === undefined ? 'prop' : 'prop-deadline',
    version: 1,
    start: 'a',
    defaults: { retry: { maximumAttempts: 2, initialInterval: 0 } },
    ...extra,
    stages: {
      a: { role: 'ra', timeout: 1_000, next: [{ on: 'succeeded', goto: 'b' }] },
      b: {
        role: 'rb',
        approval: { approvers: ['boss'] },
        next: [
          { on: 'succeeded', goto: 'c' },
          { on: 'failed', errorType: 'Redo', goto: 'a', maxTraversals: 2 },
        ],
      },
      c: { role: 'rc', timeout: 1_500, next: [{ on: 'succeeded', end: 'completed' }] },
    },
  });
/** Without a deadline, and with one a run of time steps passes. */
const DEFINITIONS = [definitionWith({}), definitionWith({ deadline: 2_000 })] as const;
/** A hop (or query) goes out again on its first timeout, and fails on its second (`maximumAttempts: 2`). */
const MAX_ATTEMPTS = 2;
const governance = new CoordinatorGovernance({ knownRoles: ['ra', 'rb', 'rc'], maxHops: 12 });

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

type Cmd =
  | { t: 'result'; outcome: 'completed' | 'failed' | 'suspended'; errorType: string; cost: number; deliveries: number }
  | { t: 'answer'; failed: boolean; cost: number }
  | { t: 'again'; pick: number }
  | { t: 'approve'; by: string }
  | { t: 'deny'; by: string }
  | { t: 'cancel' }
  | { t: 'time'; ms: number }
  | { t: 'restart' };

const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      t: fc.constant('result' as const),
      outcome: fc.constantFrom('completed' as const, 'completed' as const, 'failed' as const, 'suspended' as const),
      errorType: fc.constantFrom('Boom', 'Redo'),
      cost: fc.integer({ min: 0, max: 1000 }),
      deliveries: fc.integer({ min: 1, max: 3 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant('answer' as const),
      failed: fc.boolean(),
      cost: fc.integer({ min: 0, max: 1000 }),
    }),
  },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('again' as const), pick: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({ t: fc.constant('approve' as const), by: fc.constantFrom('boss', 'boss', 'mallory') }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('deny' as const), by: fc.constantFrom('boss', 'mallory') }) },
  { weight: 1, arbitrary: fc.constant({ t: 'cancel' as const }) },
  // Time: short steps, and ones past a stage's timeout (a: 1 s, c: 1.5 s) the deadline (2 s).
  {
    weight: 5,
    arbitrary: fc.record({ t: fc.constant('time' as const), ms: fc.constantFrom(10, 600, 1_200, 1_600, 3_100) }),
  },
  { weight: 1, arbitrary: fc.constant({ t: 'restart' as const }) },
);

function harness() {
  const dir = mkdtempSync(join(tmpdir(), 'sb-decide-'));
  dirs.push(dir);
  const db = openDatabase(join(dir, 'd.db'));
  const audit = new AuditLog(db);
  const store = new SqliteCoordinatorStore(db, { audit: { append: (e) => audit.appendManyInTransaction(e) } });
  let now = 1_000_000;
  let n = 0;
  const env = () => ({ now, nextId: () => `id-${String(++n).padStart(6, '0')}`, governance });
  return {
    db,
    audit,
    store,
    env,
    advance(ms: number) {
      now += ms;
    },
    now: () => now,
  };
}

describe('decide: the Coordinator decisions against a reference model', () => {
  test.prop(
    [
      fc.array(cmd, { minLength: 1, maxLength: 40 }),
      fc.option(fc.integer({ min: 500, max: 4000 })),
      fc.constantFrom(...DEFINITIONS),
    ],
    {
      numRuns: 150,
    },
  )('every step keeps the invariants', async (cmds, maxCost, definition) => {
    const h = harness();
    const itemId = 'item-1';
    const commit = async (view: ItemView | undefined, input: CoordinatorInput) => {
      const d = decide(view, input, h.env());
      if (d.changes !== null) await h.store.commit({ changes: [d.changes], deleteOutbox: [] });
      return d;
    };
    const created = await commit(undefined, {
      kind: 'create',
      itemId,
      taskId: null,
      definition,
      keepDefinition: true,
      input: [{ kind: 'text', text: 'go' }],
      budget: maxCost === null ? null : { maxCostUsd: maxCost / 1000 },
      attributes: null,
    });
    let view = created.view!;
    const sent: ResultEnvelope[] = [];
    let tokens = 0;
    let ended: { state: string; finishedAt: number } | null = null;
    let auditRows = created.changes!.audit.length;

    for (const c of cmds) {
      const before = view;
      const live = before.run !== null && before.item.finishedAt === null;
      const hops = [...before.hops.values()];
      const out = hops.find((x) => x.kind === 'stage' && x.state === 'dispatched');
      const query = hops.find((x) => x.kind === 'query' && x.state === 'dispatched');
      let input: CoordinatorInput | undefined;
      if (c.t === 'result' && out !== undefined) {
        const usage = { inputTokens: 1, outputTokens: 1, costUsd: c.cost / 1000, model: 'm' };
        const headers = {
          taskId: out.id,
          runId: itemId,
          hop: out.hop,
          attempt: out.attempt,
          idempotencyKey: out.idempotencyKey,
        };
        const result: ResultEnvelope =
          c.outcome === 'completed'
            ? { kind: 'result', headers, role: out.role, outcome: 'completed', parts: [], artifacts: [], usage }
            : c.outcome === 'failed'
              ? {
                  kind: 'result',
                  headers,
                  role: out.role,
                  outcome: 'failed',
                  parts: [],
                  artifacts: [],
                  usage,
                  error: { type: c.errorType, message: 'x' },
                  deliveries: c.deliveries,
                }
              : {
                  kind: 'result',
                  headers,
                  role: out.role,
                  outcome: 'suspended',
                  parts: [],
                  artifacts: [],
                  usage,
                  ask: {
                    role: 'rc',
                    continuationToken: `tok-${++tokens}`,
                    message: { parts: [{ kind: 'text', text: '?' }] },
                  },
                };
        input = { kind: 'result', result };
      } else if (c.t === 'answer' && query !== undefined) {
        const asking = before.hops.get(query.askedBy!)!;
        const result: ResultEnvelope = {
          kind: 'result',
          headers: {
            taskId: asking.id,
            runId: itemId,
            hop: asking.hop,
            attempt: 1,
            idempotencyKey: query.idempotencyKey,
            askedBy: { role: asking.role, continuationToken: query.continuation!, taskId: asking.id, hop: asking.hop },
          },
          role: 'rc',
          outcome: c.failed ? 'failed' : 'completed',
          parts: [{ kind: 'text', text: 'answer' }],
          artifacts: [],
          usage: { inputTokens: 1, outputTokens: 0, costUsd: c.cost / 1000, model: 'm' },
          ...(c.failed ? { error: { type: 'Nope', message: 'no' } } : {}),
        };
        input = { kind: 'result', result };
      } else if (c.t === 'again' && sent.length > 0) {
        input = { kind: 'result', result: sent[c.pick % sent.length]! };
      } else if (c.t === 'approve') {
        input = { kind: 'approve', approver: c.by };
      } else if (c.t === 'deny') {
        input = { kind: 'deny', approver: c.by };
      } else if (c.t === 'cancel') {
        input = { kind: 'cancel', by: 'someone', reason: null };
      } else if (c.t === 'time') {
        h.advance(c.ms);
        input = { kind: 'timer' };
      } else if (c.t === 'restart') {
        // A restart: the state comes back from the tables alone.
        const stored = await h.store.loadItem(itemId);
        const snapshot = stored!.run!.snapshot as { context: object };
        const def = await h.store.loadDefinition(definition);
        const live = stored!.item.finishedAt === null;
        view = {
          item: stored!.item,
          hops: new Map(stored!.hops.map((x) => [x.id, x])),
          run: live ? restoreRun({ ...snapshot, context: { ...snapshot.context, definition: def } }) : null,
        };
        expect(view.item).toEqual(before.item);
        expect([...view.hops.values()]).toEqual([...before.hops.values()]);
        continue;
      }
      if (input === undefined) continue;
      const d = await commit(before, input);
      if (input.kind === 'result' && (c.t === 'result' || c.t === 'answer')) sent.push(input.result);
      if (d.refusal !== undefined) {
        // A refusal changes nothing: a non-approver, or an item that already ended.
        expect(d.changes).toBeNull();
        if (input.kind === 'approve' || input.kind === 'deny') {
          expect(input.approver !== 'boss' || before.item.state !== 'awaiting-approval' || !live).toBe(true);
        } else expect(live).toBe(false);
        continue;
      }
      view = d.view ?? before;
      auditRows += d.changes?.audit.length ?? 0;

      // Reference: a redelivered result, or one for a hop that is not out, applies nothing new.
      if (c.t === 'again')
        expect(d.handling === 'duplicate' || d.handling === 'late' || d.handling === 'unknown').toBe(true);
      if (d.handling === 'duplicate') expect(d.changes).toBeNull();
      if (live && input.kind === 'timer') timeReference(definition, before, view, d, h.now());
      // Reference: the boss's approval at the gate dispatches b; the boss's denial fails the item.
      if (live && before.item.state === 'awaiting-approval' && input.kind === 'approve') {
        expect(view.item.state === 'running' || view.item.state === 'failed').toBe(true);
        if (view.item.state === 'running') {
          expect([...view.hops.values()].some((x) => x.stage === 'b' && x.state === 'dispatched')).toBe(true);
        }
      }
      if (live && before.item.state === 'awaiting-approval' && input.kind === 'deny') {
        expect(view.item.failure?.code).toBe('APPROVAL_DENIED');
      }
      if (live && input.kind === 'cancel') expect(view.item.state).toBe('canceled');
      // Reference: at most one stage hop out at a time; every publish is of a hop that is out.
      const nowHops = [...view.hops.values()];
      expect(nowHops.filter((x) => x.kind === 'stage' && x.state === 'dispatched').length).toBeLessThanOrEqual(1);
      for (const o of d.changes?.outbox ?? []) {
        if (o.kind !== 'start') continue;
        const body = o.body as StartBody;
        const hop = nowHops.find((x) => x.idempotencyKey === body.idempotencyKey);
        expect(hop?.state).toBe('dispatched');
      }
      // Reference: completed only after c's hop completed.
      if (view.item.state === 'completed') {
        expect(nowHops.some((x) => x.stage === 'c' && x.kind === 'stage' && x.state === 'completed')).toBe(true);
      }

      // Reference: the run weighs usage against the budget. A live item is never over it; the decision
      // that took a live item over it failed the item (BUDGET_EXCEEDED, with its event), whatever the result.
      const micros = (x: number) => Math.round(x * 1e6);
      const over = maxCost !== null && micros(view.item.usage.costUsd) > maxCost * 1000;
      if (view.item.finishedAt === null) expect(over).toBe(false);
      if (live && over) {
        expect(view.item.failure?.code).toBe('BUDGET_EXCEEDED');
        expect(d.events.filter((e) => e.kind === 'budget-exceeded')).toHaveLength(1);
        // A question asked by the result that overran is never published.
        const dropped = nowHops.filter((x) => x.kind === 'query' && !before.hops.has(x.id));
        for (const q of dropped) expect(q).toMatchObject({ state: 'failed', error: { type: 'BudgetExceeded' } });
      } else {
        expect(d.events.filter((e) => e.kind === 'budget-exceeded')).toEqual([]);
      }
      // The run's usage is the item's while it lives (the run decides on what the item spent).
      if (view.run !== null) {
        const u = view.run.context.usage;
        expect([u.inputTokens, u.outputTokens, micros(u.costUsd)]).toEqual([
          view.item.usage.inputTokens,
          view.item.usage.outputTokens,
          micros(view.item.usage.costUsd),
        ]);
      }

      // Terminal items never move.
      if (ended !== null) {
        expect({ state: view.item.state, finishedAt: view.item.finishedAt }).toEqual(ended);
        expect(nowHops.filter((x) => x.state === 'dispatched' && !before.hops.has(x.id))).toEqual([]);
        expect(d.changes?.outbox ?? []).toEqual([]);
      } else if (view.item.finishedAt !== null) {
        expect(isFinalRunState(view.item.state)).toBe(true);
        ended = { state: view.item.state, finishedAt: view.item.finishedAt };
      }

      await invariants(h, itemId, auditRows);
    }
    await invariants(h, itemId, auditRows);
    h.db.close();
  });
});

/**
 * Reference for time passing: an item at or past its deadline fails
 * (`DEADLINE_EXCEEDED`, audited); otherwise a stage hop (or a query) out
 * longer than its stage's timeout goes out again under its key while its
 * retry policy allows, then fails (`HopTimedOut`): the item's run fails as
 * exhausted (no rule routes it), the query's asker resumes with the failure.
 */
function timeReference(
  definition: (typeof DEFINITIONS)[number],
  before: ItemView,
  view: ItemView,
  d: ReturnType<typeof decide>,
  now: number,
): void {
  const audit = d.changes?.audit ?? [];
  const deadline = definition.deadline;
  if (deadline !== undefined && now >= before.item.createdAt + deadline) {
    expect(view.item.state).toBe('failed');
    expect(view.item.failure?.code).toBe('DEADLINE_EXCEEDED');
    expect(view.item.failure?.reason).toBe(
      `the work item ran past its deadline of ${deadline} ms (${now - before.item.createdAt} ms)`,
    );
    expect(audit.filter((r) => r.kind === 'timeout').map((r) => r.data.what)).toEqual(['deadline']);
    expect(d.runEvents.map((e) => e.type)).toEqual(['TICK']);
    return;
  }
  expect(view.item.failure?.code).not.toBe('DEADLINE_EXCEEDED');
  for (const hop of before.hops.values()) {
    if (hop.state !== 'dispatched' || hop.activeSince === null) continue;
    const timeout = definition.stages[hop.stage]?.timeout;
    const after = view.hops.get(hop.id)!;
    if (timeout === undefined || now < hop.activeSince + timeout * (hop.timeouts + 1)) {
      expect(after.timeouts).toBe(hop.timeouts);
      continue;
    }
    const timeouts = hop.timeouts + 1;
    const rows = audit.filter((r) => r.kind === 'timeout' && r.data.hopId === hop.id);
    expect(d.runEvents.filter((e) => e.type === 'HOP_TIMED_OUT')).not.toEqual([]);
    if (timeouts < MAX_ATTEMPTS && (hop.kind === 'stage' || hop.question !== null)) {
      expect(after).toMatchObject({ state: 'dispatched', timeouts });
      expect(rows.map((r) => r.data.action)).toEqual(['republished']);
      const out = d.changes!.outbox;
      expect(
        out.some(
          (o) =>
            (o.kind === 'start' && (o.body as StartBody).idempotencyKey === hop.idempotencyKey) || o.kind === 'signal',
        ),
      ).toBe(true);
      continue;
    }
    expect(after).toMatchObject({ state: 'failed', error: { type: 'HopTimedOut' } });
    expect(rows.map((r) => r.data.action)).toEqual(['failed']);
    if (hop.kind === 'stage') {
      // No rule of a or c routes HopTimedOut: the run fails as exhausted (or over its budget).
      expect(['RETRIES_EXHAUSTED', 'BUDGET_EXCEEDED']).toContain(view.item.failure?.code);
    } else if (view.item.finishedAt === null) {
      // The asker resumed with the failure as its answer.
      expect(view.hops.get(hop.askedBy!)?.state).toBe('dispatched');
    }
  }
}

async function invariants(h: ReturnType<typeof harness>, itemId: string, auditRows: number): Promise<void> {
  const stored = (await h.store.loadItem(itemId))!;
  const rows = h.audit.list({ itemId });
  // Every audit row chained, none lost or added.
  expect(h.audit.verifyChain().ok).toBe(true);
  expect(rows).toHaveLength(auditRows);
  // No hop applied twice: one result (or failure) per hop, one suspension per continuation.
  const applied = new Map<string, number>();
  const suspended = new Map<string, number>();
  for (const r of rows) {
    const d = r.data as { hopId?: string; continuation?: string };
    if ((r.kind === 'result' || r.kind === 'failure') && d.hopId !== undefined) {
      applied.set(d.hopId, (applied.get(d.hopId) ?? 0) + 1);
    }
    if (r.kind === 'suspend' && d.continuation !== undefined) {
      suspended.set(d.continuation, (suspended.get(d.continuation) ?? 0) + 1);
    }
  }
  for (const [, count] of applied) expect(count).toBe(1);
  for (const [, count] of suspended) expect(count).toBe(1);
  // Costs add up: the item's rollup is its hops', its cost rows' and its usage rows'.
  const micros = (x: number) => Math.round(x * 1e6);
  const costRows = rows
    .filter((r) => r.kind === 'cost')
    .reduce((s, r) => s + micros((r.data as { costUsd: number }).costUsd), 0);
  const hopCost = stored.hops.reduce((s: number, x: HopRecord) => s + micros(x.usage.costUsd), 0);
  const usageRows = h.store.usageRows({ itemId }).reduce((s, r) => s + micros(r.costUsd), 0);
  expect(micros(stored.item.usage.costUsd)).toBe(costRows);
  expect(hopCost).toBe(costRows);
  expect(usageRows).toBe(costRows);
}
