import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { complete, suspend } from '../../src/actors/worker/handler.js';
import type { WorkHandler } from '../../src/actors/worker/worker.js';
import { RESULTS_ROLE } from '../../src/protocol/work-envelope.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import { type Fixture, ON_POSTGRES, auditRows, deployments, openFixture } from './helpers.js';

/**
 * A hop resumed by its query's answer whose checkpoint the Context Engine no
 * longer holds (a Redis restarted empty takes the checkpoints with it; here
 * the rows are deleted from the file): the worker cannot resume it
 * (`UnknownContinuation`), and the Coordinator starts it over under its own
 * key instead of failing the item. It asks again, resumes from the new
 * checkpoint and completes; its effect keeps the hop's key; one `reconcile`
 * row says why. On the SQLite file (rows deleted beside it).
 */
const definition = parseWorkflowDefinition({
  id: 'asks',
  version: 1,
  start: 'lead',
  stages: { lead: { role: 'lead', next: [{ on: 'succeeded', end: 'completed' }] } },
});
const text = (t: string) => [{ kind: 'text' as const, text: t }];

describe.skipIf(ON_POSTGRES)('a resumed hop whose checkpoint was lost', () => {
  let f: Fixture | undefined;
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  it('starts over under its own key: the item completes, its effect keeps its key, a reconcile row says why', async () => {
    let path = '';
    const applied: string[] = [];
    let leadCalls = 0;
    let answers = 0;
    const lead: WorkHandler = async ({ resume, effects }) => {
      leadCalls++;
      await effects.once('charge', () => applied.push(effects.key('charge')));
      if (resume === undefined) {
        return suspend({ ask: { role: 'expert', message: { role: 'agent', parts: text('which way?') } }, state: {} });
      }
      return complete({ parts: text(`went ${resume.reply.parts.length > 0 ? 'left' : 'nowhere'}`) });
    };
    const expert: WorkHandler = async () => {
      // Before the first answer goes back, the store loses what a Redis restarted empty loses: the Context
      // Engine's checkpoints, completion records and effect markers, and the queues with the keys they
      // retained (the asking role's, the results').
      if (answers++ === 0) {
        const db = new Database(path);
        try {
          expect(db.prepare('DELETE FROM context_checkpoints').run().changes).toBe(1);
          db.exec('DELETE FROM context_completions; DELETE FROM context_effects');
        } finally {
          db.close();
        }
        for (const role of ['lead', RESULTS_ROLE]) await f!.storage.loseQueue(role);
      }
      return complete({ parts: text('left') });
    };
    f = await openFixture({
      definitions: [definition],
      deployments: deployments({ lead, expert }),
      allowedRoles: ['lead', 'expert'],
    });
    path = f.path;
    const id = await f.coordinator.createWorkItem({ workflow: 'asks', input: 'go' });
    const done = await f.coordinator.settled(id, { timeoutMs: 20_000 });
    expect(done.state).toBe('completed');
    const hops = await f.coordinator.listHops(id);
    expect(hops.map((h) => `${h.kind}:${h.state}`)).toEqual(['stage:completed', 'query:completed', 'query:completed']);
    // The handler ran three times: asked, asked again after the loss (the resume without a checkpoint never
    // reached it), resumed.
    expect(leadCalls).toBe(3);
    expect(answers).toBe(2);
    // Its effect's marker went with the store: applied again, under the same key (which the external system
    // the key is for deduplicates).
    expect(applied).toEqual([`${hops[0]!.idempotencyKey}/charge`, `${hops[0]!.idempotencyKey}/charge`]);
    const reconciles = (await auditRows(f.coordinator)).filter((r) => r.kind === 'reconcile' && r.itemId === id);
    expect(reconciles).toHaveLength(1);
    expect(reconciles[0]!.data).toMatchObject({
      continuation: hops[1]!.continuation,
      republished: [{ hopId: hops[0]!.id, kind: 'stage', role: 'lead', idempotencyKey: hops[0]!.idempotencyKey }],
    });
    expect((await f.coordinator.verifyAudit()).ok).toBe(true);
  }, 30_000);
});
