import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SwitchboardClient, connect } from '../../src/transport/client.js';
import { SocketServe, hostDir, text } from '../host/helpers.js';
import { type SdkAgent, agentNames, agentsCli, followTask, startSdkAgent, textOf, until } from './remote-helpers.js';

const named = (client: SwitchboardClient, token: string, name: string, present = true) =>
  until(async () => ((await agentNames(client, token)).includes(name) === present ? true : undefined));

describe('the process that owns the broker runs the bridge of its remote agents', () => {
  let remote: SdkAgent;

  beforeAll(async () => {
    remote = await startSdkAgent('stream');
  }, 30_000);

  afterAll(async () => {
    await remote?.stop();
  });

  it('switchboard serve: a remote added while it runs is picked up; one removed leaves', async () => {
    const h = hostDir();
    const serve = new SocketServe(h.db, ['--listen', `unix:${h.socket}`]);
    try {
      await serve.listening(h.socket);
      const client = await connect({ socket: h.socket });
      const { token } = await client.register({ name: 'lead', contextId: 'local' });
      // No remotes file: nothing is opened beside the database.
      expect(existsSync(`${h.db}.remote-tasks.db`)).toBe(false);
      expect(agentsCli(['add-remote', remote.url, '--db', h.db, '--name', 'far']).status).toBe(0);
      await named(client, token, 'far');
      const { task } = await client.send({ token, to: 'far', message: text('served') });
      const followed = await followTask(client, token, task.id);
      expect(followed.steps).toEqual(['working', 'artifact:answer', 'completed']);
      expect(textOf(followed.task.artifacts[0]?.parts)).toBe('echo: served');
      const removed = agentsCli(['remove-remote', 'far', '--db', h.db]);
      expect(removed.stdout).toContain('removed the remote agent "far"');
      await named(client, token, 'far', false);
      expect(agentsCli(['remove-remote', 'far', '--db', h.db]).status).toBe(1);
      await client.close();
    } finally {
      await serve.stop();
      h.cleanup();
    }
  }, 60_000);

  it('the host broker started in the background for connect({ db }) bridges the recorded remotes', async () => {
    const h = hostDir();
    try {
      expect(agentsCli(['add-remote', remote.url, '--db', h.db]).status).toBe(0);
      const client = await connect({ db: h.db, idleSeconds: 1 });
      const { token } = await client.register({ name: 'lead', contextId: 'local' });
      await named(client, token, 'sdk-streamer');
      const { task } = await client.send({ token, to: 'sdk-streamer', message: text('in the background') });
      const followed = await followTask(client, token, task.id);
      expect(followed.steps).toEqual(['working', 'artifact:answer', 'completed']);
      expect(textOf(followed.task.artifacts[0]?.parts)).toBe('echo: in the background');
      await client.close();
    } finally {
      h.cleanup();
    }
  }, 60_000);
});
