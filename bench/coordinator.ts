/**
 * bench:coordinator: the Coordinator's own time per hop and work items per
 * second, on the embedded default (one SQLite file; pools in process), with
 * no-op handlers on a 4-stage linear workflow.
 *
 * - Coordinator time per hop: the duration of each transaction that applies a
 *   hop result (governance cascade, audit rows, cost accrual, routing by the
 *   run machine, next hop's row and outbox, run snapshot, the commit), timed
 *   inside the Coordinator; queue waits, workers and the broker mirror are
 *   outside it. Results that arrive together share one commit (one savepoint
 *   each): each is counted with its share of that transaction, and the output
 *   says how many shared. Median and p99.
 * - Reference, same run, same file: a bare transaction writing as many rows
 *   of the same size (no logic), to show what the logic adds over the writes.
 * - Work items per second: items created in waves, each running all 4 hops
 *   through the bus, workers and results, and mirrored into the broker.
 *
 * BENCH_OTEL=1 runs the same with the OpenTelemetry SDK registered (a batch
 * span processor into an exporter that counts the spans and drops them, the
 * W3C propagator, a meter provider with a reader): what tracing on costs.
 * Without it no SDK is registered and the telemetry calls are the API's no-op.
 *
 * Progress goes to stderr; the figures to stdout.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCoordinator } from '../src/actors/coordinator/coordinator.js';
import type { TimedStep } from '../src/actors/coordinator/engine.js';
import { observeCommits } from '../src/actors/coordinator/commit-timing.js';
import { ROLES, definition, noopDeployments, progress } from './four-stage-workflow.js';
import { openDatabase } from '../src/persistence/kernel/database.js';
import { metrics, propagation, trace } from '@opentelemetry/api';
import { ExportResultCode, W3CTraceContextPropagator } from '@opentelemetry/core';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';

const OTEL = process.env.BENCH_OTEL === '1';
let spansExported = 0;
if (OTEL) {
  const exporter = {
    export(spans: ReadableSpan[], done: (result: { code: ExportResultCode }) => void) {
      spansExported += spans.length;
      done({ code: ExportResultCode.SUCCESS });
    },
    shutdown: () => Promise.resolve(),
  };
  class Reader extends MetricReader {
    protected async onShutdown(): Promise<void> {}
    protected async onForceFlush(): Promise<void> {}
  }
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(
    new BasicTracerProvider({
      // A queue that holds every span of the run: none is dropped, all are exported.
      spanProcessors: [
        new BatchSpanProcessor(exporter, {
          maxQueueSize: 1_000_000,
          maxExportBatchSize: 2048,
          scheduledDelayMillis: 100,
        }),
      ],
    }),
  );
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [new Reader()] }));
}

const ITEMS = Number(process.env.BENCH_ITEMS ?? 400);
const WAVE = 50;
const SEQUENTIAL_ITEMS = Number(process.env.BENCH_SEQUENTIAL_ITEMS ?? 50);

function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

const us = (ns: number) => (ns / 1000).toFixed(1);

async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-bench-coord-'));
  const path = join(dir, 'bench.db');
  const samples: Record<TimedStep, number[]> = { create: [], result: [], decision: [] };
  const inner: number[] = [];
  const cpu: number[] = [];
  /** Per result: how many results shared its commit. */
  const batches: number[] = [];
  let recording = false;
  /** Result timings of the sequential phase. */
  let alone: number[] | undefined;
  const coordinator = await createCoordinator({
    path,
    definitions: [definition],
    deployments: noopDeployments(),
    maxHops: 10,
  });
  observeCommits(coordinator, (ns, what, innerNs, cpuUs, batch) => {
    if (alone !== undefined && what === 'result') alone.push(ns);
    if (!recording) return;
    samples[what].push(ns);
    if (what === 'result') {
      inner.push(innerNs);
      cpu.push(cpuUs * 1000);
      batches.push(batch);
    }
  });
  try {
    const wave = async (n: number) => {
      const ids = await Promise.all(
        Array.from({ length: n }, (_, i) => coordinator.createWorkItem({ workflow: 'bench-4', input: `item ${i}` })),
      );
      const finals = await Promise.all(ids.map((id) => coordinator.settled(id)));
      for (const f of finals) if (f.state !== 'completed') throw new Error(`item ${f.id} ended ${f.state}`);
    };
    progress('warm-up: 40 items');
    await wave(WAVE);
    await coordinator.mirrored();

    progress(`measuring: ${ITEMS} items of 4 hops, in waves of ${WAVE}`);
    recording = true;
    const started = process.hrtime.bigint();
    for (let done = 0; done < ITEMS; done += WAVE) {
      await wave(Math.min(WAVE, ITEMS - done));
      progress(`  ${Math.min(done + WAVE, ITEMS)} items`);
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    recording = false;
    await coordinator.mirrored();

    // One item at a time: each result arrives alone, so each has a commit of its own.
    progress(`sequential: ${SEQUENTIAL_ITEMS} items one at a time (no shared commits)`);
    alone = [];
    for (let i = 0; i < SEQUENTIAL_ITEMS; i++) await wave(1);
    const sequential = alone.sort((a, b) => a - b);
    alone = undefined;

    // Reference: bare transactions writing the same number of rows of the same size on the same file.
    const hopsPerItem = ROLES.length;
    const auditRows = (await coordinator.audit.list()).length;
    const rowsPerResult = Math.round(auditRows / ((ITEMS + WAVE) * hopsPerItem)) + 5;
    progress(`reference: bare transactions of ${rowsPerResult} row writes`);
    const db = openDatabase(path);
    db.exec('CREATE TABLE IF NOT EXISTS bench_reference (id INTEGER PRIMARY KEY, body TEXT NOT NULL) STRICT');
    const insert = db.prepare('INSERT INTO bench_reference (body) VALUES (?)');
    const row = 'x'.repeat(300);
    const write = db.transaction(() => {
      for (let i = 0; i < rowsPerResult; i++) insert.run(row);
    });
    const reference: number[] = [];
    for (let i = 0; i < samples.result.length; i++) {
      const t = process.hrtime.bigint();
      write.immediate();
      reference.push(Number(process.hrtime.bigint() - t));
    }
    db.close();

    const result = [...samples.result].sort((a, b) => a - b);
    const create = [...samples.create].sort((a, b) => a - b);
    const ref = reference.sort((a, b) => a - b);
    const body = inner.sort((a, b) => a - b);
    const cpuSorted = cpu.sort((a, b) => a - b);
    const hops = ITEMS * hopsPerItem;
    const median = quantile(result, 0.5);
    const lines = [
      `bench:coordinator: ${ITEMS} work items x ${hopsPerItem} hops (no-op handlers), embedded SQLite (one file), pools in process`,
      `  Coordinator time per hop result (governance + audit + cost + routing + store + commit): median ${us(median)} µs, p99 ${us(quantile(result, 0.99))} µs wall clock (${result.length} results; target < 300 µs median: ${median < 300_000 ? 'met' : 'NOT met'})`,
      `    results that arrived together shared one commit (each counted with its share): ${batches.filter((b) => b === 1).length} of ${batches.length} results had a commit of their own; median commit shared by ${quantile(
        [...batches].sort((a, b) => a - b),
        0.5,
      )}, mean ${(batches.reduce((x, y) => x + y, 0) / Math.max(1, batches.length)).toFixed(1)}`,
      `    one item at a time (every result alone in its commit): median ${us(quantile(sequential, 0.5))} µs, p99 ${us(quantile(sequential, 0.99))} µs (${sequential.length} results)`,
      `    CPU time of the process over the same transactions (not inflated by the OS running other work): median ${us(quantile(cpuSorted, 0.5))} µs, p99 ${us(quantile(cpuSorted, 0.99))} µs`,
      `    of which the transaction body (without BEGIN/COMMIT): median ${us(quantile(body, 0.5))} µs, p99 ${us(quantile(body, 0.99))} µs`,
      `  work item creation (Coordinator transaction only): median ${us(quantile(create, 0.5))} µs, p99 ${us(quantile(create, 0.99))} µs`,
      `  reference, bare transaction of ${rowsPerResult} row writes on the same file: median ${us(quantile(ref, 0.5))} µs, p99 ${us(quantile(ref, 0.99))} µs`,
      `  ratio Coordinator / bare writes (median): ${(median / quantile(ref, 0.5)).toFixed(2)}`,
      `  throughput: ${(ITEMS / seconds).toFixed(1)} work items/s, ${(hops / seconds).toFixed(0)} hops/s end to end (bus, workers, broker mirror included)`,
      `  audit: ${auditRows} rows, chain ${(await coordinator.audit.verifyChain()).ok ? 'verified' : 'BROKEN'}`,
      OTEL
        ? `  telemetry: OpenTelemetry SDK registered (BENCH_OTEL=1), ${spansExported} spans exported so far (every span of the run: the queue drops none)`
        : '  telemetry: no SDK registered (the API is a no-op)',
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await coordinator.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await run();
