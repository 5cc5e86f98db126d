import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type Actor, createActor } from 'xstate';
import {
  type Budget,
  type PolicyEntry,
  budgetPolicy,
  maxHopsPolicy,
  roleAllowListPolicy,
  runGovernance,
} from '../../src/workflow/governance.js';
import {
  type WorkflowRunMachine,
  restoreWorkflowRun,
  workflowRunMachine,
} from '../../src/machines/workflow-run-machine.js';
import { AuditLog } from '../../src/persistence/audit/sqlite-chain.js';
import { type SqliteDatabase, openDatabase } from '../../src/persistence/kernel/database.js';
import type { AuditEntryInput } from '../../src/protocol/audit.js';
import type { WorkflowRunEvent } from '../../src/protocol/workflow.js';
import { DEV_ROLES, DEV_SDLC } from './fixtures.js';

/**
 * The pure and persistence parts put together the way the Coordinator will:
 * each step of a run (governance, audit rows, the run's new snapshot) is one
 * SQLite transaction. The role agents are scripted here (no bus): coding
 * asks the architect a question the first time, testing fails the first
 * time. The process "restarts" in the middle: runs are restored from their
 * snapshot rows and finish.
 */

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const USAGE = { inputTokens: 300, outputTokens: 100, costUsd: 0.004, elapsedMs: 20 };

class Driver {
  readonly audit: AuditLog;
  readonly runs = new Map<string, Actor<WorkflowRunMachine>>();
  /** What the scripted agents did already, by item: the first coding hop suspends, the first testing hop fails. */
  readonly seen = new Map<string, Set<string>>();

  constructor(
    readonly db: SqliteDatabase,
    readonly policies: PolicyEntry[],
    /** Checked after every result: over it, the item fails (BUDGET_EXCEEDED). */
    readonly budget?: Budget,
  ) {
    this.audit = new AuditLog(db);
    db.exec('CREATE TABLE IF NOT EXISTS runs (id TEXT PRIMARY KEY, snapshot TEXT NOT NULL) STRICT');
    for (const row of db.prepare('SELECT id, snapshot FROM runs').all() as { id: string; snapshot: string }[]) {
      this.runs.set(row.id, restoreWorkflowRun(JSON.parse(row.snapshot)).start());
    }
  }

  create(itemId: string): void {
    const actor = createActor(workflowRunMachine, {
      input: { runId: itemId, definition: DEV_SDLC, budget: this.budget ?? null },
    }).start();
    this.db.transaction(() => {
      this.audit.append({ kind: 'item-created', itemId, actor: 'quad', data: { workflow: 'dev-sdlc@1' } });
      this.save(itemId, actor);
    })();
    this.runs.set(itemId, actor);
  }

  private save(itemId: string, actor: Actor<WorkflowRunMachine>): void {
    this.db
      .prepare(
        'INSERT INTO runs (id, snapshot) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET snapshot = excluded.snapshot',
      )
      .run(itemId, JSON.stringify(actor.getPersistedSnapshot()));
  }

