import { type Coordinator, type RoleDeployment, createCoordinator } from '../actors/coordinator/coordinator.js';
import type { ActorInspector } from '../actors/inspection.js';
import type { WorkHandler } from '../actors/worker/handler.js';
import type { ItemStatus } from '../actors/coordinator/types.js';
import {
  DEV_SDLC_WORKFLOW_PATH,
  SHIPPED_WORKFLOWS_DIR,
  loadWorkflowFile,
} from '../actors/coordinator/workflow-loader.js';
import { join } from 'node:path';
import { FANOUT_HANDLERS } from './fanout-roles.js';
import type { Logger } from '../log/logger.js';
import type { PoolDeployment } from '../machines/pool-machine.js';
import type { AuditVerification } from '../persistence/audit/chain-walk.js';
import { auditLine, itemTable, progressLine } from './progress.js';
import { DEMO_HANDLERS } from './roles.js';

/**
 * The end-to-end demo: the dev SDLC workflow on the embedded default (one
 * SQLite file for the broker, the bus, the Context Engine, the audit and the
 * Coordinator; worker pools in this process), two work items on the same
 * definition. Progress is reported as it happens; the result is a summary.
 */

export const DEMO_APPROVER = 'release-manager';

export const DEMO_REQUESTS = [
  'Add rate limiting to the public API',
  'Export invoices as CSV from the billing page',
] as const;

/** Scale-to-zero for the architect (asked rarely), warm pools for the others: deployment config only. */
export const DEMO_DEPLOYMENTS: Record<string, PoolDeployment> = {
  architect: { minReplicas: 0, maxReplicas: 1, idleTimeoutMs: 150, concurrency: 2 },
  coding: { minReplicas: 1, maxReplicas: 2, idleTimeoutMs: 1_000, concurrency: 2 },
  testing: { minReplicas: 1, maxReplicas: 2, idleTimeoutMs: 1_000, concurrency: 2 },
  devops: { minReplicas: 1, maxReplicas: 1, idleTimeoutMs: 1_000, concurrency: 2 },
};

/** The shipped workflows the demo runs. */
export const DEMO_WORKFLOWS = ['dev-sdlc', 'review-fanout'] as const;
export type DemoWorkflow = (typeof DEMO_WORKFLOWS)[number];

/** The review fan-out's pools: warm coding (three tasks at once), the rest small. */
const FANOUT_DEPLOYMENTS: Record<string, PoolDeployment> = {
  architect: { minReplicas: 0, maxReplicas: 1, idleTimeoutMs: 150, concurrency: 2 },
  coding: { minReplicas: 1, maxReplicas: 2, idleTimeoutMs: 1_000, concurrency: 3 },
  security: { minReplicas: 1, maxReplicas: 1, idleTimeoutMs: 1_000, concurrency: 2 },
  qa: { minReplicas: 1, maxReplicas: 1, idleTimeoutMs: 1_000, concurrency: 2 },
  devops: { minReplicas: 1, maxReplicas: 1, idleTimeoutMs: 1_000, concurrency: 2 },
};

/** How the approval gate is answered. */
export type ApprovalMode =
  | 'approve'
  | 'deny'
  | ((item: { id: string; label: string; title: string }) => Promise<boolean>);

export interface DemoOptions {
  path: string;
  /** The shipped workflow to run (default `dev-sdlc`). */
  workflow?: DemoWorkflow;
  approval: ApprovalMode;
  /** Each progress line, as it happens. */
  onLine?: (line: string) => void;
  logger?: Logger;
  /** An inspector (`--inspect`) for every root actor of the run: broker, workflow runs, pools. */
  inspect?: ActorInspector | undefined;
  /** The roles' handlers in place of the scripted DEMO agents (`demo --models`: model agents). */
  handlers?: Record<string, WorkHandler> | undefined;
}

export interface DemoItemSummary {
  id: string;
  state: string;
  hops: number;
  costUsd: number;
  tokens: number;
  elapsedMs: number;
}

export interface DemoSummary {
  items: DemoItemSummary[];
  audit: { ok: boolean; entries: number };
  /** Every item ended as the approval asked (completed when approved, failed by the denial when denied). */
  asExpected: boolean;
  /** The report lines: per-item tables and the audit verification. */
  report: string[];
  verification: AuditVerification;
}

