import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { expect } from 'vitest';
import { type Broker, type BrokerOptions, createBroker } from '../../src/actors/broker/broker.js';
import { A2A_TABLES } from '../../src/persistence/a2a/schema.js';
import type { Clock } from '../../src/persistence/kernel/clock.js';
import { createSequentialIdSource } from '../../src/persistence/kernel/ids.js';
import { BrokerError } from '../../src/protocol/broker-error.js';
import { toJsonRpcError } from '../../src/transport/jsonrpc-errors.js';
import type { DurableEvent } from '../../src/protocol/events.js';
import type { MessageSend } from '../../src/protocol/task.js';

/** A temp directory removed by `cleanup()`. */
export function tempDir(prefix = 'switchboard-broker-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A clock that moves one millisecond per reading: deterministic timestamps. */
export function steppingClock(start = Date.UTC(2026, 0, 1)): Clock {
  let t = start;
  return { now: () => t++ };
}

export interface Harness {
  path: string;
  broker: Broker;
  open(options?: Partial<BrokerOptions>): Broker;
  reopen(): Promise<Broker>;
  close(): Promise<void>;
}

/** A broker on a fresh SQLite file; `reopen()` closes it and opens the same file again. */
export function harness(options: Partial<BrokerOptions> = {}): Harness {
  const { dir, cleanup } = tempDir();
  const path = join(dir, 'a2a.db');
  let ids = 0;
  const clock = steppingClock();
  const h: Harness = {
    path,
    broker: undefined as unknown as Broker,
    open(extra = {}) {
      ids++;
      h.broker = createBroker({
        path,
        clock,
        ids: createSequentialIdSource(`r${ids}`),
        ...options,
        ...extra,
      });
      return h.broker;
    },
    async reopen() {
      await h.broker.close();
      return h.open();
    },
    async close() {
      await h.broker.close();
      cleanup();
    },
  };
  h.open();
  return h;
}

export function text(t: string, messageId?: string): MessageSend {
  return messageId === undefined
    ? { parts: [{ kind: 'text', text: t }] }
    : { messageId, parts: [{ kind: 'text', text: t }] };
}

export interface Agent {
  agentId: string;
  token: string;
  name: string;
  contextId: string;
  received: DurableEvent[];
}

export async function register(
  broker: Broker,
  name: string,
  contextId: string,
  kind: 'subagent' | 'parent' = 'subagent',
): Promise<Agent> {
  const r = await broker.register({ name, contextId, kind });
  const agent: Agent = { agentId: r.agentId, token: r.token, name, contextId, received: [] };
  broker.events(r.agentId).subscribe((e) => agent.received.push(e));
  return agent;
}

/** Lets queued deliveries run (events leave in a microtask after the answers). */
export async function settle(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
}

/** Every row of every broker table (and schema_version), read through a second connection. */
export function dumpDatabase(path: string): Record<string, unknown[]> {
  const db = new Database(path, { readonly: true });
  try {
    const out: Record<string, unknown[]> = {};
    // The owner row is not the broker's state: each broker writes its own.
    for (const table of [...A2A_TABLES.filter((t) => t !== 'a2a_owner'), 'schema_version']) {
      out[table] = db.prepare(`SELECT * FROM ${table} ORDER BY 1, 2, 3`).all();
    }
    return out;
  } finally {
    db.close();
  }
}

/** Asserts the call is refused with the given code and that no row of the database changed. */
export async function expectRefusedUnchanged(
  h: Harness,
  call: () => Promise<unknown>,
  expected: { code?: string; details?: Record<string, unknown>; jsonRpc?: number },
): Promise<BrokerError> {
  const before = dumpDatabase(h.path);
  const error = await call().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, 'the call was expected to be refused').toBeInstanceOf(BrokerError);
  const e = error as BrokerError;
  if (expected.code !== undefined) expect(e.code).toBe(expected.code);
  if (expected.details !== undefined) expect(e.details).toMatchObject(expected.details);
  if (expected.jsonRpc !== undefined) expect(toJsonRpcError(e).code).toBe(expected.jsonRpc);
  expect(dumpDatabase(h.path)).toEqual(before);
  return e;
}

export async function refusal(call: Promise<unknown>): Promise<BrokerError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(BrokerError);
  return error as BrokerError;
}
