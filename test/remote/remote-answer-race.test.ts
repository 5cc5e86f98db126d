import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SetStatusParams } from '../../src/protocol/methods.js';
import { type RemoteBridge, startRemoteBridge } from '../../src/remote/remote-bridge.js';
import { type SwitchboardClient, connect } from '../../src/transport/client.js';
import { SocketServe, hostDir, text } from '../host/helpers.js';
import { type SdkAgent, agentNames, agentsCli, followTask, startSdkAgent, textOf, until } from './remote-helpers.js';

// The requester may answer a remote's question before the bridge's pass that wrote the question
// has wound down (a busy machine). The answer must still reach the remote task: here the broker's
// reply to the question is held back until the answer has come, every time.

/** The bridge's client, whose writes of a question return only once the requester has answered. */
function answerBeforeQuestionReturns(client: SwitchboardClient): SwitchboardClient {
  // The client's own methods are read-only: the proxy stands over an empty object and reads them from it.
  const target = client;
  return new Proxy({} as SwitchboardClient, {
    get(_, prop) {
      if (prop === 'setStatus') {
        return async (params: SetStatusParams) => {
          const result = await target.setStatus(params);
          if (params.state === 'input-required') {
            await until(async () => {
              const { task } = await target.getTask({ token: params.token, id: params.id });
              return task.status.state === 'working' ? true : undefined;
            });
          }
          return result;
        };
      }
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

describe('an answer that comes while the bridge still writes the question', () => {
  const h = hostDir();
  let serve: SocketServe;
  let streamer: SdkAgent;
  let poller: SdkAgent;
  let bridgeClient: SwitchboardClient;
  let bridge: RemoteBridge | undefined;
  let client: SwitchboardClient;
  let token: string;

  beforeAll(async () => {
    serve = new SocketServe(h.db, ['--listen', `unix:${h.socket}`, '--no-remote-agents']);
    await serve.listening(h.socket);
    [streamer, poller] = await Promise.all([startSdkAgent('stream'), startSdkAgent('poll')]);
    expect(agentsCli(['add-remote', streamer.url, '--db', h.db, '--name', 'streamer']).status).toBe(0);
    expect(agentsCli(['add-remote', poller.url, '--db', h.db, '--name', 'poller']).status).toBe(0);
    client = await connect({ socket: h.socket });
    token = (await client.register({ name: 'lead', contextId: 'local' })).token;
    bridgeClient = await connect({ socket: h.socket });
    bridge = await startRemoteBridge({ db: h.db, client: answerBeforeQuestionReturns(bridgeClient), pollMs: 100 });
    await until(async () => ((await agentNames(client, token)).length === 2 ? true : undefined));
  }, 60_000);

  afterAll(async () => {
    await bridge?.stop();
    await bridgeClient?.close().catch(() => {});
    await client?.close().catch(() => {});
    await streamer?.stop();
    await poller?.stop();
    await serve?.stop();
    h.cleanup();
  }, 30_000);

  for (const [remote, colour] of [
    ['streamer', 'blue'],
    ['poller', 'green'],
  ] as const) {
    it(`reaches the remote task and completes it (${remote})`, async () => {
      const { task } = await client.send({ token, to: remote, message: text('ask') });
      const asked = await followTask(client, token, task.id, ['input-required']);
      expect(textOf(asked.task.status.message?.parts)).toBe('which colour?');
      await client.send({ token, taskId: task.id, message: text(colour) });
      const answered = await followTask(client, token, task.id);
      expect(answered.steps).toEqual(['artifact:answer', 'completed']);
      expect(textOf(answered.task.artifacts[0]?.parts)).toBe(`colour: ${colour}`);
    }, 60_000);
  }
});
