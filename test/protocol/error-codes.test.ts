import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { TaskActorError } from '../../src/actors/broker/task-actors.js';
import { CliUsageError } from '../../src/cli/command-args.js';
import * as lib from '../../src/index.js';
import { ConsoleError } from '../../src/console/console-server.js';
import { ConsoleUserError } from '../../src/console/console-users.js';
import { GatewayError } from '../../src/gateway/gateway-keys.js';
import { InspectorError } from '../../src/inspect/inspector-server.js';
import { ERROR_CODES, SWITCHBOARD_ERROR_CODES, SwitchboardError } from '../../src/protocol/switchboard-error.js';
import { JSONRPC_CODE_OF } from '../../src/transport/jsonrpc-errors.js';

const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');

/** The rows of the table in docs/errors.md: code, class and JSON-RPC column. */
function documentedRows(): { code: string; className: string; jsonRpc: string }[] {
  const rows: { code: string; className: string; jsonRpc: string }[] = [];
  for (const line of doc.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    const code = /^`([A-Z0-9_]+)`$/.exec(cells[1] ?? '')?.[1];
    const className = /^`(\w+)`$/.exec(cells[2] ?? '')?.[1];
    if (code !== undefined && className !== undefined) rows.push({ code, className, jsonRpc: cells[3] ?? '' });
  }
  return rows;
}

describe('the error codes', () => {
  it('each code belongs to one class', () => {
    expect(new Set(SWITCHBOARD_ERROR_CODES).size).toBe(SWITCHBOARD_ERROR_CODES.length);
  });

  it('docs/errors.md lists exactly the codes of ERROR_CODES, each once, with its class and wire code', () => {
    const rows = documentedRows();
    expect(rows.map((r) => r.code).sort()).toEqual([...SWITCHBOARD_ERROR_CODES].sort());
    expect(new Set(rows.map((r) => r.code)).size).toBe(rows.length);
    const wire = JSONRPC_CODE_OF as Readonly<Record<string, number>>;
    for (const [className, codes] of Object.entries(ERROR_CODES)) {
      for (const code of codes) {
        const row = rows.find((r) => r.code === code);
        expect(row?.className, code).toBe(className);
        expect(row?.jsonRpc, code).toBe(className === 'BrokerError' ? String(wire[code]) : '');
      }
    }
  });

  it('every class of the table extends SwitchboardError and carries its own codes', () => {
    const classes: Record<string, unknown> = {
      ...lib,
      TaskActorError,
      CliUsageError,
      InspectorError,
      ConsoleError,
      ConsoleUserError,
      GatewayError,
    };
    for (const [className, codes] of Object.entries(ERROR_CODES)) {
      const cls = classes[className] as { prototype: unknown } | undefined;
      expect(cls, `${className} is exported`).toBeDefined();
      expect(cls?.prototype instanceof SwitchboardError, className).toBe(true);
      expect(codes.length, className).toBeGreaterThan(0);
    }
    const error = new lib.BusError('BUS_CLOSED', 'closed', { details: { queue: 'q' }, cause: 'why' });
    expect(error).toBeInstanceOf(SwitchboardError);
    expect(error).toMatchObject({ name: 'BusError', code: 'BUS_CLOSED', details: { queue: 'q' }, cause: 'why' });
  });
});
