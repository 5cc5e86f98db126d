import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SHIPPED_WORKFLOWS_DIR, loadWorkflowFile } from '../../src/actors/coordinator/workflow-loader.js';
import { FANOUT_HANDLERS } from '../../src/demo/fanout-roles.js';
import { SPAN } from '../../src/telemetry/tracing.js';
import { type Fixture, autoApprove, deployments, openFixture } from '../coordinator/helpers.js';

/**
 * A tree of work is one trace: each child item (a map's element, a parallel
 * branch) has an item span of its own under its parent's context, naming its
 * parent and branch, and every span of a child (its decisions, its hops'
 * publishes, the mirror's calls) is in the parent's trace under the child's
 * span, so a trace viewer draws the tree as the items form it.
 */

const spans = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });

beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(tracerProvider);
});
afterAll(async () => {
  await tracerProvider.shutdown();
  trace.disable();
  propagation.disable();
  context.disable();
});

let f: Fixture | undefined;
afterEach(async () => {
  await f?.close();
  f = undefined;
  spans.reset();
});

const parentOf = (s: ReadableSpan): string | undefined => s.parentSpanContext?.spanId;

describe('the trace of a tree of work', () => {
  it("every child item's spans are in its root's trace, under an item span of the child's own that names its parent", async () => {
    const reviewFanout = loadWorkflowFile(join(SHIPPED_WORKFLOWS_DIR, 'review-fanout.json'));
    f = await openFixture({ definitions: [reviewFanout], deployments: deployments(FANOUT_HANDLERS) });
    const { coordinator } = f;
    const stop = autoApprove(coordinator);
    const id = await coordinator.createWorkItem({ workflow: 'review-fanout', input: 'Add rate limiting' });
    expect((await coordinator.settled(id, { timeoutMs: 60_000 })).state).toBe('completed');
    stop();
    await coordinator.mirrored();

    const tree = (await coordinator.listItems()).filter((i) => i.id === id || i.id.startsWith(`${id}.`));
    const children = tree.filter((i) => i.id !== id);
    expect(children.length).toBeGreaterThanOrEqual(7);

    const finished = spans.getFinishedSpans();
    const itemSpans = finished.filter((s) => s.name === SPAN.item);
    const rootSpan = itemSpans.find((s) => s.attributes['switchboard.item.id'] === id)!;
    expect(rootSpan).toBeDefined();
    expect(parentOf(rootSpan)).toBeUndefined();
    const traceId = rootSpan.spanContext().traceId;
    const byId = new Map(finished.map((s) => [s.spanContext().spanId, s]));

    for (const child of children) {
      const own = itemSpans.filter((s) => s.attributes['switchboard.item.id'] === child.id);
      expect(own, child.id).toHaveLength(1);
      const span = own[0]!;
      expect(span.spanContext().traceId).toBe(traceId);
      expect(span.attributes['switchboard.item.parent']).toBe(id);
      expect(span.attributes['switchboard.item.branch']).toBe(child.attributes?.['switchboard.branch']);
      // The child's span hangs under the parent's trace (under its root, or one of the parent's spans).
      const up = byId.get(parentOf(span)!);
      expect(up?.spanContext().traceId).toBe(traceId);
      // Every other span of the child is in the same trace, under the child's own item span.
      const rest = finished.filter((s) => s.attributes['switchboard.item.id'] === child.id && s !== span);
      expect(rest.length).toBeGreaterThan(0);
      for (const s of rest) {
        expect(s.spanContext().traceId).toBe(traceId);
        let at: ReadableSpan | undefined = s;
        while (at !== undefined && at !== span) at = byId.get(parentOf(at) ?? '');
        expect(at, `${s.name} of ${child.id} descends from the child's item span`).toBe(span);
      }
    }
    // Every span of the trace has its parent in it: one tree, one root.
    const inTrace = finished.filter((s) => s.spanContext().traceId === traceId);
    expect(inTrace.filter((s) => parentOf(s) === undefined)).toEqual([rootSpan]);
    expect(inTrace.filter((s) => parentOf(s) !== undefined && !byId.has(parentOf(s)!))).toEqual([]);
  }, 90_000);
});
