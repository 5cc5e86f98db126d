import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Coordinator,
  type CoordinatorOptions,
  type RoleDeployment,
  createCoordinator,
} from '../../src/actors/coordinator/coordinator.js';
import type { WorkHandler } from '../../src/actors/worker/worker.js';
import { DEV_SDLC_WORKFLOW_PATH, loadWorkflowFile } from '../../src/actors/coordinator/workflow-loader.js';
import { DEMO_HANDLERS } from '../../src/demo/roles.js';
import type { PoolDeployment } from '../../src/machines/pool-machine.js';
import type { WorkflowDefinition } from '../../src/protocol/workflow.js';

export const devSdlc: WorkflowDefinition = loadWorkflowFile(DEV_SDLC_WORKFLOW_PATH);

export const WARM: PoolDeployment = { minReplicas: 1, maxReplicas: 2, idleTimeoutMs: 1_000, concurrency: 2 };
export const TO_ZERO: PoolDeployment = { minReplicas: 0, maxReplicas: 1, idleTimeoutMs: 60, concurrency: 2 };

export function deployments(
  handlers: Record<string, WorkHandler> = DEMO_HANDLERS,
  pools: Record<string, PoolDeployment> = {},
): Record<string, RoleDeployment> {
  const out: Record<string, RoleDeployment> = {};
  for (const [role, handler] of Object.entries(handlers)) {
    out[role] = {
      handler,
      deployment: pools[role] ?? (role === 'architect' ? TO_ZERO : WARM),
      observeIntervalMs: 10,
      pollWaitMs: 50,
    };
  }
  return out;
}

export interface Fixture {
  dir: string;
  path: string;
  coordinator: Coordinator;
  close(): Promise<void>;
}

export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'sb-coord-'));
}

export async function openFixture(options: Partial<CoordinatorOptions> = {}, dir = tempDir()): Promise<Fixture> {
  const path = join(dir, 'switchboard.db');
  const coordinator = await createCoordinator({
    path,
    definitions: [devSdlc],
    deployments: deployments(),
    ...options,
  });
  return {
    dir,
    path,
    coordinator,
    async close() {
      await coordinator.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Approves every item that reaches an approval gate, as `approver`. */
export function autoApprove(coordinator: Coordinator, approver = 'release-manager'): () => void {
  const sub = coordinator.statuses$.subscribe((s) => {
    if (s.event.kind === 'approval-requested' && s.approval?.source === 'gate') {
      coordinator.approve(s.id, approver).catch(() => {});
    }
  });
  return () => sub.unsubscribe();
}

export async function until(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
