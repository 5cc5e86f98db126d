import type { KeyObject } from 'node:crypto';
import { join } from 'node:path';
import type { HopRecord, ItemRecord } from '../../src/workflow/records.js';
import { createCoordinator } from '../../src/actors/coordinator/coordinator.js';
import { DEV_SDLC_WORKFLOW_PATH, loadWorkflowFile } from '../../src/actors/coordinator/workflow-loader.js';
import { DEMO_HANDLERS } from '../../src/demo/roles.js';
import type { UsageGroup } from '../../src/workflow/records.js';

/**
 * A database written by a real Coordinator: two work items on the dev SDLC
 * definition (scripted role handlers), approved at the gate, mirrored to the
 * broker, then closed. Returns what the Coordinator's own reads said, for
 * the CLI's answers to be compared with.
 */
export interface CoordinatorDb {
  path: string;
  items: ItemRecord[];
  hops: Map<string, HopRecord[]>;
  usage: Record<'agent' | 'model' | 'task', UsageGroup[]>;
  auditEntries: number;
}

/** `auditKey`: signs the audit head (checkpoints) at every item's end. */
export async function buildCoordinatorDb(dir: string, auditKey?: KeyObject): Promise<CoordinatorDb> {
  const path = join(dir, 'switchboard.db');
  const definition = loadWorkflowFile(DEV_SDLC_WORKFLOW_PATH);
  const deployments = Object.fromEntries(
    Object.entries(DEMO_HANDLERS).map(([role, handler]) => [
      role,
      {
        handler,
        deployment: { minReplicas: 1, maxReplicas: 1, idleTimeoutMs: 1_000, concurrency: 2 },
        observeIntervalMs: 10,
        pollWaitMs: 50,
      },
    ]),
  );
  const coordinator = await createCoordinator({
    path,
    definitions: [definition],
    deployments,
    ...(auditKey === undefined ? {} : { auditKey }),
  });
  try {
    const sub = coordinator.statuses$.subscribe((s) => {
      if (s.event.kind === 'approval-requested') coordinator.approve(s.id, 'release-manager').catch(() => {});
    });
    const ids = [
      await coordinator.createWorkItem({ workflow: definition.id, input: 'Add rate limiting to the public API' }),
      await coordinator.createWorkItem({ workflow: definition.id, input: 'Export invoices as CSV' }),
    ];
    await Promise.all(ids.map((id) => coordinator.settled(id)));
    sub.unsubscribe();
    await coordinator.mirrored();
    return {
      path,
      items: await Promise.all(ids.map(async (id) => (await coordinator.getItem(id))!)),
      hops: new Map(await Promise.all(ids.map(async (id) => [id, await coordinator.listHops(id)] as const))),
      usage: {
        agent: await coordinator.tables.readUsageBy('agent'),
        model: await coordinator.tables.readUsageBy('model'),
        task: await coordinator.tables.readUsageBy('task'),
      },
      auditEntries: (await coordinator.audit.head()).seq,
    };
  } finally {
    await coordinator.close();
  }
}
