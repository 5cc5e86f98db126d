import { fc, test as fcTest } from '@fast-check/vitest';
import { type Actor, createActor } from 'xstate';
import { describe, expect, it } from 'vitest';
import { AGENT_TRANSITIONS, agentMachine } from '../../src/machines/agent-machine.js';
import { A2A_MAX_SENDS_PER_RUN } from '../../src/protocol/bounds.js';

type AgentActor = Actor<typeof agentMachine>;

describe('agent machine', () => {
  it('exports its table: a live registration sends (under the cap) and deregisters once', () => {
    expect(AGENT_TRANSITIONS).toEqual([
      { from: 'live', event: 'SEND', to: 'live', when: 'under-send-cap' },
      { from: 'live', event: 'DEREGISTER', to: 'deregistered' },
    ]);
  });

  it('counts sends up to A2A_MAX_SENDS_PER_RUN and refuses the next one', () => {
    const actor = createActor(agentMachine, { input: { agentId: 'a' } }).start();
    for (let i = 0; i < A2A_MAX_SENDS_PER_RUN; i++) {
      actor.send({ type: 'SEND' });
      expect(actor.getSnapshot().context.refusedSend).toBe(false);
    }
    actor.send({ type: 'SEND' });
    expect(actor.getSnapshot().context).toMatchObject({ sends: A2A_MAX_SENDS_PER_RUN, refusedSend: true });
    actor.send({ type: 'DEREGISTER' });
    expect(actor.getSnapshot().status).toBe('done');
    expect(actor.getSnapshot().value).toBe('deregistered');
  });

  fcTest.prop(
    [
      fc.array(fc.constantFrom('SEND' as const, 'DEREGISTER' as const, 'RESTORE' as const), { maxLength: 60 }),
      fc.integer({ min: 0, max: 10 }),
    ],
    { numRuns: 500 },
  )('agrees with a reference model, across snapshot/restore', (steps, cap) => {
    let actor: AgentActor = createActor(agentMachine, { input: { agentId: 'a', sendCap: cap } }).start();
    const model = { live: true, sends: 0, refused: false };
    for (const step of steps) {
      if (step === 'RESTORE') {
        const snapshot = JSON.parse(JSON.stringify(actor.getPersistedSnapshot()));
        actor.stop();
        actor = createActor(agentMachine, { snapshot, input: { agentId: 'a' } }).start();
      } else if (model.live) {
        actor.send({ type: step });
        if (step === 'DEREGISTER') model.live = false;
        else if (model.sends < cap) {
          model.sends++;
          model.refused = false;
        } else model.refused = true;
      }
      const s = actor.getSnapshot();
      expect(s.value).toBe(model.live ? 'live' : 'deregistered');
      expect(s.context.sends).toBe(model.sends);
      expect(s.context.refusedSend).toBe(model.refused);
    }
    actor.stop();
  });
});
