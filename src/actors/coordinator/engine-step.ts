import type { Part } from '../../protocol/parts.js';
import type { WorkflowDefinition } from '../../protocol/workflow.js';
import type { Context } from '../../telemetry/tracing.js';
import type { RunDeadline } from '../../machines/workflow-run-context.js';
import type { HopRecord, ItemBudget, ItemRecord, OutboxRow } from '../../workflow/records.js';
import type { ItemEvent } from './types.js';

// The shapes the engine hands back and is given: a commit's step, and a child's creation.

/** What one commit did, for the Coordinator to act on after it. */
export interface Step {
  events: ItemEvent[];
  /** Items this step changed, as committed. */
  items: Map<string, ItemRecord>;
  /** The publishes this step added to the outbox (made after the commit). */
  outbox: OutboxRow[];
  /** The rows this step committed, by item (what the broker mirror follows). */
  rows: { item: ItemRecord; hops: HopRecord[]; created: boolean }[];
  /** The context of the decision's span: what the step's publishes continue (the root context when tracing is off). */
  trace: Context;
  /** The contexts of rows that continue another (a child created in this step continues its own decision's). */
  rowTraces?: Map<number, Context>;
}

/** What `createChild` is given: the child, its parent's hop and branch, and what its run starts with. */
export interface ChildParams {
  itemId: string;
  parentId: string;
  hop: number;
  branch: string;
  definition: WorkflowDefinition;
  input: Part[];
  budget: ItemBudget | null;
  attributes: Record<string, string | number | boolean>;
  deadline: RunDeadline | null;
  trace?: Context;
}
