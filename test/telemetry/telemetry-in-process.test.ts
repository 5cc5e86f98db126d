import { metrics, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { type DataPoint, type Histogram, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { context } from '@opentelemetry/api';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { type Fixture, autoApprove, openFixture, tempDir, until } from '../coordinator/helpers.js';
import { METRIC } from '../../src/telemetry/metrics.js';
import { SPAN } from '../../src/telemetry/tracing.js';

/**
 * The telemetry of a Coordinator with its pools in process, under the
 * OpenTelemetry SDK: the metrics of two dev-sdlc work items (hop latency by
 * role and outcome, deliveries, dead letters, cost in dollars and tokens,
 * queue depth) against what the Coordinator's tables say happened, and a
 * work item that waits for its approval across a restart: its spans after
 * the restart continue the trace kept in its row.
 */

class TestReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

const spans = new InMemorySpanExporter();
const reader = new TestReader();
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
const meterProvider = new MeterProvider({ readers: [reader] });

beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(tracerProvider);
  metrics.setGlobalMeterProvider(meterProvider);
});
afterAll(async () => {
  await meterProvider.shutdown();
  await tracerProvider.shutdown();
  metrics.disable();
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

async function collected(): Promise<Map<string, DataPoint<unknown>[]>> {
  const { resourceMetrics, errors } = await reader.collect();
  expect(errors).toEqual([]);
  const out = new Map<string, DataPoint<unknown>[]>();
  for (const scope of resourceMetrics.scopeMetrics) {
    for (const metric of scope.metrics) {
      out.set(metric.descriptor.name, [...(out.get(metric.descriptor.name) ?? []), ...metric.dataPoints]);
    }
  }
  return out;
}

function sumBy(points: DataPoint<unknown>[] | undefined, attrs: Record<string, string>): number {
  return (points ?? [])
    .filter((p) => Object.entries(attrs).every(([k, v]) => p.attributes[k] === v))
    .reduce((s, p) => s + (p.value as number), 0);
}

describe('telemetry of a Coordinator with its pools in process', () => {
  it("records hop latency, deliveries, dead letters, cost and queue depth as the Coordinator's tables say", async () => {
    f = await openFixture();
    const { coordinator } = f;
    const stop = autoApprove(coordinator);
    const ids = [
      await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Add rate limiting to the public API' }),
      await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Export invoices as CSV' }),
    ];
    for (const id of ids) expect((await coordinator.settled(id, { timeoutMs: 30_000 })).state).toBe('completed');
    stop();
    const hops = (await Promise.all(ids.map((id) => coordinator.listHops(id)))).flat();
    const got = await collected();

    // Hop latency: one observation per result applied, by role and outcome.
    const durations = got.get(METRIC.hopDuration) as DataPoint<Histogram>[];
    const count = (role: string, outcome: string) =>
      durations
        .filter((p) => p.attributes['switchboard.role'] === role && p.attributes['switchboard.hop.outcome'] === outcome)
        .reduce((s, p) => s + p.value.count, 0);
    // Per item: the testing hop that fails (dead-lettered), the coding hop that suspends then completes.
    expect(count('testing', 'failed')).toBe(2);
    expect(count('testing', 'completed')).toBe(2);
    expect(count('coding', 'suspended')).toBe(2);
    expect(count('coding', 'completed')).toBe(4);
    expect(count('architect', 'completed')).toBe(4);
    expect(count('devops', 'completed')).toBe(2);
    for (const p of durations) expect(p.value.min).toBeGreaterThanOrEqual(0);

    // Dead letters: the failed testing hops.
    expect(sumBy(got.get(METRIC.deadLetters), { 'switchboard.role': 'testing' })).toBe(
      hops.filter((h) => h.state === 'failed').length,
    );
    // Deliveries: at least one per hop that ran (a resumed hop is delivered again).
    for (const role of ['architect', 'coding', 'testing', 'devops']) {
      const ran = hops.filter((h) => h.role === role).length;
      expect(sumBy(got.get(METRIC.deliveries), { 'switchboard.role': role })).toBeGreaterThanOrEqual(ran);
    }
    expect(sumBy(got.get(METRIC.deliveries), { 'switchboard.role': 'coding' })).toBeGreaterThan(
      hops.filter((h) => h.role === 'coding').length,
    );
    // Cost: what the hops accrued, by role, in dollars and tokens.
    for (const role of ['architect', 'coding', 'testing', 'devops']) {
      const mine = hops.filter((h) => h.role === role);
      const usd = mine.reduce((s, h) => s + h.usage.costUsd, 0);
      expect(usd).toBeGreaterThan(0);
      expect(sumBy(got.get(METRIC.costUsd), { 'switchboard.role': role })).toBeCloseTo(usd, 9);
      const tokens = (type: string) =>
        sumBy(got.get(METRIC.tokens), { 'switchboard.role': role, 'switchboard.token.type': type });
      expect(tokens('input')).toBe(mine.reduce((s, h) => s + h.usage.inputTokens, 0));
      expect(tokens('output')).toBe(mine.reduce((s, h) => s + h.usage.outputTokens, 0));
    }
    // Queue depth: observed for every role and the results role (all drained now).
    const depth = got.get(METRIC.queueDepth) ?? [];
    expect(new Set(depth.map((p) => p.attributes['switchboard.role']))).toEqual(
      new Set(['architect', 'coding', 'testing', 'devops', '$results']),
    );
    for (const p of depth) expect(p.value).toBe(0);
  }, 60_000);

  it('a work item waiting for its approval across a restart stays one trace: the approval continues the root kept in its row', async () => {
    const dir = tempDir();
    f = await openFixture({}, dir);
    const first = f.coordinator;
    const itemId = await first.createWorkItem({ workflow: 'dev-sdlc', input: 'Add rate limiting to the public API' });
    await until(async () => (await first.getItem(itemId))?.state === 'awaiting-approval', 30_000, 'the approval gate');
    await first.mirrored();
    await first.close();
    f = undefined;

    f = await openFixture({}, dir);
    await f.coordinator.approve(itemId, 'release-manager');
    expect((await f.coordinator.settled(itemId, { timeoutMs: 30_000 })).state).toBe('completed');
    await f.coordinator.mirrored();

    const finished = spans.getFinishedSpans();
    const roots = finished.filter((s) => s.name === SPAN.item);
    expect(roots).toHaveLength(1);
    const root = roots[0]!;
    const traceId = root.spanContext().traceId;
    const mine = finished.filter((s) => s.attributes['switchboard.item.id'] === itemId);
    expect(mine.length).toBeGreaterThan(10);
    expect(new Set(mine.map((s) => s.spanContext().traceId))).toEqual(new Set([traceId]));
    const approval = finished.filter(
      (s) => s.name === SPAN.decision && s.attributes['switchboard.decision.input'] === 'approval',
    );
    expect(approval).toHaveLength(1);
    expect(parentId(approval[0]!)).toBe(root.spanContext().spanId);
    // Every span of the trace has its parent in it.
    const inTrace = finished.filter((s) => s.spanContext().traceId === traceId);
    const ids = new Set(inTrace.map((s) => s.spanContext().spanId));
    expect(inTrace.filter((s) => parentId(s) === undefined)).toEqual([root]);
    expect(inTrace.filter((s) => parentId(s) !== undefined && !ids.has(parentId(s)!))).toEqual([]);
    // The broker calls the mirror made for the item after the restart are in it too.
    expect(inTrace.some((s) => s.name === SPAN.brokerCall)).toBe(true);
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);
});

function parentId(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}
