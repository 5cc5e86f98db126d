import type { JsonValue } from '../../protocol/audit.js';
import type { AuditEntryInput } from '../../protocol/audit.js';
import type { ResultEnvelope } from '../../protocol/work-envelope.js';
import type { Accrual } from '../../workflow/cost-ledger.js';
import type { HopRecord } from '../../workflow/records.js';
import type { RunJoin } from '../../machines/workflow-run-join.js';
import { type SpawnBody, childItemId } from './child-rows.js';
import { drive } from './drive.js';
import { continuationOf } from './resuming-reply.js';
import { awaitsReply, replyHeaders } from './suspension.js';
import type { Decision } from './types.js';
import { late, sendUsage } from './usage.js';
import { COORDINATOR_ACTOR, type Work, json } from './work.js';

/**
 * A hop that started child work items itself (its handler's `spawn`): it
 * stands down like a hop that asked a question, its children are written as
 * `spawn` rows (each a child of the work item, its budget carved from the
 * item's), and once they have all ended the hop resumes with their outcomes
 * and outputs as its reply.
 */

/**
 * A hop's child's key: `s<index>`, numbered in the order its handler gave
 * them and on across the hop's spawns (a hop that starts children again
 * after they resumed it gets new keys, so new child work items).
 */
export function spawnKey(index: number): string {
  return `s${index}`;
}

/** The index of the first key a spawn of `hop` takes: after the keys of the children that resumed it last. */
export function firstSpawnIndex(hop: HopRecord): number {
  const children = (hop.reply as { parts?: { kind?: unknown; data?: { children?: unknown } }[] } | null | undefined)
    ?.parts?.[0]?.data?.children;
  if (!Array.isArray(children)) return 0;
  let next = 0;
  for (const child of children) {
    const key = (child as { key?: unknown } | null)?.key;
    const index = typeof key === 'string' && /^s\d{1,6}$/.test(key) ? Number(key.slice(1)) : -1;
    if (index >= next) next = index + 1;
  }
  return next;
}

export function suspendForChildren(
  work: Work,
  hop: HopRecord,
  spawn: NonNullable<ResultEnvelope['spawn']>,
  accrual: Accrual,
  cost: AuditEntryInput,
  live: boolean,
): Decision {
  work.updateHop({ ...accrual.hop, state: 'suspended' });
  const token = spawn.continuationToken;
  const first = firstSpawnIndex(hop);
  const keys = spawn.children.map((_, i) => spawnKey(first + i));
  work.audit.push(
    {
      kind: 'suspend',
      itemId: work.item.id,
      hop: hop.hop,
      actor: hop.role,
      data: json({ hopId: hop.id, continuation: token, children: spawn.children.map((c) => c.workflow) }),
    },
    cost,
  );
  work.event(
    'suspended',
    hop.hop,
    `started ${keys.length} child work item${keys.length === 1 ? '' : 's'} and stood down`,
    {
      stage: hop.stage,
      role: hop.role,
      usage: accrual.added,
      model: accrual.model,
    },
  );
  if (!live) return late(work, hop);
  sendUsage(work, {
    type: 'HOP_SUSPENDED',
    hop: hop.hop,
    attempt: hop.attempt,
    continuation: token,
    children: spawn.children.map((c, i) => ({
      key: keys[i]!,
      ...(c.budget === undefined ? {} : { budget: c.budget }),
    })),
    usage: accrual.added,
  });
  const join = work.run?.context.join ?? null;
  if (awaitsReply(work, token) && join !== null) {
    spawn.children.forEach((child, i) => {
      const body: SpawnBody = {
        parentId: work.item.id,
        childId: childItemId(work.item.id, hop.hop, keys[i]!),
        hop: hop.hop,
        branch: keys[i]!,
        stage: hop.stage,
        definition: null,
        workflow: child.workflow,
        input: child.input,
        budget: join.branches[i]?.budget ?? null,
        deadlineAt: work.run?.context.deadline?.at ?? null,
        position: i,
      };
      work.outbox.push({ kind: 'spawn', body });
    });
    work.audit.push({
      kind: 'spawn',
      itemId: work.item.id,
      hop: hop.hop,
      actor: COORDINATOR_ACTOR,
      data: json({
        stage: hop.stage,
        hopId: hop.id,
        children: keys.map((key, i) => ({
          branch: key,
          childId: childItemId(work.item.id, hop.hop, key),
          workflow: spawn.children[i]!.workflow,
          budget: join.branches[i]?.budget ?? null,
        })),
      }),
    });
  }
  drive(work);
  return work.finish('applied', false);
}

/**
 * Where the children's reply lists the continuations of the spawns its hop
 * took (in its `metadata`, which the reply routed to the worker does not
 * carry): a result that suspends under one of them again is a duplicate,
 * however many spawns later it comes back.
 */
export const SPAWNS_METADATA_KEY = 'switchboardSpawns';
/** How many of a hop's spawns its reply lists, the newest (a list of 128 ids stays well inside metadata's bound). */
export const MAX_SPAWNS_LISTED = 128;

/**
 * The continuations of the spawns a hop took, oldest first, read from the
 * reply that resumed it last: its list, or, for a reply written before the
 * list was kept, the one continuation it names.
 */
export function spawnsTaken(reply: unknown): string[] {
  const listed = (reply as { metadata?: Record<string, unknown> } | null | undefined)?.metadata?.[SPAWNS_METADATA_KEY];
  if (Array.isArray(listed)) return listed.filter((t): t is string => typeof t === 'string');
  const last = continuationOf(reply);
  return last === undefined ? [] : [last];
}

/**
 * The reply that resumes a hop whose children all ended: one data part
 * `{ children: [{ workflow, outcome, output, error }] }` in the order its
 * handler gave them, routed to the hop's worker under its continuation;
 * its metadata lists the spawns the hop took (`SPAWNS_METADATA_KEY`).
 */
export function childrenReply(work: Work, asking: HopRecord, continuation: string, join: RunJoin): ResultEnvelope {
  const children = join.branches.map((b) => ({
    key: b.key,
    outcome: b.state === 'succeeded' ? 'completed' : b.state,
    output: b.output,
    error: b.error,
  })) as JsonValue;
  return {
    kind: 'result',
    headers: replyHeaders(work, asking, continuation, `${continuation}:children`),
    role: asking.role,
    outcome: 'completed',
    parts: [{ kind: 'data', data: { children } }],
    artifacts: [],
    metadata: { [SPAWNS_METADATA_KEY]: [...spawnsTaken(asking.reply), continuation].slice(-MAX_SPAWNS_LISTED) },
  };
}

/**
 * Resumes the hop that waited for its children: it is out again, and its
 * reply goes to its worker. The reply is kept on the hop (`reply`): what
 * re-publishing the hop sends, and where its next spawn's keys start.
 */
export function resumeWithChildren(work: Work, asking: HopRecord, continuation: string, join: RunJoin): void {
  const now = work.env.now;
  const reply = childrenReply(work, asking, continuation, join);
  work.updateHop({ ...asking, state: 'dispatched', activeSince: now, reply });
  work.outbox.push({ kind: 'signal', body: reply });
  work.audit.push({
    kind: 'resume',
    itemId: work.item.id,
    hop: asking.hop,
    actor: COORDINATOR_ACTOR,
    data: json({ hopId: asking.id, continuation, children: join.branches.length }),
  });
  work.event('resumed', asking.hop, `resumed: its ${join.branches.length} child work items ended`, {
    stage: asking.stage,
    role: asking.role,
  });
}
