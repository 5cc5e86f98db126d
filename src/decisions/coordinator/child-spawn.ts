import type { RunDirective } from '../../machines/workflow-run-context.js';
import { branchInput, branchPosition } from '../../machines/workflow-run-join.js';
import type { JsonValue } from '../../protocol/audit.js';
import type { ItemOutput } from '../../protocol/item-output.js';
import type { Part } from '../../protocol/parts.js';
import { branchDefinition } from '../../workflow/stage-checks.js';
import { BRANCH_ATTRIBUTE, PARENT_ATTRIBUTE, type SettleBody, type SpawnBody, childItemId } from './child-rows.js';
import { COORDINATOR_ACTOR, type Work, json } from './work.js';

/**
 * Child work items: the children a parallel, map or workflow stage asks
 * for (written as `spawn` outbox rows, each a whole child's request), a
 * child's end told to its parent (`settle`), and the children a decided or
 * abandoned join leaves running (`cancel-child`). The rows are carried out
 * by the Coordinator after the commit, each idempotent: a child's id is its
 * parent's, its hop and its branch, so a row carried out twice makes one
 * child.
 */

/** What a child's output gives its parent: its first data part, else its text, else null. */
export function outputValue(output: ItemOutput | null): JsonValue | null {
  if (output === null || output.state !== 'completed') return null;
  const data = output.parts.find((p) => p.kind === 'data');
  if (data !== undefined && data.kind === 'data') return data.data as JsonValue;
  const text = output.parts
    .filter((p) => p.kind === 'text')
    .map((p) => (p.kind === 'text' ? p.text : ''))
    .join('\n');
  return text === '' ? null : text;
}

/** A JSON value as a data part (an object as it is; anything else under `value`). */
export function dataPart(value: JsonValue): Part {
  const data = value !== null && typeof value === 'object' && !Array.isArray(value) ? value : { value };
  return { kind: 'data', data: data as Record<string, unknown> };
}

/** A child's input parts: the parent's request (text parts), and its element or the previous output as a data part. */
function childInput(parentInput: readonly Part[], value: JsonValue | null): Part[] {
  const texts = parentInput.filter((p) => p.kind === 'text');
  const parts = [...texts, ...(value === null ? [] : [dataPart(value)])];
  return parts.length > 0 ? parts : [{ kind: 'text', text: '(no input)' }];
}

/**
 * A child's deadline (ms since the epoch): its carve's, from `now`, but never
 * later than its parent's; the parent's when its carve sets none (`null`: none).
 */
export function childDeadline(parentAt: number | null, carveMs: number | null, now: number): number | null {
  if (carveMs === null) return parentAt;
  return parentAt === null ? now + carveMs : Math.min(parentAt, now + carveMs);
}

/** Writes the children a `spawn` directive asks for, and tells the run they are written. */
export function spawn(work: Work, d: Extract<RunDirective, { kind: 'spawn' }>): void {
  const ctx = work.run!.context;
  const join = ctx.join ?? null;
  const def = ctx.definition;
  const stage = def.stages[d.stage]!;
  if (join === null) return;
  // The fan-out stage's hop is taken when it starts its first children (later ones start under the same hop).
  if (d.hop > work.hopBefore) work.hopsTaken += 1;
  // Each branch's place in the join, read once (through the join's index: no pass over its branches).
  const positions = d.branches.map((branch) => branchPosition(join, branch));
  for (const [k, branch] of d.branches.entries()) {
    const position = positions[k];
    const b = position === undefined ? undefined : join.branches[position];
    const parallelBranch = stage.parallel?.branches[branch];
    const workflow = parallelBranch?.workflow ?? (stage.parallel === undefined ? stage.workflow : undefined) ?? null;
    const body: SpawnBody = {
      parentId: work.item.id,
      childId: childItemId(work.item.id, d.hop, branch),
      hop: d.hop,
      branch,
      stage: d.stage,
      definition:
        workflow === null ? branchDefinition(def, d.stage, stage.parallel === undefined ? null : branch) : null,
      workflow,
      input: childInput(work.item.input, branchInput(join, def, branch, ctx.output ?? null)),
      budget: b?.budget ?? null,
      deadlineAt: childDeadline(ctx.deadline?.at ?? null, b?.deadlineMs ?? null, work.env.now),
    };
    if (position !== undefined) body.position = position;
    work.outbox.push({ kind: 'spawn', body });
  }
  work.audit.push({
    kind: 'spawn',
    itemId: work.item.id,
    hop: d.hop,
    actor: COORDINATOR_ACTOR,
    data: json({
      stage: d.stage,
      children: d.branches.map((branch, k) => {
        const b = positions[k] === undefined ? undefined : join.branches[positions[k]];
        return {
          branch,
          childId: childItemId(work.item.id, d.hop, branch),
          budget: b?.budget ?? null,
          deadlineAt: childDeadline(ctx.deadline?.at ?? null, b?.deadlineMs ?? null, work.env.now),
        };
      }),
    }),
  });
  work.event(
    'spawned',
    d.hop,
    `started ${d.branches.length} child work item${d.branches.length === 1 ? '' : 's'}: ${d.branches.slice(0, 8).join(', ')}${d.branches.length > 8 ? ', ...' : ''}`,
    { stage: d.stage },
  );
  work.send({ type: 'CHILDREN_SPAWNED', hop: d.hop });
}

/** A child's end, told to its parent (if it has one): the `settle` row. */
export function settleParent(work: Work, state: 'completed' | 'failed' | 'canceled'): void {
  const parentId = work.item.attributes?.[PARENT_ATTRIBUTE];
  const at = work.item.attributes?.[BRANCH_ATTRIBUTE];
  if (typeof parentId !== 'string' || typeof at !== 'string') return;
  const split = at.indexOf(':');
  const output = work.item.output;
  const body: SettleBody = {
    parentId,
    childId: work.item.id,
    hop: Number(at.slice(0, split)),
    branch: at.slice(split + 1),
    outcome: state,
    output: outputValue(output),
    error:
      output?.state === 'failed'
        ? { type: output.error?.type ?? output.code, message: output.message.slice(0, 2000) }
        : null,
    usage: work.item.usage,
    hops: work.item.hop + (work.ctx?.childHops ?? 0),
  };
  work.outbox.push({ kind: 'settle', body });
}
