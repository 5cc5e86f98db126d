import { CoordinatorGovernance } from '../../src/actors/coordinator/policies.js';
import {
  BRANCH_ATTRIBUTE,
  type CoordinatorInput,
  type Decision,
  type DecisionEnv,
  type ItemView,
  PARENT_ATTRIBUTE,
  type SettleBody,
  type SpawnBody,
  type StartBody,
  decide,
} from '../../src/decisions/coordinator-decisions.js';
import type { Part } from '../../src/protocol/parts.js';
import type { ResultEnvelope } from '../../src/protocol/work-envelope.js';
import type { WorkflowDefinition } from '../../src/protocol/workflow.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import type { HopRecord, ItemBudget } from '../../src/workflow/records.js';

/**
 * A parent work item and its children driven by `decide` alone, as a store
 * would keep them (each decision's view kept, its outbox rows collected): for
 * the rules of the child-work decisions (a fan-out's `spawn` rows, a child's
 * `settle` row, a parent taking a child's end).
 */

export const TREE_ROLES = ['lead', 'w', 'x', 'y', 'z'];

/** One outbox row a decision wrote, with the item that wrote it. */
export interface TreeRow {
  itemId: string;
  kind: string;
  body: unknown;
}

export class ChildTree {
  readonly views = new Map<string, ItemView>();
  readonly rows: TreeRow[] = [];
  readonly governance = new CoordinatorGovernance({ knownRoles: TREE_ROLES, maxHops: 100 });
  now = 1_000_000;
  #n = 0;

  env(): DecisionEnv {
    return { now: this.now, nextId: () => `id-${String(++this.#n).padStart(6, '0')}`, governance: this.governance };
  }

  /** Decides one input on the item's kept view, and keeps what a store would. */
  decide(itemId: string, input: CoordinatorInput): Decision {
    const d = decide(this.views.get(itemId), input, this.env());
    if (d.changes !== null && d.view !== undefined) {
      this.views.set(d.view.item.id, d.view);
      for (const o of d.changes.outbox) this.rows.push({ itemId: d.view.item.id, kind: o.kind, body: o.body });
    }
    return d;
  }

  create(
    itemId: string,
    definition: WorkflowDefinition,
    opts: {
      input?: Part[];
      budget?: ItemBudget | null;
      attributes?: Record<string, string | number | boolean> | null;
      deadline?: { at: number; ms: number } | null;
    } = {},
  ): Decision {
    return this.decide(itemId, {
      kind: 'create',
      itemId,
      taskId: null,
      definition,
      keepDefinition: false,
      input: opts.input ?? [{ kind: 'text', text: 'go' }],
      budget: opts.budget ?? null,
      attributes: opts.attributes ?? null,
      ...(opts.deadline === undefined ? {} : { deadline: opts.deadline }),
    });
  }

  /** A child created as the Coordinator carries out its `spawn` row (a workflow by reference from `byRef`). */
  createChild(body: SpawnBody, byRef: Record<string, WorkflowDefinition> = {}): Decision {
    return this.create(body.childId, body.definition ?? byRef[body.workflow!]!, {
      input: body.input,
      budget: body.budget,
      attributes: { [PARENT_ATTRIBUTE]: body.parentId, [BRANCH_ATTRIBUTE]: `${body.hop}:${body.branch}` },
      deadline: null,
    });
  }

  /** The hop of `itemId` that is out (its start row whose hop is dispatched), if any. */
  out(itemId: string): StartBody | undefined {
    const view = this.views.get(itemId);
    return this.rows
      .filter((r) => r.itemId === itemId && r.kind === 'start')
      .map((r) => r.body as StartBody)
      .find((s) => view?.hops.get(s.taskId)?.state === 'dispatched');
  }

