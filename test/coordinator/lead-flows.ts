import { parseWorkflowDefinition } from '../../src/workflow/definition.js';

/**
 * The workflows of a hop that starts child work items itself: `lead-flow@1`
 * (one stage, role `lead`, whose handler spawns) and `research@1` (one
 * stage, role `researcher`: each child).
 */

export const leadFlow = parseWorkflowDefinition({
  id: 'lead-flow',
  version: 1,
  start: 'lead',
  stages: { lead: { role: 'lead' } },
});

export const researchFlow = parseWorkflowDefinition({
  id: 'research',
  version: 1,
  start: 'look',
  stages: { look: { role: 'researcher' } },
});
