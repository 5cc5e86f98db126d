import type { JsonValue } from '../protocol/audit.js';
import type { ItemBudget } from '../workflow/records.js';

/**
 * The shapes of a stage's open join (its branches, their states and
 * budgets), as a run's snapshot holds them: read by the join functions
 * (workflow-run-join.ts) and their index (workflow-run-join-index.ts).
 */

/** Where a branch stands: not started yet (a map's elements past `maxConcurrency`), running, or settled. */
export type BranchState = 'waiting' | 'running' | 'succeeded' | 'failed' | 'canceled';

/** One child of a join: its key (a branch's name, an element's index, or `child`), its state, output and budget. */
export interface JoinBranch {
  key: string;
  state: BranchState;
  output: JsonValue | null;
  error: { type: string; message: string } | null;
  /** What the child may spend (its carve of the parent's budget); `null`: no bound. */
  budget: ItemBudget | null;
  /**
   * How long the child may run from its start, by its carve (ms; capped at
   * the parent's deadline when it starts). Absent or `null`: the parent's
   * deadline, inherited.
   */
  deadlineMs?: number | null;
}

/** What a join belongs to: a parallel, map or workflow stage, or a hop that started children itself (`spawn`). */
export type JoinKind = 'parallel' | 'map' | 'workflow' | 'spawn';

/** A stage's open join. */
export interface RunJoin {
  stage: string;
  hop: number;
  kind: JoinKind;
  /** Successes that decide the join (`all`: every branch; `any`: one; `atLeast`: n). */
  need: number;
  /** Whether the join waits for every branch (`all`, a map, a workflow stage), not a count of successes. */
  all: boolean;
  /** Whether a branch's failure is kept in the output instead of failing the join. */
  collect: boolean;
  /** Children running at once. */
  maxConcurrency: number;
  branches: JoinBranch[];
}
