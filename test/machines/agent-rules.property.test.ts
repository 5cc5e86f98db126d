import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { createActor } from 'xstate';
import { agentMachine } from '../../src/machines/agent-machine.js';
import { A2A_MAX_SENDS_PER_RUN } from '../../src/protocol/bounds.js';

/**
 * A registration restored with the sends it had made (the broker starts an
 * agent actor from its row): the cap counts from there, not from zero.
 */
describe('agent machine: a restored registration', () => {
  test.prop([fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 6 })])(
    'keeps its id and the sends it had, and refuses once the cap is reached',
    (sends, cap, more) => {
      const actor = createActor(agentMachine, { input: { agentId: 'agent-9', sends, sendCap: cap } }).start();
      expect(actor.getSnapshot().context).toEqual({ agentId: 'agent-9', sends, sendCap: cap, refusedSend: false });
      for (let i = 0; i < more; i++) actor.send({ type: 'SEND' });
      const accepted = Math.max(0, Math.min(more, cap - sends));
      expect(actor.getSnapshot().context.sends).toBe(sends + accepted);
      expect(actor.getSnapshot().context.refusedSend).toBe(more > accepted);
      actor.stop();
    },
  );

  test.prop([fc.integer({ min: 0, max: 5 })])('without a cap of its own, the cap is A2A_MAX_SENDS_PER_RUN', (sends) => {
    const actor = createActor(agentMachine, { input: { agentId: 'a', sends } }).start();
    expect(actor.getSnapshot().context.sendCap).toBe(A2A_MAX_SENDS_PER_RUN);
    expect(actor.getSnapshot().context.sends).toBe(sends);
    actor.stop();
  });
});
