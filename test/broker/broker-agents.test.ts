/**
 * A registration's agent actor as the broker starts it (`startAgentActor`),
 * inspected or not, driven through random sends, deregistrations and
 * restores and compared after every step with a reference model of
 * `agentMachine` (live until deregistered; sends counted up to the cap).
 */
import { fc, test as fcTest } from '@fast-check/vitest';
import { Actor, type InspectionEvent } from 'xstate';
import { describe, expect, it } from 'vitest';
import { type AgentActor, startAgentActor } from '../../src/actors/broker/agents.js';
import { A2A_MAX_SENDS_PER_RUN } from '../../src/protocol/bounds.js';

function view(actor: AgentActor) {
  const { value, status, context } = actor.getSnapshot();
  return { value, status, context, persisted: JSON.stringify(actor.getPersistedSnapshot()) };
}

interface Model {
  live: boolean;
  sends: number;
  sendCap: number;
  refusedSend: boolean;
}

/** What XState holds and persists for the agent machine in the model's state (same keys, same order). */
function modelView(m: Model) {
  const value = m.live ? 'live' : 'deregistered';
  const status = m.live ? 'active' : 'done';
  const context = { agentId: 'a', sends: m.sends, sendCap: m.sendCap, refusedSend: m.refusedSend };
  return {
    value,
    status,
    context,
    persisted: JSON.stringify({ status, value, historyValue: {}, context, children: {} }),
  };
}

describe('agent actors', () => {
  fcTest.prop(
    [
      fc.array(fc.constantFrom('SEND' as const, 'DEREGISTER' as const, 'RESTORE' as const), { maxLength: 60 }),
      fc.integer({ min: 0, max: 10 }),
      fc.integer({ min: 0, max: 5 }),
      fc.boolean(),
    ],
    { numRuns: 300 },
  )('answer as the reference model after every step, across restores', (steps, cap, sends, inspected) => {
    const inspect = inspected ? { next: (_: InspectionEvent) => {} } : undefined;
    const input = { agentId: 'a', sendCap: cap, sends: Math.min(sends, cap) };
    let actor = startAgentActor({ input, ...(inspect === undefined ? {} : { inspect }) });
    const model: Model = { live: true, sends: input.sends, sendCap: cap, refusedSend: false };
    expect(actor).toBeInstanceOf(Actor);
    expect(view(actor)).toEqual(modelView(model));
    for (const step of steps) {
      if (!model.live) continue;
      if (step === 'RESTORE') {
        const snapshot = JSON.parse(JSON.stringify(actor.getPersistedSnapshot()));
        actor.stop();
        actor = startAgentActor({ input: { agentId: 'a' }, snapshot, ...(inspect === undefined ? {} : { inspect }) });
      } else {
        actor.send({ type: step });
        if (step === 'DEREGISTER') model.live = false;
        else if (model.sends < model.sendCap) {
          model.sends++;
          model.refusedSend = false;
        } else model.refusedSend = true;
      }
      expect(view(actor)).toEqual(modelView(model));
    }
    actor.stop();
  });

  it('startAgentActor: an XState actor of the agent machine, inspected or not', () => {
    const events: InspectionEvent[] = [];
    const inspected = startAgentActor({ input: { agentId: 'a' }, inspect: { next: (e) => events.push(e) } });
    inspected.send({ type: 'SEND' });
    expect(inspected).toBeInstanceOf(Actor);
    expect(events.some((e) => e.type === '@xstate.event' && e.event.type === 'SEND')).toBe(true);
    const plain = startAgentActor({ input: { agentId: 'a' } });
    expect(plain).toBeInstanceOf(Actor);
    expect(plain.logic).toBe(inspected.logic);
    for (let i = 0; i <= A2A_MAX_SENDS_PER_RUN; i++) plain.send({ type: 'SEND' });
    expect(plain.getSnapshot().context).toMatchObject({ sends: A2A_MAX_SENDS_PER_RUN, refusedSend: true });
    plain.send({ type: 'DEREGISTER' });
    expect(plain.getSnapshot()).toMatchObject({ value: 'deregistered', status: 'done' });
    inspected.stop();
    plain.stop();
  });
});
