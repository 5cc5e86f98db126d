import { parseWorkflowDefinition } from '../src/workflow/definition.js';

/**
 * The workflow the Coordinator benches run (bench:coordinator on SQLite and
 * bench:coordinator:postgres): four stages in a line, one role each.
 */
export const ROLES = ['plan', 'build', 'check', 'ship'] as const;

export const definition = parseWorkflowDefinition({
  id: 'bench-4',
  version: 1,
  start: 'plan',
  stages: {
    plan: { role: 'plan', next: [{ on: 'succeeded', goto: 'build' }] },
    build: { role: 'build', next: [{ on: 'succeeded', goto: 'check' }] },
    check: { role: 'check', next: [{ on: 'succeeded', goto: 'ship' }] },
    ship: { role: 'ship', next: [{ on: 'succeeded', end: 'completed' }] },
  },
});

/** A progress line on stderr (the figures go to stdout). */
export function progress(text: string): void {
  process.stderr.write(`${text}\n`);
}
