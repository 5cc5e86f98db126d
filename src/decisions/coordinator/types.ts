import type { RunState } from '../../machines/workflow-run-machine.js';
import type { RunDeadline } from '../../machines/workflow-run-context.js';
import type { SettleBody } from './child-rows.js';
import type { Part } from '../../protocol/parts.js';
import type {
  AskedBy,
  ItemBudgetHeader,
  ResultEnvelope,
  RetryPolicy,
  WorkMessage,
} from '../../protocol/work-envelope.js';
import type { WorkflowDefinition, WorkflowRunEvent } from '../../protocol/workflow.js';
import type { GovernanceCascade } from '../../workflow/governance-cascade.js';
import type { GovernanceDecision, HopContext } from '../../workflow/governance.js';
import type {
  AncestorRollup,
  TreeUsage,
  HopRecord,
  ItemBudget,
  ItemChanges,
  ItemEvent,
  ItemRecord,
} from '../../workflow/records.js';

/**
 * What the Coordinator's decisions take and give: a work item's state, one
 * input, the env (the time, ids, the governance cascade) and the decision.
 */

/** The metadata key under which switchboard links tasks to work items and hops. */
export const SWITCHBOARD_METADATA_KEY = 'switchboard';

/** The bus idempotency key of a stage hop attempt: `<item>/<hop>/<attempt>`. */
export function hopKey(itemId: string, hop: number, attempt: number): string {
  return `${itemId}/${hop}/${attempt}`;
}

/** A work item as the decisions see it: its row, its hops (by id, in order) and its run (none once ended). */
export interface ItemView {
  item: ItemRecord;
  hops: ReadonlyMap<string, HopRecord>;
  run: RunState | null;
  /**
   * A child's ancestors (its parent first, the root last), each with its
   * budget and its subtree's live usage as the store had it before this
   * decision: every hop is governed against them too, and what the decision
   * charges rolls up into each. Absent or empty for a root.
   */
  ancestors?: readonly AncestorRollup[];
  /**
   * The item's own subtree usage, live (its hops' and every descendant's, as
   * the store had it before this decision), when it has a budget: its hops
   * are governed against it too, so that children still running count
   * against their parent's budget before they end. Absent: not read (no
   * budget, or a store's caller that reads none).
   */
  tree?: TreeUsage;
}

/** A hop as the dispatcher starts it (the outbox body of a `start`). */
export interface StartBody {
  role: string;
  taskId: string;
  runId: string;
  hop: number;
  attempt: number;
  message: WorkMessage;
  idempotencyKey: string;
  taskKey?: string;
  retryPolicy?: Partial<RetryPolicy>;
  delayMs?: number;
  askedBy?: AskedBy;
  /** The work item's budget and what it had spent (absent without a budget). */
  itemBudget?: ItemBudgetHeader;
}

/** A dead letter to purge (the outbox body of a `purge-dead-letter`): a failure the run handled. */
export interface PurgeDeadLetterBody {
  /** The role whose queue holds it (the role that ran the hop). */
  role: string;
  /** Its id on that queue (the failure result's `deadLetter`). */
  id: string;
}

/** One input to the Coordinator's decisions. */
export type CoordinatorInput =
  | {
      kind: 'create';
      itemId: string;
      taskId: string | null;
      definition: WorkflowDefinition;
      /** Whether the definition is not kept yet (its first item keeps it). */
      keepDefinition: boolean;
      input: Part[];
      budget: ItemBudget | null;
      attributes: Record<string, string | number | boolean> | null;
      /** A child's deadline, inherited from its parent (default: its definition's, from now). */
      deadline?: RunDeadline | null;
      /** The stage the run starts at (default: the definition's start): a retry from a stage. */
      startStage?: string;
      /** A child's ancestors (parent first), as `ItemView.ancestors`: its first hops roll up into them. */
      ancestors?: readonly AncestorRollup[];
    }
  /**
   * A hop's result, and when it was put on the bus (the publishing worker's
   * clock): the hop's time ends there, so a wait for a Coordinator (a dead
   * leader's lease on the result) is not charged to the hop.
   */
  | { kind: 'result'; result: ResultEnvelope; publishedAt?: number }
  | { kind: 'approve'; approver: string }
  | { kind: 'deny'; approver: string; reason?: string }
  | { kind: 'cancel'; by: string | null; reason: string | null }
  /** Time passed (`env.now`): hops past their stage's timeout (or the default one), an item past its deadline. */
  | { kind: 'timer' }
  /** The bus lost its state (`reason` says how it was seen): every hop out is published again. */
  | { kind: 'reconcile'; reason: string }
  /**
   * A child work item ended: its parent's join takes its outcome; `siblings`,
   * other children's ends settled after it in the same decision, in order.
   */
  | { kind: 'child'; settle: SettleBody; siblings?: readonly SettleBody[] };

/** What the decisions are given besides the state and the input: the time, ids and the governance cascade. */
export interface DecisionEnv {
  now: number;
  nextId(): string;
  /** The cascade run before every hop and query: a value of the workflow room (`governanceCascade`). */
  governance: GovernanceCascade;
  /**
   * The deployment's default hop timeout (ms): how long a hop (or a query)
   * whose stage sets no `timeout` may be out before the timer re-publishes
   * it. Absent or `0`: none (only stages' own timeouts count).
   */
  hopTimeoutMs?: number;
}

/** How a result was handled. */
export type ResultHandling = 'applied' | 'duplicate' | 'late' | 'unknown';

/** A refused input: nothing changes (the Coordinator raises it as its error). */
export interface DecisionRefusal {
  code: 'COORD_UNKNOWN_ITEM' | 'COORD_ITEM_FINAL' | 'COORD_APPROVAL_REFUSED' | 'COORD_UNKNOWN_WORKFLOW';
  message: string;
}

/** One governance cascade a decision ran: the hop it checked and what the cascade decided. */
export interface GovernanceCheck {
  ctx: HopContext;
  decision: GovernanceDecision;
}

/** What `decide` returns: the item's next state, the changes and events, or a refusal (nothing changes). */
export interface Decision {
  handling: ResultHandling;
  /** The item's state after the decision (the input state when nothing changed). */
  view: ItemView | undefined;
  /** What to commit (`null` when nothing changes). */
  changes: ItemChanges | null;
  events: ItemEvent[];
  /** The events the run took, in order (for an inspector's live actor). */
  runEvents: WorkflowRunEvent[];
  refusal?: DecisionRefusal;
  /** The governance cascades it ran, in order (the caller traces them). */
  governed: GovernanceCheck[];
  /** Events the run refused (logged by the caller). */
  refused: { event: string; state: string; reason: unknown }[];
}
