import type { AuditRow } from '../protocol/audit.js';
import type { Part } from '../protocol/parts.js';
import { WorkflowDefinitionSchema } from '../protocol/workflow.js';
import { branchOf, ownUsage, parentOf, siblingOrder, treeOrder } from '../workflow/item-tree.js';
import type { HopRecord, ItemRecord, ItemState } from '../workflow/records.js';

/**
 * What the item view draws besides its timeline, computed from rows (pure):
 * the workflow's own stages from its kept definition, the path the item took
 * through them, its parts readably, and the tree of its child work items.
 */

/** One stage of a workflow as the item view draws it. */
export interface DiagramStage {
  name: string;
  /** What the stage runs: one role, parallel branches, a map over a list, or a child workflow. */
  kind: 'role' | 'parallel' | 'map' | 'workflow';
  /** The role (or `map` over a role), the child workflow's reference, or null for parallel. */
  runs: string | null;
  /** The parallel stage's branches (`name: role`), else empty. */
  branches: string[];
  /** Who approves before it runs, if gated. */
  approvers: string[] | null;
  /** Its next rules in order: where each goes (a stage, or `end: STATE`) and on what. */
  next: { on: string; to: string; end: boolean; when: string | null }[];
}

export interface WorkflowDiagram {
  id: string;
  version: number;
  title: string | null;
  start: string;
  stages: DiagramStage[];
}

/** The stages an item went through, in hop order (a stage once per visit), and where it stands. */
export interface ItemPath {
  visits: { hop: number; stage: string }[];
  current: string | null;
  failed: string | null;
}

/** A part as the page shows it: text as text, data as a value, a file by name and type. */
export type ShownPart =
  | { kind: 'text'; text: string }
  | { kind: 'data'; data: unknown }
  | { kind: 'file'; name: string | null; mimeType: string | null };

/** One child work item in the tree under an item. */
export interface ConsoleChild {
  id: string;
  /** 1: a child of the item, 2: a grandchild, ... */
  depth: number;
  parent: string;
  /** `<hop>:<branch>`: the hop of the parent that started it, and its branch (a parallel branch's name, a map element's index). */
  branch: string | null;
  workflow: string;
  state: ItemState;
  stage: string | null;
  /** Its own hops' cost; `costUsd` rolls its children's up into it. */
  ownCostUsd: number;
  costUsd: number;
}

/** The definition drawn, or null when it is not a workflow definition this code reads. */
export function workflowDiagram(definition: unknown): WorkflowDiagram | null {
  const parsed = WorkflowDefinitionSchema.safeParse(definition);
  if (!parsed.success) return null;
  const d = parsed.data;
  return {
    id: d.id,
    version: d.version,
    title: d.title ?? null,
    start: d.start,
    stages: Object.entries(d.stages).map(([name, s]) => ({
      name,
      kind:
        s.parallel !== undefined
          ? 'parallel'
          : s.forEach !== undefined
            ? 'map'
            : s.workflow !== undefined
              ? 'workflow'
              : 'role',
      runs: s.parallel !== undefined ? null : (s.role ?? s.workflow ?? null),
      branches:
        s.parallel === undefined
          ? []
          : Object.entries(s.parallel.branches).map(
              ([b, branch]) => `${b}: ${branch.role ?? branch.workflow ?? (branch.sequence ?? []).join(' → ')}`,
            ),
      approvers: s.approval?.approvers ?? null,
      next: s.next.map((r) => ({
        on: r.errorType === undefined ? r.on : `${r.on} (${r.errorType})`,
        to: r.goto ?? r.end ?? '',
        end: r.goto === undefined,
        when: r.when === undefined ? null : JSON.stringify(r.when),
      })),
    })),
  };
}

/**
 * The stage of each hop the item made: a hop row names its stage; a hop that
 * ran as child items (a parallel or map stage) is named by its audit rows
 * (a route leaving it names it), else it is the stage the hop before it
 * goes to on success (its first rule without a condition).
 */
