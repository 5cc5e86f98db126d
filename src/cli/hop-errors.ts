import type { HopRecord } from '../workflow/records.js';

/**
 * The errors of a work item's failed hops in full, for `items show`: each
 * hop's error with the stack of the error its handler threw (as the worker
 * kept it, cut to 4096 characters). Nothing when no failed hop has a stack.
 */
export function hopErrorLines(hops: readonly HopRecord[]): string[] {
  const out: string[] = [];
  for (const h of hops) {
    const stack = h.error?.stack;
    if (h.error === null || stack === undefined) continue;
    const head = `${h.error.type}: ${h.error.message}`;
    out.push(`  hop ${h.hop} (#${h.seq}, ${h.stage}, role ${h.role}): ${head}`);
    const lines = stack.split('\n');
    // The stack's first line says what the header says (unless the thrown error's name is not its type).
    if (lines[0] === head) lines.shift();
    for (const line of lines) out.push(`    ${line.trimStart()}`);
  }
  return out.length === 0 ? [] : ['', 'Hop errors (the stack each handler threw):', ...out];
}
