import { outputSummary } from '../workflow/item-output.js';
import { siblingOrder } from '../workflow/item-tree.js';
import type { HopRecord, ItemRecord } from '../workflow/records.js';
import type { ItemStatus } from '../actors/coordinator/types.js';
import type { AuditVerification } from '../persistence/audit/chain-walk.js';

/**
 * The demo's output: one readable line per event as it happens, then a
 * table of each item's hops with cost, tokens and time, then the audit
 * verification. Pure string building; the caller writes the lines.
 */

export function usd(amount: number): string {
  return `$${amount.toFixed(4)}`;
}

function pad(text: string, width: number): string {
  return text.length >= width ? text : text + ' '.repeat(width - text.length);
}

function padLeft(text: string, width: number): string {
  return text.length >= width ? text : ' '.repeat(width - text.length) + text;
}

/** One progress line: time since the demo started, item, hop, stage, role, what happened, and its cost. */
export function progressLine(status: ItemStatus, label: string, startedAt: number): string {
  const e = status.event;
  const time = padLeft(`+${((e.at - startedAt) / 1000).toFixed(3)}s`, 8);
  const hop = e.hop === null || e.hop === 0 ? '      ' : pad(`hop ${e.hop}`, 6);
  const where = pad(e.stage ?? '', 10);
  const role = pad(e.role === null ? '' : e.role === e.stage ? '' : `(${e.role})`, 12);
  let cost = '';
  if (e.usage !== undefined && (e.usage.costUsd > 0 || e.usage.inputTokens > 0)) {
    const tokens = e.usage.inputTokens + e.usage.outputTokens;
    cost = `  [${tokens} tok, ${usd(e.usage.costUsd)}, ${e.model ?? '?'}]`;
  }
  return `${time}  ${pad(label, 7)} ${hop} ${where} ${role} ${e.detail}${cost}`;
}

/** The per-item table of hops. */
export function itemTable(
  item: ItemRecord,
  hops: readonly HopRecord[],
  label: string,
  title: string,
  children: readonly ItemRecord[] = [],
): string[] {
  const header = ['#', 'hop', 'stage', 'role', 'kind', 'state', 'model', 'in tok', 'out tok', 'cost', 'ms'];
  // A child work item's row: its branch, its workflow, and its rolled-up cost (its own children's in it).
  const childRows = siblingOrder(children).map((c) => {
    const at = String(c.attributes?.['switchboard.branch'] ?? '');
    const split = at.indexOf(':');
    return {
      hop: Number(at.slice(0, split)),
      cells: [
        '',
        at.slice(0, split),
        at.slice(split + 1),
        c.workflow.id.split('--').slice(1).join('/') || c.workflow.id,
        'child',
        c.state,
        '-',
        String(c.usage.inputTokens),
        String(c.usage.outputTokens),
        usd(c.usage.costUsd),
        String(Math.round(c.usage.elapsedMs)),
      ],
    };
  });
  const hopRows = hops.map((h) => ({
    hop: h.hop,
    cells: [
      String(h.seq),
      String(h.hop),
      h.stage,
      h.role,
      h.kind,
      h.state,
      h.model ?? '-',
      String(h.usage.inputTokens),
      String(h.usage.outputTokens),
      usd(h.usage.costUsd),
      String(Math.round(h.usage.elapsedMs)),
    ],
  }));
  const rows = [...hopRows, ...childRows].sort((a, b) => a.hop - b.hop).map((r) => r.cells);
  const u = item.usage;
  const total = [
    children.length === 0 ? 'total' : 'total with children',
    '',
    '',
    '',
    '',
    '',
    '',
    String(u.inputTokens),
    String(u.outputTokens),
    usd(u.costUsd),
    String(Math.round(u.elapsedMs)),
  ];
  const widths = header.map((h, i) => Math.max(h.length, ...[...rows, total].map((r) => r[i]!.length)));
  const numeric = new Set([0, 1, 7, 8, 9, 10]);
  const line = (cells: string[]) =>
    `  ${cells.map((c, i) => (numeric.has(i) ? padLeft(c, widths[i]!) : pad(c, widths[i]!))).join('  ')}`.trimEnd();
  const rule = `  ${widths.map((w) => '-'.repeat(w)).join('  ')}`;
  const wall = item.finishedAt === null ? '' : `, ${item.finishedAt - item.createdAt} ms wall clock`;
  const outcome =
    item.failure === null ? item.state : `${item.state} (${item.failure.code}: ${item.failure.reason.slice(0, 120)})`;
  return [
    `Item ${label}: ${title}`,
    `  ${item.id}: ${outcome}, ${item.hops} hops${children.length === 0 ? '' : `, ${children.length} child work items`}${wall}`,
    line(header),
    rule,
    ...rows.map(line),
    rule,
    line(total),
    `  output: ${cut(outputSummary(item.output), 110)}`,
  ];
}

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

export function auditLine(verification: AuditVerification): string {
  if (verification.ok) {
    return `Audit: ${verification.entries} entries, hash chain verified (head #${verification.head.seq} ${verification.head.hash.slice(0, 16)}…)`;
  }
  return `Audit: BROKEN at row ${verification.seq}: ${verification.reason}: ${verification.detail}`;
}