export async function runDemo(options: DemoOptions): Promise<DemoSummary> {
  const fanout = options.workflow === 'review-fanout';
  const definition = loadWorkflowFile(
    fanout ? join(SHIPPED_WORKFLOWS_DIR, 'review-fanout.json') : DEV_SDLC_WORKFLOW_PATH,
  );
  const handlers = options.handlers ?? (fanout ? FANOUT_HANDLERS : DEMO_HANDLERS);
  const deployments: Record<string, RoleDeployment> = {};
  for (const [role, deployment] of Object.entries(fanout ? FANOUT_DEPLOYMENTS : DEMO_DEPLOYMENTS)) {
    deployments[role] = { handler: handlers[role]!, deployment, observeIntervalMs: 20, pollWaitMs: 50 };
  }
  const coordinator: Coordinator = await createCoordinator({
    path: options.path,
    definitions: [definition],
    deployments,
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    ...(options.inspect === undefined ? {} : { inspect: options.inspect }),
  });
  const emit = options.onLine ?? (() => {});
  const startedAt = Date.now();
  const labels = new Map<string, { label: string; title: string }>();
  let approvals = Promise.resolve();
  const decisions: Promise<void>[] = [];
  try {
    const ids: string[] = [];
    // Every status, as it happens (the 'created' and first 'dispatched' come before createWorkItem returns).
    const subscription = coordinator.statuses$.subscribe((status) => {
      let known = labels.get(status.id);
      if (known === undefined) {
        // A child work item is named after its parent and its branch (`item A/security`, `item A/0`).
        const parent = [...labels.entries()].find(([id]) => status.id.startsWith(`${id}.`));
        if (parent !== undefined) {
          const [, , ...branch] = status.id.slice(parent[0].length).split('.');
          known = { label: `${parent[1].label}/${branch.join('.')}`, title: parent[1].title };
        } else {
          const i = [...labels.values()].filter((l) => !l.label.includes('/')).length;
          known = { label: `item ${String.fromCharCode(65 + i)}`, title: DEMO_REQUESTS[i] ?? '' };
        }
        labels.set(status.id, known);
      }
      emit(progressLine(status, known.label, startedAt));
      if (status.event.kind === 'approval-requested') {
        const item = { id: status.id, ...known };
        // One prompt at a time: the second item's gate waits for the first answer.
        approvals = approvals
          .then(() => decide(coordinator, options.approval, item))
          .catch((error: unknown) =>
            emit(`  ${known.label}: the approval failed: ${(error as Error)?.message ?? error}`),
          );
        decisions.push(approvals);
      }
    });
    const settled: Promise<ItemStatus>[] = [];
    for (const title of DEMO_REQUESTS) {
      const id = await coordinator.createWorkItem({ workflow: definition.id, input: title });
      ids.push(id);
      settled.push(coordinator.settled(id));
    }
    const finals = await Promise.all(settled);
    await Promise.all(decisions);
    subscription.unsubscribe();
    await coordinator.mirrored();
    const verification = await coordinator.audit.verifyChain({ expectedHead: await coordinator.audit.head() });
    const report: string[] = [];
    const items: DemoItemSummary[] = [];
    const all = await coordinator.listItems();
    for (const id of ids) {
      const item = (await coordinator.getItem(id))!;
      const hops = await coordinator.listHops(id);
      const { label, title } = labels.get(id)!;
      const children = all.filter((c) => c.attributes?.['switchboard.parent'] === id);
      report.push('', ...itemTable(item, hops, label.replace('item ', ''), title, children));
      items.push({
        id,
        state: item.state,
        hops: item.hops,
        costUsd: item.usage.costUsd,
        tokens: item.usage.inputTokens + item.usage.outputTokens,
        elapsedMs: item.finishedAt === null ? 0 : item.finishedAt - item.createdAt,
      });
    }
    report.push('', auditLine(verification));
    const denied = options.approval === 'deny';
    const asExpected = finals.every((s) =>
      denied ? s.state === 'failed' && s.failure?.code === 'APPROVAL_DENIED' : s.state === 'completed',
    );
    return {
      items,
      audit: { ok: verification.ok, entries: verification.ok ? verification.entries : verification.seq - 1 },
      asExpected: typeof options.approval === 'function' ? finals.every((s) => s.finishedAt !== null) : asExpected,
      report,
      verification,
    };
  } finally {
    await coordinator.close();
  }
}

async function decide(
  coordinator: Coordinator,
  mode: ApprovalMode,
  item: { id: string; label: string; title: string },
): Promise<void> {
  const approve = typeof mode === 'function' ? await mode(item) : mode === 'approve';
  if (approve) await coordinator.approve(item.id, DEMO_APPROVER);
  else await coordinator.deny(item.id, DEMO_APPROVER, 'not this release');
}