  /** One step of one run, in one transaction. Returns false when the run is final. */
  step(itemId: string): boolean {
    const actor = this.runs.get(itemId)!;
    if (actor.getSnapshot().status !== 'active') return false;
    const c = actor.getSnapshot().context;
    const d = c.directive;
    const rows: AuditEntryInput[] = [];
    const events: WorkflowRunEvent[] = [];
    const seen = this.seen.get(itemId) ?? new Set<string>();
    this.seen.set(itemId, seen);
    switch (d.kind) {
      case 'start':
        events.push({ type: 'START' });
        break;
      case 'await-approval':
        rows.push({ kind: 'approval', itemId, hop: d.hop, actor: 'release-manager', data: { decision: 'approve' } });
        events.push({ type: 'APPROVED', by: 'release-manager' });
        break;
      case 'await-reply':
        rows.push({ kind: 'resume', itemId, hop: d.hop, actor: 'coordinator', data: { continuation: d.continuation } });
        events.push({ type: 'HOP_RESUMED', hop: d.hop, continuation: d.continuation, usage: USAGE });
        break;
      case 'dispatch': {
        const decision = runGovernance(this.policies, {
          itemId,
          workflow: c.workflow,
          stage: d.stage,
          role: d.role,
          hop: d.hop,
          attempt: d.attempt,
          usage: c.usage,
          approvedBy: d.approvedBy,
        });
        rows.push({ kind: 'governance', itemId, hop: d.hop, actor: 'coordinator', data: { ...decision } as never });
        if (decision.decision === 'deny') {
          rows.push({
            kind: 'item-failed',
            itemId,
            hop: d.hop,
            actor: 'coordinator',
            data: { reason: decision.reason },
          });
          events.push({ type: 'GOVERNANCE_DENIED', hop: d.hop, reason: decision.reason, policy: decision.policy });
          break;
        }
        rows.push({
          kind: 'dispatch',
          itemId,
          hop: d.hop,
          actor: 'coordinator',
          data: { role: d.role, attempt: d.attempt },
        });
        const hop = { hop: d.hop, attempt: d.attempt, usage: USAGE };
        if (d.stage === 'coding' && !seen.has('asked')) {
          seen.add('asked');
          rows.push({ kind: 'suspend', itemId, hop: d.hop, actor: 'agent:coding', data: { asked: 'architect' } });
          events.push({ type: 'HOP_SUSPENDED', ...hop, continuation: `${itemId}-c1`, askedRole: 'architect' });
        } else if (d.stage === 'testing' && !seen.has('failed')) {
          seen.add('failed');
          rows.push({ kind: 'result', itemId, hop: d.hop, actor: 'agent:testing', data: { outcome: 'failed' } });
          events.push({ type: 'HOP_FAILED', ...hop, errorType: 'TestsFailed', message: '1 test failed' });
        } else {
          rows.push({ kind: 'result', itemId, hop: d.hop, actor: `agent:${d.role}`, data: { outcome: 'completed' } });
          events.push({ type: 'HOP_SUCCEEDED', ...hop });
        }
        rows.push({ kind: 'cost', itemId, hop: d.hop, actor: 'coordinator', data: { ...USAGE } });
        break;
      }
      case 'none':
        return false;
    }
    this.db.transaction(() => {
      this.audit.appendMany(rows);
      for (const event of events) actor.send(event);
      // The run decides an overrun (its usage against the budget it holds); the driver audits it.
      const failure = actor.getSnapshot().context.failure;
      if (failure?.code === 'BUDGET_EXCEEDED') {
        this.audit.append({ kind: 'item-failed', itemId, actor: 'coordinator', data: { reason: failure.reason } });
      }
      const after = actor.getSnapshot();
      expect(after.context.refusal).toBeNull();
      if (after.value === 'completed') {
        this.audit.append({ kind: 'item-completed', itemId, actor: 'coordinator', data: { ...after.context.usage } });
      }
      this.save(itemId, actor);
    })();
    return actor.getSnapshot().status === 'active';
  }
}

function tempDb(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sb-compose-'));
  dirs.push(dir);
  return join(dir, 'coordinator.db');
}