  /** The result of the hop of `itemId` that is out: completed with `parts`, or failed with `error`. */
  answer(
    itemId: string,
    result: {
      parts?: Part[];
      tokens?: number;
      error?: { type: string; message: string };
      spawn?: ResultEnvelope['spawn'];
    } = {},
  ): Decision {
    return this.decide(itemId, { kind: 'result', result: this.resultOf(itemId, result) });
  }

  /**
   * The result envelope of the hop of `itemId` that is out (not decided):
   * suspended with `spawn`, failed with `error`, else completed with
   * `parts`; its usage `usage`, else `tokens` input tokens.
   */
  resultOf(
    itemId: string,
    result: {
      parts?: Part[];
      tokens?: number;
      usage?: NonNullable<ResultEnvelope['usage']>;
      error?: { type: string; message: string };
      spawn?: ResultEnvelope['spawn'];
    } = {},
  ): ResultEnvelope {
    const s = this.out(itemId);
    if (s === undefined) throw new Error(`no hop of ${itemId} is out`);
    const headers = {
      taskId: s.taskId,
      runId: s.runId,
      hop: s.hop,
      attempt: s.attempt,
      idempotencyKey: s.idempotencyKey,
    };
    const usage = result.usage ?? { inputTokens: result.tokens ?? 0, outputTokens: 0, costUsd: 0, model: 'm' };
    const base = { kind: 'result' as const, headers, role: s.role, parts: [], artifacts: [], usage };
    if (result.spawn !== undefined) return { ...base, outcome: 'suspended', spawn: result.spawn };
    if (result.error === undefined) return { ...base, outcome: 'completed', parts: result.parts ?? [] };
    return { ...base, outcome: 'failed', error: result.error, deliveries: 1 };
  }

  /** The rows of a kind an item wrote, in order. */
  bodies<T>(itemId: string, kind: string): T[] {
    return this.rows.filter((r) => r.itemId === itemId && r.kind === kind).map((r) => r.body as T);
  }

  spawns(itemId: string): SpawnBody[] {
    return this.bodies<SpawnBody>(itemId, 'spawn');
  }

  settles(itemId: string): SettleBody[] {
    return this.bodies<SettleBody>(itemId, 'settle');
  }
}

/** A chain of `length` stages of role `w`, s0 → s1 → …, as workflow `id@version`. */
export function roleChain(id: string, length: number, version = 1): WorkflowDefinition {
  const stages: Record<string, object> = {};
  for (let i = 0; i < length; i++) {
    stages[`s${i}`] = { role: 'w', ...(i + 1 < length ? { next: [{ on: 'succeeded', goto: `s${i + 1}` }] } : {}) };
  }
  return parseWorkflowDefinition({ id, version, start: 's0', stages });
}

/** The headers of a result for `hop`. */
export function hopHeaders(hop: HopRecord): ResultEnvelope['headers'] {
  return { taskId: hop.id, runId: hop.itemId, hop: hop.hop, attempt: hop.attempt, idempotencyKey: hop.idempotencyKey };
}

/** The headers of the answer to the query of `view` out under `token`: it names the hop that asked. */
export function answerHeaders(view: ItemView, token: string): ResultEnvelope['headers'] {
  const query = [...view.hops.values()].find((h) => h.continuation === token)!;
  const asking = view.hops.get(query.askedBy!)!;
  return {
    ...hopHeaders(asking),
    attempt: 1,
    idempotencyKey: query.idempotencyKey,
    askedBy: { role: asking.role, continuationToken: token, taskId: asking.id, hop: asking.hop },
  };
}

/** The `settle` row of the child a `spawn` row started, completed with `output`, having used `inputTokens`. */
export function completedSettle(row: SpawnBody, output: SettleBody['output'], inputTokens = 0): SettleBody {
  return {
    parentId: row.parentId,
    childId: row.childId,
    hop: row.hop,
    branch: row.branch,
    outcome: 'completed',
    output,
    error: null,
    usage: { inputTokens, outputTokens: 0, costUsd: 0, elapsedMs: 0 },
  };
}
