import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fieldTableMarkdown, methodTableMarkdown } from '../../src/protocol/a2a-v1/docs-tables.js';

const root = new URL('../..', import.meta.url).pathname;
const page = readFileSync(join(root, 'docs/interop.md'), 'utf8');

function generated(name: string): string | undefined {
  const match = new RegExp(`<!-- generated: ${name} -->\\n([\\s\\S]*?)\\n<!-- end generated -->`).exec(page);
  return match?.[1];
}

describe('docs/interop.md', () => {
  it('shows the v0.3/v1.0 field table as the mapping reads it', () => {
    expect(generated('a2a-v1 fields')).toBe(fieldTableMarkdown());
  });

  it('shows the methods of version 11 as the edge serves them', () => {
    expect(generated('a2a-v1 methods')).toBe(methodTableMarkdown());
  });
});