describe('the pieces together', () => {
  it('runs two work items on one definition across a restart, every hop governed, audited and accrued', () => {
    const path = tempDb();
    const policies: PolicyEntry[] = [
      budgetPolicy({ maxTokens: 100_000, maxCostUsd: 5 }),
      roleAllowListPolicy(DEV_ROLES),
      maxHopsPolicy(20),
    ];
    let driver = new Driver(openDatabase(path), policies);
    driver.create('item-a');
    driver.create('item-b');
    for (let i = 0; i < 5; i++) for (const id of ['item-a', 'item-b']) driver.step(id);
    const midway = driver.audit.head();
    const seen = driver.seen;
    driver.db.close();

    // Restart: a new process reads the runs back from their snapshots.
    driver = new Driver(openDatabase(path), policies);
    for (const [id, s] of seen) driver.seen.set(id, s);
    expect([...driver.runs.keys()].sort()).toEqual(['item-a', 'item-b']);
    let active = true;
    for (let guard = 0; active && guard < 100; guard++) {
      active = false;
      for (const id of ['item-a', 'item-b']) active = driver.step(id) || active;
    }

    for (const id of ['item-a', 'item-b']) {
      const snap = driver.runs.get(id)!.getSnapshot();
      expect(snap.value).toBe('completed');
      // architect, coding (suspends, resumes), testing (fails), coding, testing, devops (gate).
      expect(snap.context.hop).toBe(6);
      expect(snap.context.visits).toEqual({ architect: 1, coding: 2, testing: 2, devops: 1 });
      // 6 hop results, the suspended attempt, and the answered question.
      expect(snap.context.usage.inputTokens).toBe(8 * USAGE.inputTokens);
      const rows = driver.audit.list({ itemId: id });
      for (let hop = 1; hop <= 6; hop++) {
        const kinds = rows.filter((r) => r.hop === hop).map((r) => r.kind);
        expect(kinds).toContain('governance');
        expect(kinds).toContain('dispatch');
        expect(kinds).toContain('cost');
      }
      expect(rows.filter((r) => r.kind === 'approval')).toHaveLength(1);
      expect(rows.at(-1)?.kind).toBe('item-completed');
    }
    const verified = driver.audit.verifyChain({ expectedHead: driver.audit.head() });
    expect(verified).toMatchObject({ ok: true });
    expect(verified.ok && verified.entries).toBeGreaterThan(midway.seq);
    driver.db.close();
  });

  it('fails an item with an audited reason when a result takes it over budget', () => {
    const budget = { maxTokens: 1_000 };
    const driver = new Driver(openDatabase(tempDb()), [budgetPolicy(budget)], budget);
    driver.create('item-c');
    for (let guard = 0; guard < 50 && driver.step('item-c'); guard++);
    const snap = driver.runs.get('item-c')!.getSnapshot();
    expect(snap.value).toBe('failed');
    expect(snap.context.failure).toEqual({
      code: 'BUDGET_EXCEEDED',
      reason: 'budget exceeded: 1200 of 1000 tokens',
      stage: 'coding',
      hop: 2,
    });
    const last = driver.audit.list({ itemId: 'item-c' }).at(-1)!;
    expect(last).toMatchObject({ kind: 'item-failed', data: { reason: 'budget exceeded: 1200 of 1000 tokens' } });
    expect(driver.audit.verifyChain()).toMatchObject({ ok: true });
    driver.db.close();
  });

  it('denies the next hop, audited, once the budget is exactly spent', () => {
    const driver = new Driver(openDatabase(tempDb()), [budgetPolicy({ maxTokens: 1_200 })]);
    driver.create('item-d');
    for (let guard = 0; guard < 50 && driver.step('item-d'); guard++);
    const snap = driver.runs.get('item-d')!.getSnapshot();
    expect(snap.context.failure).toEqual({
      code: 'GOVERNANCE_DENIED',
      reason: 'budget: budget spent: 1200 of 1200 tokens',
      stage: 'coding',
      hop: 2,
    });
    const rows = driver.audit.list({ itemId: 'item-d' });
    expect(rows.at(-2)).toMatchObject({
      kind: 'governance',
      hop: 2,
      data: { decision: 'deny', policy: 'budget', verdicts: [{ policy: 'budget', decision: 'deny' }] },
    });
    expect(rows.at(-1)).toMatchObject({ kind: 'item-failed', data: { reason: 'budget spent: 1200 of 1200 tokens' } });
    driver.db.close();
  });
});
