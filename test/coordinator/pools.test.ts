import { afterEach, describe, expect, it } from 'vitest';
import type { Coordinator } from '../../src/actors/coordinator/coordinator.js';
import { type WorkHandler, complete, suspend } from '../../src/actors/worker/worker.js';
import { DEMO_HANDLERS } from '../../src/demo/roles.js';
import { type Fixture, auditRows, TO_ZERO, WARM, autoApprove, deployments, openFixture, until } from './helpers.js';

function waitFor(check: () => boolean, what: string): Promise<void> {
  return until(check, 10_000, what);
}

describe('suspend/resume and deployments', () => {
  let f: Fixture | undefined;
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  it('coding asks the architect through the Coordinator: the architect pool is at zero before the question, and no coding worker holds the hop while it waits', async () => {
    const holder: { coordinator?: Coordinator } = {};
    const replicas = (role: string) => holder.coordinator?.pools.get(role)?.replicas ?? -1;
    const seen: { architectBeforeAsk?: number; codingWhileAnswering?: number } = {};
    const architect: WorkHandler = async ({ headers }) => {
      if (headers.askedBy !== undefined) {
        // Answer only once the asking role has stood down to zero workers.
        await waitFor(() => replicas('coding') === 0, 'the coding pool at zero');
        seen.codingWhileAnswering = replicas('coding');
        return complete({
          parts: [{ kind: 'text', text: 'PostgreSQL' }],
          usage: { inputTokens: 100, outputTokens: 20, costUsd: 0.002, model: 'demo-large' },
        });
      }
      return complete({ usage: { inputTokens: 1000, outputTokens: 300, costUsd: 0.03, model: 'demo-large' } });
    };
    const coding: WorkHandler = async ({ resume }) => {
      if (resume === undefined) {
        await waitFor(() => replicas('architect') === 0, 'the architect pool at zero');
        seen.architectBeforeAsk = replicas('architect');
        return suspend({
          ask: { role: 'architect', message: { role: 'agent', parts: [{ kind: 'text', text: 'Which database?' }] } },
          state: { draft: 1 },
          usage: { inputTokens: 400, outputTokens: 30, costUsd: 0.001, model: 'demo-medium' },
        });
      }
      const answer = resume.reply.parts[0]?.kind === 'text' ? resume.reply.parts[0].text : '?';
      return complete({
        parts: [{ kind: 'text', text: `built on ${answer}` }],
        usage: { inputTokens: 2000, outputTokens: 800, costUsd: 0.02, model: 'demo-medium' },
      });
    };
    const pass: WorkHandler = () =>
      complete({ usage: { inputTokens: 10, outputTokens: 1, costUsd: 0, model: 'demo-small' } });
    f = await openFixture({
      deployments: deployments(
        { architect, coding, testing: pass, devops: pass },
        { architect: TO_ZERO, coding: TO_ZERO, testing: WARM, devops: WARM },
      ),
    });
    const { coordinator } = f;
    holder.coordinator = coordinator;
    const history: Record<string, number[]> = { architect: [], coding: [] };
    for (const role of ['architect', 'coding'])
      coordinator.pools.get(role)!.replicas$.subscribe((n) => history[role]!.push(n));
    const stop = autoApprove(coordinator);
    const id = await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Build the API' });
    const final = await coordinator.settled(id);
    stop();
    expect(final.state).toBe('completed');
    expect(seen).toEqual({ architectBeforeAsk: 0, codingWhileAnswering: 0 });
    // architect: up for the design, down to zero, up again for the question.
    expect(history.architect!.join('')).toMatch(/^0+1+0+1/);
    // coding: up for the hop, down to zero while it waited, up again for the resume.
    expect(history.coding!.join('')).toMatch(/^0+1+0+1/);
    const hops = await coordinator.listHops(id);
    const query = hops.find((h) => h.kind === 'query')!;
    expect(query).toMatchObject({
      role: 'architect',
      state: 'completed',
      usage: { inputTokens: 100, outputTokens: 20 },
    });
    const codingHop = hops.find((h) => h.id === query.askedBy)!;
    expect(codingHop.usage).toMatchObject({ inputTokens: 2400, outputTokens: 830 });
    // The ask went through the Coordinator: governed and audited like a hop.
    const audit = await auditRows(coordinator, { itemId: id });
    expect(audit.find((r) => r.kind === 'governance' && r.data.query === true)?.data).toMatchObject({
      role: 'architect',
      decision: 'allow',
    });
    expect(audit.find((r) => r.kind === 'dispatch' && r.data.hopId === query.id)).toBeDefined();
    expect(audit.find((r) => r.kind === 'resume')?.data).toMatchObject({ hopId: codingHop.id, queryId: query.id });
  });

  it('flipping a role from warm to scale-to-zero changes only its deployment config', async () => {
    f = await openFixture({ deployments: deployments(DEMO_HANDLERS, { coding: WARM }) });
    const { coordinator } = f;
    const stop = autoApprove(coordinator);
    const pool = coordinator.pools.get('coding')!;
    const first = await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'First, warm' });
    expect((await coordinator.settled(first)).state).toBe('completed');
    await new Promise((r) => setTimeout(r, 150));
    expect(pool.replicas).toBeGreaterThanOrEqual(1);
    coordinator.configureRole('coding', TO_ZERO);
    expect(pool.deployment).toEqual(TO_ZERO);
    await waitFor(() => pool.replicas === 0, 'coding at zero after the flip');
    const second = await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Second, scale-to-zero' });
    expect((await coordinator.settled(second)).state).toBe('completed');
    stop();
    await waitFor(() => pool.replicas === 0, 'coding back at zero');
    // Same hops, same accounting: only the deployment differed.
    const shape = async (id: string) => (await coordinator.listHops(id)).map((h) => `${h.kind}:${h.role}:${h.state}`);
    expect(await shape(second)).toEqual(await shape(first));
    expect(() => coordinator.configureRole('nobody', TO_ZERO)).toThrow(/no pool/);
    expect(() => coordinator.configureRole('coding', { ...TO_ZERO, maxReplicas: 0 })).toThrow();
    expect(pool.deployment).toEqual(TO_ZERO);
  });
});
