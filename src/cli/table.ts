/**
 * Plain-text tables for the operator commands: a header, a rule, the rows,
 * columns padded to their widest cell (numbers right-aligned). Pure string
 * building; the caller writes the lines.
 */

export interface TableColumn {
  header: string;
  /** `right` for numbers. Default `left`. */
  align?: 'left' | 'right';
  /** Longer cells are cut to this many characters, ending in `…`. */
  maxWidth?: number;
}

function cut(text: string, max: number | undefined): string {
  if (max === undefined || text.length <= max) return text;
  return max <= 1 ? text.slice(0, max) : `${text.slice(0, max - 1)}…`;
}

/** The lines of a table; `footer` rows (totals) come after a second rule. */
export function renderTable(
  columns: readonly TableColumn[],
  rows: readonly (readonly string[])[],
  footer: readonly (readonly string[])[] = [],
): string[] {
  const cells = (row: readonly string[]) => columns.map((c, i) => cut((row[i] ?? '').replace(/\s+/g, ' '), c.maxWidth));
  const body = rows.map(cells);
  const foot = footer.map(cells);
  const widths = columns.map((c, i) => Math.max(c.header.length, ...[...body, ...foot].map((r) => r[i]!.length)));
  const line = (row: readonly string[]) =>
    row
      .map((cell, i) => (columns[i]!.align === 'right' ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  const out = [line(columns.map((c) => c.header)), rule, ...body.map(line)];
  if (foot.length > 0) out.push(rule, ...foot.map(line));
  return out;
}

/** Dollars with four decimals (`$0.0123`). */
export function formatUsd(amount: number): string {
  return `$${amount.toFixed(4)}`;
}

/** Milliseconds, rounded (`1234 ms`), or seconds past ten seconds (`12.3 s`). */
export function formatDuration(ms: number): string {
  return ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`;
}

/** An epoch-milliseconds time as ISO 8601 (UTC), or `-`. */
export function formatEpoch(ms: number | null | undefined): string {
  return ms === null || ms === undefined || ms <= 0 ? '-' : new Date(ms).toISOString();
}
