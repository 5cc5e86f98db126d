import type { JsonValue } from '../../protocol/audit.js';
import type { Part } from '../../protocol/parts.js';
import type { RunUsage, WorkflowDefinition } from '../../protocol/workflow.js';
import type { ItemBudget } from '../../workflow/records.js';

/**
 * The outbox rows of child work items, as data: what creating a child
 * (`spawn`), telling a parent a child ended (`settle`) and canceling a child
 * (`cancel-child`) carry, and the ids and attributes that link a child to
 * its parent.
 */

/** The attribute naming a child's parent work item. */
export const PARENT_ATTRIBUTE = 'switchboard.parent';
/** The attribute naming a child's hop and branch in its parent (`<hop>:<branch>`). */
export const BRANCH_ATTRIBUTE = 'switchboard.branch';
/**
 * The attribute giving a child's place among the children of its hop, from 0:
 * its branch's in the stage, its element's in the list, its place among the
 * children a handler spawned. Siblings are listed by it: children made in one
 * commit share their creation time.
 */
export const POSITION_ATTRIBUTE = 'switchboard.position';

/** A child's id: its parent's id, the hop of the stage that made it, and its branch. */
export function childItemId(parentId: string, hop: number, branch: string): string {
  return `${parentId}.${hop}.${branch}`;
}

/** A `spawn` outbox row's body: everything the Coordinator needs to create the child. */
export interface SpawnBody {
  parentId: string;
  childId: string;
  hop: number;
  branch: string;
  stage: string;
  /** The workflow the child runs: a derived definition (a role or a sequence), or another workflow by reference. */
  definition: WorkflowDefinition | null;
  workflow: string | null;
  input: Part[];
  budget: ItemBudget | null;
  /** The parent's deadline (ms since the epoch) the child inherits (`null`: none). */
  deadlineAt: number | null;
  /** The child's place among its hop's children (absent in a row from before positions were written). */
  position?: number;
}

/** A `settle` outbox row's body: a child's end, for its parent. */
export interface SettleBody {
  parentId: string;
  childId: string;
  hop: number;
  branch: string;
  outcome: 'completed' | 'failed' | 'canceled';
  output: JsonValue | null;
  error: { type: string; message: string } | null;
  usage: RunUsage;
  /** Hops the child took, its own children's counted in (absent in a row from before hops were counted). */
  hops?: number;
}

/** A `cancel-child` outbox row's body. */
export interface CancelChildBody {
  parentId: string;
  childId: string;
  reason: string;
}
