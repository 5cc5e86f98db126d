/**
 * `npm run bench:workflow`: what the pure and persistence parts of the
 * Coordinator cost per hop, each against a reference measured in the same run.
 *
 * 1. Audit append, per row: 4 rows per hop (governance, dispatch, result,
 *    cost) in one transaction, as the Coordinator writes them. Reference: the
 *    same rows (the same columns, the same JSON text) inserted by a plain
 *    prepared INSERT into a table of the same shape and index: no
 *    validation, no canonical JSON, no hashing, no head.
 * 2. verifyChain over 20,000 rows, in rows per second.
 * 3. The governance cascade of the three built-in policies, per decision.
 * 4. The WorkflowRun: one routed hop result (actor.send) and one persist
 *    (getPersistedSnapshot + JSON.stringify). Reference: one move of the A2A
 *    task machine.
 *
 * Progress goes to stderr, the figures to stdout. Medians of the rounds.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createActor } from 'xstate';
import { DEV_SDLC_WORKFLOW_PATH, loadWorkflowFile } from '../src/actors/coordinator/workflow-loader.js';
import { budgetPolicy, maxHopsPolicy, roleAllowListPolicy, runGovernance } from '../src/workflow/governance.js';
import { taskMachine } from '../src/machines/task-machine.js';
import { workflowRunMachine } from '../src/machines/workflow-run-machine.js';
import { AuditLog } from '../src/persistence/audit/sqlite-chain.js';
import { openDatabase } from '../src/persistence/kernel/database.js';
import type { AuditEntryInput } from '../src/protocol/audit.js';

const ROUNDS = 5;
const HOPS_PER_ROUND = 2_000;
const ROWS_PER_HOP = 4;
const VERIFY_ROWS = 20_000;
const DECISIONS = 50_000;
const RUN_EVENTS = 20_000;

function log(message: string): void {
  process.stderr.write(`${message}\n`);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

function microsPer(count: number, run: () => void): number {
  const start = process.hrtime.bigint();
  run();
  return Number(process.hrtime.bigint() - start) / 1_000 / count;
}

const fmt = (n: number, digits = 1) => n.toFixed(digits);

function hopRows(itemId: string, hop: number): AuditEntryInput[] {
  return [
    {
      kind: 'governance',
      itemId,
      hop,
      actor: 'coordinator',
      data: {
        decision: 'allow',
        verdicts: [
          { policy: 'budget', decision: 'allow' },
          { policy: 'role-allow-list', decision: 'allow' },
          { policy: 'max-hops', decision: 'allow' },
        ],
      },
    },
    {
      kind: 'dispatch',
      itemId,
      hop,
      actor: 'coordinator',
      data: { role: 'coding', attempt: 1, taskId: `${itemId}-${hop}` },
    },
    { kind: 'result', itemId, hop, actor: 'agent:coding-1', data: { outcome: 'completed', parts: 2, bytes: 1834 } },
    {
      kind: 'cost',
      itemId,
      hop,
      actor: 'coordinator',
      data: { inputTokens: 1200, outputTokens: 340, costUsd: 0.0123, elapsedMs: 812, model: 'demo-model' },
    },
  ];
}

const dir = mkdtempSync(join(tmpdir(), 'sb-bench-workflow-'));
try {
  // 1. Audit append vs a plain insert.
  log('audit append...');
  const db = openDatabase(join(dir, 'bench.db'));
  const audit = new AuditLog(db);
  db.exec(`CREATE TABLE plain_log (
    seq INTEGER PRIMARY KEY, at TEXT NOT NULL, kind TEXT NOT NULL, item_id TEXT NOT NULL, hop INTEGER,
    actor TEXT NOT NULL, data TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL) STRICT;
    CREATE INDEX plain_log_item ON plain_log (item_id, seq)`);
  const plainInsert = db.prepare(
    'INSERT INTO plain_log (at, kind, item_id, hop, actor, data, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const fakeHash = 'a'.repeat(64);
  const at = new Date().toISOString();
  const plainHop = db.transaction((rows: AuditEntryInput[]) => {
    for (const r of rows) {
      plainInsert.run(at, r.kind, r.itemId, r.hop ?? null, r.actor, JSON.stringify(r.data), fakeHash, fakeHash);
    }
  });
  const auditHop = db.transaction((rows: AuditEntryInput[]) => audit.appendMany(rows));
  const rowsPerRound = HOPS_PER_ROUND * ROWS_PER_HOP;
  const auditUs: number[] = [];
  const plainUs: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const batches = Array.from({ length: HOPS_PER_ROUND }, (_, h) => hopRows(`item-${round}`, h + 1));
    plainUs.push(
      microsPer(rowsPerRound, () => {
        for (const b of batches) plainHop(b);
      }),
    );
    auditUs.push(
      microsPer(rowsPerRound, () => {
        for (const b of batches) auditHop(b);
      }),
    );
  }
  const single = microsPer(500, () => {
    for (let i = 0; i < 500; i++) audit.append(hopRows('single', i + 1)[1]!);
  });

  // 2. verifyChain.
  log('verifyChain...');
  const vdb = openDatabase(join(dir, 'verify.db'));
  const vaudit = new AuditLog(vdb);
  const fill = vdb.transaction(() => {
    for (let h = 0; h < VERIFY_ROWS / ROWS_PER_HOP; h++) vaudit.appendMany(hopRows('v', h + 1));
  });
  fill();
  const verifyRates: number[] = [];
  for (let round = 0; round < 3; round++) {
    const us = microsPer(VERIFY_ROWS, () => {
      const result = vaudit.verifyChain();
      if (!result.ok) throw new Error(`chain broken: ${result.detail}`);
    });
    verifyRates.push(1e6 / us);
  }

  // 3. Governance.
  log('governance...');
  const policies = [
    budgetPolicy({ maxTokens: 1_000_000, maxCostUsd: 100 }),
    roleAllowListPolicy(['architect', 'coding', 'testing', 'devops']),
    maxHopsPolicy(50),
  ];
  const ctx = {
    itemId: 'item-1',
    workflow: { id: 'dev-sdlc', version: 1 },
    stage: 'coding',
    role: 'coding',
    hop: 3,
    attempt: 1,
    usage: { inputTokens: 5_000, outputTokens: 1_000, costUsd: 0.5, elapsedMs: 3_000 },
    approvedBy: null,
  };
  const govUs: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    govUs.push(
      microsPer(DECISIONS, () => {
        for (let i = 0; i < DECISIONS; i++) runGovernance(policies, ctx);
      }),
    );
  }

  // 4. WorkflowRun events and persists vs a task machine move.
  log('workflow run...');
  const definition = loadWorkflowFile(DEV_SDLC_WORKFLOW_PATH);
  const runUs: number[] = [];
  const persistUs: number[] = [];
  const taskUs: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    // architect -> coding -> testing -> (TestsFailed) coding -> testing: 4 routed results per run.
    const runs = RUN_EVENTS / 4;
    const actors = Array.from({ length: runs }, (_, i) => {
      const a = createActor(workflowRunMachine, { input: { runId: `r${i}`, definition } }).start();
      a.send({ type: 'START' });
      return a;
    });
    runUs.push(
      microsPer(RUN_EVENTS, () => {
        for (const a of actors) {
          a.send({ type: 'HOP_SUCCEEDED', hop: 1, attempt: 1 });
          a.send({ type: 'HOP_SUCCEEDED', hop: 2, attempt: 1 });
          a.send({ type: 'HOP_FAILED', hop: 3, attempt: 1, errorType: 'TestsFailed' });
          a.send({ type: 'HOP_SUCCEEDED', hop: 4, attempt: 1 });
        }
      }),
    );
    persistUs.push(
      microsPer(runs, () => {
        for (const a of actors) JSON.stringify(a.getPersistedSnapshot());
      }),
    );
    const tasks = Array.from({ length: runs }, (_, i) =>
      createActor(taskMachine, { input: { taskId: `t${i}` } }).start(),
    );
    taskUs.push(
      microsPer(runs * 4, () => {
        for (const t of tasks) {
          t.send({ type: 'MOVE', to: 'working', by: 'worker', via: 'status' });
          t.send({ type: 'MOVE', to: 'input-required', by: 'worker', via: 'status' });
          t.send({ type: 'MOVE', to: 'working', by: 'broker', via: 'follow-up' });
          t.send({ type: 'MOVE', to: 'working', by: 'worker', via: 'status' });
        }
      }),
    );
  }

  const a = median(auditUs);
  const p = median(plainUs);
  const lines = [
    `audit append, ${ROWS_PER_HOP} rows per hop in one transaction: ${fmt(a)} us/row (plain insert of the same rows: ${fmt(p)} us/row; ratio ${fmt(a / p, 2)}x); ${fmt(a * ROWS_PER_HOP)} us per hop`,
    `audit append, one row in its own transaction: ${fmt(single)} us/row`,
    `verifyChain: ${fmt(median(verifyRates) / 1000, 0)}k rows/s over ${VERIFY_ROWS} rows`,
    `governance cascade (3 built-in policies): ${fmt(median(govUs), 2)} us/decision`,
    `WorkflowRun routed hop result: ${fmt(median(runUs))} us/event (task machine move: ${fmt(median(taskUs))} us; ratio ${fmt(median(runUs) / median(taskUs), 2)}x)`,
    `WorkflowRun persist (snapshot + JSON, definition included): ${fmt(median(persistUs))} us`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  db.close();
  vdb.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
