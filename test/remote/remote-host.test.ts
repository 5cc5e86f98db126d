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

  it('switchboard serve --idle-exit stays up while a remote task is carried, and stops once it ended', async () => {
    const h = hostDir();
    expect(agentsCli(['add-remote', remote.url, '--db', h.db, '--name', 'far']).status).toBe(0);
    const serve = new SocketServe(h.db, ['--listen', `unix:${h.socket}`, '--idle-exit', '1']);
    let reader: SocketServe | undefined;
    try {
      await serve.listening(h.socket);
      const client = await connect({ socket: h.socket });
      const { token } = await client.register({ name: 'lead', contextId: 'local' });
      await named(client, token, 'far');
      // The remote works for 4 s; the requester leaves as soon as the task is being carried.
      const { task } = await client.send({ token, to: 'far', message: text('slow 4000') });
      await followTask(client, token, task.id, ['working']);
      const left = Date.now();
      await client.close();
      const exit = await Promise.race([
        serve.exited,
        new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 30_000)),
      ]);
      expect(exit).toEqual({ code: 0, signal: null });
      // It stopped after the remote task ended (about 4 s), not after its idle period (1 s).
      expect(Date.now() - left).toBeGreaterThan(2_000);
      reader = new SocketServe(h.db, ['--listen', `unix:${h.socket}`, '--no-remote-agents']);
      await reader.listening(h.socket);
      const again = await connect({ socket: h.socket });
      const { token: back } = await again.register({ name: 'lead', contextId: 'local' });
      const { task: ended } = await again.getTask({ token: back, id: task.id });
      expect(ended.status.state).toBe('completed');
      expect(textOf(ended.artifacts[0]?.parts)).toBe('echo: slow 4000');
      await again.close();
    } finally {
      await serve.stop();
      await reader?.stop();
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