export function itemPath(
  item: ItemRecord,
  hops: readonly HopRecord[],
  audit: readonly Pick<AuditRow, 'hop' | 'kind' | 'data'>[],
  diagram: WorkflowDiagram | null,
): ItemPath {
  const byHop = new Map<number, string>();
  const routes = new Map<number, string>();
  for (const hop of hops) if (hop.kind === 'stage') byHop.set(hop.hop, hop.stage);
  for (const row of audit) {
    const data = row.data as { stage?: unknown; to?: unknown } | null;
    if (row.hop === null || typeof data?.stage !== 'string') continue;
    if (!byHop.has(row.hop)) byHop.set(row.hop, data.stage);
    if (row.kind === 'route' && typeof data.to === 'string') routes.set(row.hop, data.to);
  }
  const last = Math.max(item.hop, ...byHop.keys(), 0);
  const visits: ItemPath['visits'] = [];
  for (let hop = 1; hop <= last; hop++) {
    let stage = byHop.get(hop);
    const before = visits.at(-1);
    if (stage === undefined && before !== undefined && before.hop === hop - 1) {
      stage = routes.get(before.hop) ?? successorOf(diagram, before.stage);
    }
    if (stage === undefined && hop === 1) stage = diagram?.start;
    if (stage !== undefined) visits.push({ hop, stage });
  }
  const ended = item.finishedAt !== null;
  return {
    visits,
    current: ended ? null : item.stage,
    failed: item.state === 'failed' ? (item.failure?.stage ?? item.stage) : null,
  };
}

function successorOf(diagram: WorkflowDiagram | null, stage: string): string | undefined {
  const rule = diagram?.stages.find((s) => s.name === stage)?.next.find((r) => r.on === 'succeeded' && r.when === null);
  return rule === undefined || rule.end ? undefined : rule.to;
}

/** Parts readably: text clipped to `max` characters, data as it is, files by name and type (never their bytes). */
export function shownParts(parts: readonly Part[], max: number): ShownPart[] {
  return parts.map((p) => {
    if (p.kind === 'text') return { kind: 'text', text: p.text.length <= max ? p.text : `${p.text.slice(0, max)}…` };
    if (p.kind === 'data') return { kind: 'data', data: p.data };
    const file = p.file as { name?: string; mimeType?: string };
    return { kind: 'file', name: file.name ?? null, mimeType: file.mimeType ?? null };
  });
}

/**
 * The descendants of `rootId` among `items`, in tree order (each parent
 * followed by its children, by hop then as started), with their own and
 * rolled-up cost (`hopsOf` gives an item's own hops).
 */
export function childTree(
  rootId: string,
  items: readonly ItemRecord[],
  hopsOf: (id: string) => readonly HopRecord[],
): ConsoleChild[] {
  const byParent = new Map<string, ItemRecord[]>();
  for (const item of items) {
    const parent = parentOf(item);
    if (parent !== null) byParent.set(parent, [...(byParent.get(parent) ?? []), item]);
  }
  const descendants: ItemRecord[] = [];
  const queue = [rootId];
  const seen = new Set(queue);
  while (queue.length > 0) {
    for (const child of byParent.get(queue.shift() as string) ?? []) {
      if (seen.has(child.id)) continue;
      seen.add(child.id);
      descendants.push(child);
      queue.push(child.id);
    }
  }
  // The item's own children come first in tree order: by the hop that started them, then by position.
  return treeOrder(siblingOrder(descendants)).map(({ item, depth }) => ({
    id: item.id,
    depth: depth + 1,
    parent: parentOf(item) as string,
    branch: branchOf(item),
    workflow: `${item.workflow.id}@${item.workflow.version}`,
    state: item.state,
    stage: item.stage,
    ownCostUsd: ownUsage(hopsOf(item.id)).costUsd,
    costUsd: item.usage.costUsd,
  }));
}
