import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { HopInput, WorkHandler } from '../../src/actors/worker/worker.js';
import { DEMO_HANDLERS } from '../../src/demo/roles.js';
import { WorkEnvelopeSchema, WorkHeadersSchema } from '../../src/protocol/work-envelope.js';
import {
  OFF_SPAN,
  ROOT_CONTEXT,
  SPAN,
  contextOf,
  startSpan,
  traceFieldsOf,
  tracingOn,
} from '../../src/telemetry/tracing.js';
import { type Fixture, autoApprove, deployments, openFixture } from '../coordinator/helpers.js';

/**
 * With no OpenTelemetry SDK registered (this file registers none), tracing
 * is off: no span is made, nothing is kept with the items, and no envelope
 * carries trace fields. And the trace fields of the wire are optional and
 * bounded.
 */

let f: Fixture | undefined;
afterEach(async () => {
  await f?.close();
  f = undefined;
});

describe('telemetry with no SDK registered', () => {
  it('makes no span, keeps no trace with the item and puts no trace fields on the bus', async () => {
    expect(tracingOn()).toBe(false);
    expect(startSpan(SPAN.decision, ROOT_CONTEXT)).toBe(OFF_SPAN);
    expect(traceFieldsOf(ROOT_CONTEXT)).toBeUndefined();
    expect(contextOf({ traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' })).toBe(ROOT_CONTEXT);

    const seen: HopInput[] = [];
    const handlers: Record<string, WorkHandler> = {};
    for (const [role, handler] of Object.entries(DEMO_HANDLERS)) {
      handlers[role] = (hop) => {
        seen.push(hop);
        return handler(hop);
      };
    }
    f = await openFixture({ deployments: deployments(handlers) });
    const stop = autoApprove(f.coordinator);
    const id = await f.coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Export invoices as CSV' });
    expect((await f.coordinator.settled(id, { timeoutMs: 30_000 })).state).toBe('completed');
    stop();
    await f.coordinator.mirrored();
    expect(seen.length).toBeGreaterThanOrEqual(7);
    for (const hop of seen) {
      expect(hop.envelope.headers.trace).toBeUndefined();
      expect(hop.headers.trace).toBeUndefined();
    }
    const db = new Database(f.path, { readonly: true });
    try {
      expect(db.prepare('SELECT trace FROM coord_items WHERE id = ?').get(id)).toEqual({ trace: null });
      const bodies = db.prepare('SELECT body FROM a2a_messages WHERE body LIKE \'%"hopId"%\'').all() as {
        body: string;
      }[];
      expect(bodies.length).toBeGreaterThanOrEqual(7);
      for (const { body } of bodies) expect(body).not.toContain('traceparent');
    } finally {
      db.close();
    }
  }, 60_000);
});

describe('trace fields on the wire', () => {
  const headers = { taskId: 't-1', runId: 'r-1', hop: 1, attempt: 1, idempotencyKey: 'r-1/1/1' };

  it('are optional: an envelope without them parses as before', () => {
    const parsed = WorkEnvelopeSchema.parse({
      kind: 'work',
      headers,
      message: { parts: [{ kind: 'text', text: 'x' }] },
    });
    expect(parsed.headers).toEqual(headers);
    expect('trace' in parsed.headers).toBe(false);
  });

  it('carry traceparent and tracestate, and a propagator of its own keys, bounded', () => {
    const trace = {
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      tracestate: 'vendor=opaque',
    };
    expect(WorkHeadersSchema.parse({ ...headers, trace }).trace).toEqual(trace);
    expect(
      WorkHeadersSchema.parse({ ...headers, trace: { b3: '80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1-1' } })
        .trace,
    ).toBeDefined();
    const nine = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`k${i}`, 'v']));
    expect(WorkHeadersSchema.safeParse({ ...headers, trace: nine }).success).toBe(false);
    expect(WorkHeadersSchema.safeParse({ ...headers, trace: { traceparent: 'x'.repeat(1025) } }).success).toBe(false);
    expect(WorkHeadersSchema.safeParse({ ...headers, trace: { traceparent: 1 } }).success).toBe(false);
  });
});
