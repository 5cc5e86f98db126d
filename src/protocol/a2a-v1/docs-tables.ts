import { FIELD_TABLE } from './field-table.js';
import { V1_LOCAL_METHODS, V1_METHODS, V1_REFUSED_METHODS } from './methods.js';

function cell(text: string): string {
  return text.replaceAll('|', '\\|');
}

/** `FIELD_TABLE` as the Markdown table docs/interop.md shows (a test keeps the page equal to it). */
export function fieldTableMarkdown(): string {
  const rows = FIELD_TABLE.map(
    (row) =>
      `| ${row.shape} | ${row.v03 === '-' ? '–' : `\`${cell(row.v03)}\``} | ${row.v1 === '-' ? '–' : `\`${cell(row.v1)}\``} | ${cell(row.rule)} |`,
  );
  return ['| Shape | v0.3 (version 10) | v1.0 (version 11) | How |', '| --- | --- | --- | --- |', ...rows].join('\n');
}

/** The methods of version 11 as the Markdown table docs/interop.md shows. */
export function methodTableMarkdown(): string {
  const rows = [
    ...Object.entries(V1_METHODS).map(([name, row]) => `| \`${name}\` | \`${row.serves}\` | ${cell(row.note)} |`),
    ...Object.entries(V1_LOCAL_METHODS).map(([name, row]) => `| \`${name}\` | \`${row.serves}\` | ${cell(row.note)} |`),
    ...Object.entries(V1_REFUSED_METHODS).map(([name, why]) => `| \`${name}\` | refused (-32601) | ${cell(why)} |`),
  ];
  return ['| Version 11 method | Served by (version 10) | Notes |', '| --- | --- | --- |', ...rows].join('\n');
}
