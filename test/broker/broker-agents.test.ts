/**
 * A registration's agent machine, run as an XState actor (inspected broker)
 * and as `PlainAgentActor` (the default), driven through the same events and
 * restores and compared after every step.
 */
import { fc, test as fcTest } from '@fast-check/vitest';
import { createActor } from 'xstate';
import { describe, expect, it } from 'vitest';
import { type AgentActorLike, PlainAgentActor, startAgentActor } from '../../src/actors/broker/agents.js';
import { agentMachine } from '../../src/machines/agent-machine.js';
import { A2A_MAX_SENDS_PER_RUN } from '../../src/protocol/bounds.js';

function view(actor: AgentActorLike) {
  const { value, status, context } = actor.getSnapshot();
  return { value, status, context, persisted: JSON.stringify(actor.getPersistedSnapshot()) };
}

describe('PlainAgentActor behaves as the agent machine', () => {
  fcTest.prop(
    [
      fc.array(fc.constantFrom('SEND' as const, 'DEREGISTER' as const, 'RESTORE' as const), { maxLength: 60 }),
      fc.integer({ min: 0, max: 10 }),
      fc.integer({ min: 0, max: 5 }),
    ],
    { numRuns: 300 },
  )('same snapshots after every step, across restores', (steps, cap, sends) => {
    const input = { agentId: 'a', sendCap: cap, sends: Math.min(sends, cap) };
    let actor: AgentActorLike = createActor(agentMachine, { input }).start() as unknown as AgentActorLike;
    let plain: AgentActorLike = new PlainAgentActor(input);
    expect(view(plain)).toEqual(view(actor));
    for (const step of steps) {
      if (step === 'RESTORE') {
        const a = JSON.parse(JSON.stringify(actor.getPersistedSnapshot()));
        const b = JSON.parse(JSON.stringify(plain.getPersistedSnapshot()));
        if (actor.getSnapshot().status !== 'active') continue;
        actor.stop();
        plain.stop();
        actor = createActor(agentMachine, {
          input: { agentId: 'a' },
          snapshot: a,
        }).start() as unknown as AgentActorLike;
        plain = new PlainAgentActor({ agentId: 'a' }, b);
      } else {
        if (actor.getSnapshot().status !== 'active') continue;
        actor.send({ type: step });
        plain.send({ type: step });
      }
      expect(view(plain)).toEqual(view(actor));
    }
  });

  it('startAgentActor: an XState actor when inspected, PlainAgentActor otherwise', () => {
    const events: unknown[] = [];
    const inspected = startAgentActor({ input: { agentId: 'a' }, inspect: { next: (e) => events.push(e) } });
    inspected.send({ type: 'SEND' });
    expect(inspected).not.toBeInstanceOf(PlainAgentActor);
    expect(events.length).toBeGreaterThan(0);
    const plain = startAgentActor({ input: { agentId: 'a' } });
    expect(plain).toBeInstanceOf(PlainAgentActor);
    for (let i = 0; i <= A2A_MAX_SENDS_PER_RUN; i++) plain.send({ type: 'SEND' });
    expect(plain.getSnapshot().context).toMatchObject({ sends: A2A_MAX_SENDS_PER_RUN, refusedSend: true });
    plain.send({ type: 'DEREGISTER' });
    expect(plain.getSnapshot()).toMatchObject({ value: 'deregistered', status: 'done' });
  });
});
