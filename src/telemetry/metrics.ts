import {
  type Attributes,
  type Counter,
  type Histogram,
  type MeterProvider,
  type ObservableGauge,
  type ObservableResult,
  metrics,
} from '@opentelemetry/api';
import { VERSION } from '../version.js';
import { INSTRUMENTATION_SCOPE } from './tracing.js';

/**
 * switchboard's metrics, from a `Meter` of `@opentelemetry/api`. The API
 * has no proxy for meters: instruments are made from the provider
 * registered when a Coordinator or worker is created (register the SDK's
 * `MeterProvider` before), once per provider. Attribute sets are made once
 * per role (and outcome) and reused, so recording allocates nothing.
 * docs/telemetry.md lists every metric.
 */

/** Every metric name switchboard records. */
export const METRIC = {
  hopDuration: 'switchboard.hop.duration',
  queueDepth: 'switchboard.queue.depth',
  deliveries: 'switchboard.hop.deliveries',
  deadLetters: 'switchboard.hop.dead_letters',
  costUsd: 'switchboard.cost.usd',
  tokens: 'switchboard.cost.tokens',
} as const;

/** Metric attribute keys. */
export const METRIC_ATTR = {
  role: 'switchboard.role',
  outcome: 'switchboard.hop.outcome',
  tokenType: 'switchboard.token.type',
} as const;

/** switchboard's instruments on one meter provider. */
export class SwitchboardMetrics {
  /** From a hop's dispatch to its result applied by the Coordinator, in seconds, by role and outcome. */
  readonly hopDuration: Histogram;
  /** Messages ready now on a role's queue, observed on collection. */
  readonly queueDepth: ObservableGauge;
  /** Deliveries workers took, by role. */
  readonly deliveries: Counter;
  /** Hops that died (their failure result applied by the Coordinator), by role. */
  readonly deadLetters: Counter;
  /** Dollars hops cost, by role. */
  readonly costUsd: Counter;
  /** Tokens hops used, by role and token type (input, output). */
  readonly tokens: Counter;
  readonly #byRole = new Map<string, Attributes>();
  readonly #byRoleOutcome = new Map<string, Attributes>();
  readonly #byRoleTokens = new Map<string, { input: Attributes; output: Attributes }>();

  constructor(provider: MeterProvider) {
    const meter = provider.getMeter(INSTRUMENTATION_SCOPE, VERSION);
    this.hopDuration = meter.createHistogram(METRIC.hopDuration, {
      description: "A hop's latency: from its dispatch to its result applied by the Coordinator",
      unit: 's',
    });
    this.queueDepth = meter.createObservableGauge(METRIC.queueDepth, {
      description: "Messages ready now on a role's queue",
      unit: '{message}',
    });
    this.deliveries = meter.createCounter(METRIC.deliveries, {
      description: 'Hop deliveries taken by workers',
      unit: '{delivery}',
    });
    this.deadLetters = meter.createCounter(METRIC.deadLetters, {
      description: 'Hops dead-lettered (their failure result applied by the Coordinator)',
      unit: '{hop}',
    });
    this.costUsd = meter.createCounter(METRIC.costUsd, { description: 'What hops cost, in US dollars', unit: 'USD' });
    this.tokens = meter.createCounter(METRIC.tokens, { description: 'Tokens hops used', unit: '{token}' });
  }

  /** The attributes `{ role }`, made once per role. */
  role(role: string): Attributes {
    let attrs = this.#byRole.get(role);
    if (attrs === undefined) {
      attrs = Object.freeze({ [METRIC_ATTR.role]: role });
      this.#byRole.set(role, attrs);
    }
    return attrs;
  }

  /** The attributes `{ role, outcome }`, made once per pair. */
  roleOutcome(role: string, outcome: string): Attributes {
    const key = `${outcome}\u0000${role}`;
    let attrs = this.#byRoleOutcome.get(key);
    if (attrs === undefined) {
      attrs = Object.freeze({ [METRIC_ATTR.role]: role, [METRIC_ATTR.outcome]: outcome });
      this.#byRoleOutcome.set(key, attrs);
    }
    return attrs;
  }

  /** The attributes of input and output tokens of a role, made once per role. */
  roleTokens(role: string): { input: Attributes; output: Attributes } {
    let attrs = this.#byRoleTokens.get(role);
    if (attrs === undefined) {
      attrs = {
        input: Object.freeze({ [METRIC_ATTR.role]: role, [METRIC_ATTR.tokenType]: 'input' }),
        output: Object.freeze({ [METRIC_ATTR.role]: role, [METRIC_ATTR.tokenType]: 'output' }),
      };
      this.#byRoleTokens.set(role, attrs);
    }
    return attrs;
  }

  /** Observes queue depths on every collection until the returned function is called. */
  observeQueueDepth(depths: () => Promise<ReadonlyArray<{ role: string; depth: number }>>): () => void {
    const callback = async (result: ObservableResult) => {
      for (const { role, depth } of await depths()) result.observe(depth, this.role(role));
    };
    this.queueDepth.addCallback(callback);
    return () => this.queueDepth.removeCallback(callback);
  }
}

let current: { provider: MeterProvider; metrics: SwitchboardMetrics } | undefined;

/** The instruments on the meter provider registered now (made once per provider). */
export function switchboardMetrics(): SwitchboardMetrics {
  const provider = metrics.getMeterProvider();
  if (current === undefined || current.provider !== provider) {
    current = { provider, metrics: new SwitchboardMetrics(provider) };
  }
  return current.metrics;
}
