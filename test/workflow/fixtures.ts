import { readFileSync } from 'node:fs';
import { DEV_SDLC_WORKFLOW_PATH } from '../../src/actors/coordinator/workflow-loader.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import type { WorkflowDefinition, WorkflowDefinitionInput } from '../../src/protocol/workflow.js';

/** The roles of the dev SDLC demo. */
export const DEV_ROLES = ['architect', 'coding', 'testing', 'devops'] as const;

/** The shipped dev SDLC definition, as written on disk. */
export function devSdlcJson(): WorkflowDefinitionInput {
  return JSON.parse(readFileSync(DEV_SDLC_WORKFLOW_PATH, 'utf8')) as WorkflowDefinitionInput;
}

export const DEV_SDLC: WorkflowDefinition = parseWorkflowDefinition(devSdlcJson(), { knownRoles: DEV_ROLES });

/**
 * A definition that exercises what the dev SDLC does not: a gate on the
 * start stage, a stage bound (`maxVisits`) reached through a success loop,
 * explicit `end: failed` with a reason, an error-type branch next to a
 * catch-all failure branch, and a failure that completes the run.
 */
export const REVIEW_LOOP: WorkflowDefinition = parseWorkflowDefinition({
  id: 'review-loop',
  version: 2,
  start: 'draft',
  defaults: { retry: { initialInterval: 10, maximumAttempts: 2 } },
  stages: {
    draft: {
      role: 'writer',
      approval: { approvers: ['editor', 'chief'] },
      next: [
        { on: 'succeeded', goto: 'review' },
        { on: 'failed', errorType: 'Writer-block', end: 'failed', reason: 'the writer gave up' },
      ],
    },
    review: {
      role: 'reviewer',
      maxVisits: 3,
      retry: { maximumAttempts: 1 },
      next: [
        { on: 'succeeded', goto: 'review' },
        { on: 'failed', errorType: 'Rewrite', goto: 'draft', maxTraversals: 1 },
        { on: 'failed', goto: 'publish' },
      ],
    },
    publish: {
      role: 'publisher',
      retry: { maximumAttempts: 3, nonRetryableErrorTypes: ['Duplicate'] },
      next: [{ on: 'failed', errorType: 'Duplicate', end: 'completed' }],
    },
  },
});

/** One stage, no rules: success completes, failure fails. */
export const SINGLE: WorkflowDefinition = parseWorkflowDefinition({
  id: 'single',
  version: 1,
  start: 'only',
  stages: { only: { role: 'worker', retry: { maximumAttempts: 2, initialInterval: 0 } } },
});

/** A self-loop bounded by its rule (`maxTraversals`) alone, with no stage bound behind it. */
export const EDGE_BOUND: WorkflowDefinition = parseWorkflowDefinition({
  id: 'edge-bound',
  version: 1,
  start: 'try',
  stages: {
    try: {
      role: 'worker',
      retry: { maximumAttempts: 1 },
      next: [
        { on: 'failed', errorType: 'TestsFailed', goto: 'try', maxTraversals: 2 },
        { on: 'failed', errorType: 'Flaky', goto: 'try', maxTraversals: 1 },
      ],
    },
  },
});

export const ALL_FIXTURES = [DEV_SDLC, REVIEW_LOOP, SINGLE, EDGE_BOUND] as const;
