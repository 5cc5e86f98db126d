import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { WORKFLOW_RUN_TRANSITIONS } from '../../src/machines/workflow-run-transitions.js';

describe('docs/workflows.md', () => {
  it('shows the WorkflowRun transition table exactly as the data has it, in order', () => {
    const text = readFileSync(new URL('../../docs/workflows.md', import.meta.url), 'utf8');
    const section = text.slice(text.indexOf('### The transition table'), text.indexOf('### Routing'));
    const rows = section
      .split('\n')
      .filter((line) => line.startsWith('| `'))
      .map((line) =>
        line
          .split('|')
          .slice(1, -1)
          .map((cell) => cell.trim().replaceAll('`', '')),
      );
    expect(rows).toEqual(WORKFLOW_RUN_TRANSITIONS.map((t) => [t.from, t.event, t.when, t.to, t.effect]));
  });
});
