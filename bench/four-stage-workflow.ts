import type { RoleDeployment } from '../src/actors/coordinator/coordinator.js';
import { complete } from '../src/actors/worker/worker.js';
import { parseWorkflowDefinition } from '../src/workflow/definition.js';

/**
 * The workflow the Coordinator benches run (bench:coordinator on SQLite and
 * bench:coordinator:postgres): the four stages of the dev SDLC in a line,
 * one role each, without its loop back or its approval.
 */
export const ROLES = ['architect', 'coding', 'testing', 'devops'] as const;

export const definition = parseWorkflowDefinition({
  id: 'bench-4',
  version: 1,
  start: 'architect',
  stages: {
    architect: { role: 'architect', next: [{ on: 'succeeded', goto: 'coding' }] },
    coding: { role: 'coding', next: [{ on: 'succeeded', goto: 'testing' }] },
    testing: { role: 'testing', next: [{ on: 'succeeded', goto: 'devops' }] },
    devops: { role: 'devops', next: [{ on: 'succeeded', end: 'completed' }] },
  },
});

/** The usage every no-op handler reports. */
export const NOOP_USAGE = { inputTokens: 100, outputTokens: 20, costUsd: 0.0001, model: 'noop' } as const;

/**
 * One in-process pool per role (one replica, `concurrency` hops at once,
 * default 16) whose handler completes at once.
 */
export function noopDeployments(concurrency = 16): Record<string, RoleDeployment> {
  const deployments: Record<string, RoleDeployment> = {};
  for (const role of ROLES) {
    deployments[role] = {
      handler: () => complete({ usage: { ...NOOP_USAGE } }),
      deployment: { minReplicas: 1, maxReplicas: 1, idleTimeoutMs: 60_000, concurrency },
      pollWaitMs: 200,
      observeIntervalMs: 100,
    };
  }
  return deployments;
}

/** A progress line on stderr (the figures go to stdout). */
export function progress(text: string): void {
  process.stderr.write(`${text}\n`);
}
