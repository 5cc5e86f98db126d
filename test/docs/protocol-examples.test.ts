import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import * as protocol from '../../src/entry/protocol.js';

// Every ```json block of docs/protocol.md is an example of the wire. The
// line before its fence names the schema it is an instance of, as exported
// from `a2a-switchboard/protocol`:
//   <!-- schema: RegisterParamsSchema -->
// Each example must parse with that schema and come back unchanged (zod
// drops unknown keys: a key the schema does not know would vanish), so the
// page cannot drift from the schemas. Every method's params and result,
// and both notifications' params, must have an example.

const root = new URL('../..', import.meta.url).pathname;
const page = readFileSync(join(root, 'docs/protocol.md'), 'utf8');

interface Example {
  line: number;
  schemaName: string | undefined;
  json: string;
}

const examples: Example[] = [...page.matchAll(/(?:<!--\s*schema:\s*(\w+)\s*-->[ \t]*\n)?```json\n([\s\S]*?)```/g)].map(
  (match) => ({
    line: page.slice(0, match.index).split('\n').length + (match[1] ? 1 : 0),
    schemaName: match[1],
    json: match[2] ?? '',
  }),
);

function schemaNamed(name: string): z.ZodType | undefined {
  const value = (protocol as Record<string, unknown>)[name];
  return value !== null && typeof value === 'object' && 'safeParse' in value ? (value as z.ZodType) : undefined;
}

describe('docs/protocol.md: its JSON examples', () => {
  it('are found, and every one names its schema', () => {
    expect(examples.length).toBeGreaterThanOrEqual(30);
    expect(examples.filter((e) => e.schemaName === undefined).map((e) => `docs/protocol.md:${e.line}`)).toEqual([]);
  });

  for (const example of examples.filter((e) => e.schemaName !== undefined)) {
    it(`docs/protocol.md:${example.line} is a ${example.schemaName}, exactly`, () => {
      const schema = schemaNamed(example.schemaName ?? '');
      expect(schema, `${example.schemaName} is a schema exported from a2a-switchboard/protocol`).toBeDefined();
      const value: unknown = JSON.parse(example.json);
      const parsed = schema?.safeParse(value);
      expect(parsed?.error?.issues ?? []).toEqual([]);
      expect(parsed?.data).toEqual(value);
    });
  }

  it('cover every method (params and result) and both notifications', () => {
    const shown = new Set(examples.map((e) => schemaNamed(e.schemaName ?? '')).filter((s) => s !== undefined));
    const missing: string[] = [];
    for (const name of protocol.METHOD_NAMES) {
      const { params, result } = protocol.METHODS[name];
      if (!shown.has(params as z.ZodType)) missing.push(`${name} params`);
      if (!shown.has(result as z.ZodType)) missing.push(`${name} result`);
    }
    for (const [name, schema] of [
      ['a2a.task.event', protocol.TaskEventNotificationSchema],
      ['a2a.push', protocol.PushNotificationSchema],
    ] as const) {
      if (!shown.has(schema)) missing.push(`${name} params`);
    }
    expect(missing).toEqual([]);
    // Both notifications and every event kind are named on the page.
    for (const name of protocol.NOTIFICATION_METHODS) expect(page).toContain(`\`${name}\``);
    for (const kind of protocol.TaskEventSchema.options.map((o) => o.shape.kind.value)) {
      expect(page).toContain(`"kind": "${kind}"`);
    }
    for (const kind of protocol.AgentKindSchema.options) expect(page).toContain(`**\`${kind}\`**`);
  });

  it('a wrong example fails: an unknown key, a missing field, a wrong schema', () => {
    const params = { name: 'reviewer', contextId: 'session-1' };
    expect(protocol.RegisterParamsSchema.safeParse({ ...params, colour: 'red' }).data).not.toEqual({
      ...params,
      colour: 'red',
    });
    expect(protocol.RegisterParamsSchema.safeParse({ name: 'reviewer' }).success).toBe(false);
    expect(protocol.TaskEventNotificationSchema.safeParse(params).success).toBe(false);
  });

  it('state the protocol and schema versions the code has, as docs/broker.md does', () => {
    expect(page).toContain(`Protocol version **${protocol.PROTOCOL_VERSION}**`);
    expect(page).toContain(`schema version **${protocol.SCHEMA_VERSION}**`);
    const broker = readFileSync(join(root, 'docs/broker.md'), 'utf8');
    expect(broker).toContain(`current version ${protocol.SCHEMA_VERSION}.`);
    // The owner lock exists: the page says a second broker is refused, not that nothing stops it.
    expect(broker).not.toMatch(/nothing stops/);
    expect(broker).toContain('BROKER_FILE_OWNED');
  });
});
