import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { GetTaskRequest, TaskState } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SwitchboardClient, connect } from '../../src/transport/client.js';
import { SocketServe, hostDir, text } from '../host/helpers.js';
import {
  BIN,
  type BridgeProcess,
  type SdkAgent,
  agentNames,
  agentsCli,
  followTask,
  startBridge,
  startSdkAgent,
  textOf,
  until,
} from './remote-helpers.js';

describe('remote agents served by the official A2A SDK, bridged into a broker', () => {
  const h = hostDir();
  let serve: SocketServe;
  let streamer: SdkAgent;
  let poller: SdkAgent;
  let bridge: BridgeProcess;
  let client: SwitchboardClient;
  let token: string;

  beforeAll(async () => {
    serve = new SocketServe(h.db, ['--listen', `unix:${h.socket}`, '--no-remote-agents']);
    await serve.listening(h.socket);
    [streamer, poller] = await Promise.all([startSdkAgent('stream'), startSdkAgent('poll')]);
    client = await connect({ socket: h.socket });
    token = (await client.register({ name: 'lead', contextId: 'local' })).token;
  }, 60_000);

  afterAll(async () => {
    await bridge?.stop();
    await client?.close().catch(() => {});
    await streamer?.stop();
    await poller?.stop();
    await serve?.stop();
    h.cleanup();
  }, 30_000);

  it('add-remote reads the card and records the remote; remotes lists it without its key', () => {
    const added = agentsCli(['add-remote', streamer.url, '--db', h.db, '--token', 'sekrit-key']);
    expect(added.stderr).toBe('');
    expect(added.status).toBe(0);
    expect(added.stdout).toContain('added the remote agent "sdk-streamer" (streaming)');
    const polled = agentsCli(['add-remote', poller.url, '--db', h.db, '--name', 'poller']);
    expect(polled.status).toBe(0);
    expect(polled.stdout).toContain('"poller" (polled)');
    const again = agentsCli(['add-remote', poller.url, '--db', h.db, '--name', 'poller']);
    expect(again.status).toBe(1);
    expect(again.stderr).toMatch(/already named "poller"/);
    const listed = agentsCli(['remotes', '--db', h.db, '--json']);
    expect(JSON.parse(listed.stdout)).toEqual({
      remotes: [
        { name: 'sdk-streamer', url: streamer.url, streaming: true, addedAt: expect.any(Number) },
        { name: 'poller', url: poller.url, streaming: false, addedAt: expect.any(Number) },
      ],
    });
    expect(listed.stdout).not.toContain('sekrit');
    expect(agentsCli(['remotes', '--db', h.db]).stdout).toMatch(/sdk-streamer .*stream .*bearer/);
  });

  it('a local agent discovers the remote with its card and gets working, the artifact and completed (streaming)', async () => {
    bridge = await startBridge(h.db, ['--poll', '0.1', '--reconnect', '3']);
    await until(async () => ((await agentNames(client, token)).includes('sdk-streamer') ? true : undefined));
    const card = (await client.listAgents({ token })).agents.find((a) => a.name === 'sdk-streamer');
    expect(card).toMatchObject({
      contextId: 'remote',
      description: 'an agent of the official A2A SDK (streams)',
      skills: [{ id: 'echo', name: 'echo', description: 'echoes what it is sent', tags: ['test'] }],
    });
    const { task } = await client.send({ token, to: 'sdk-streamer', message: text('hello') });
    const followed = await followTask(client, token, task.id);
    expect(followed.steps).toEqual(['working', 'artifact:answer', 'completed']);
    expect(textOf(followed.task.artifacts[0]?.parts)).toBe('echo: hello');
    expect(followed.task.status.state).toBe('completed');
    expect(textOf(followed.task.status.message?.parts)).toBe('done');
    // Durable: the broker's event log holds them, as `tasks` shows.
    const { events } = await client.eventsSince({ token, after: 0 });
    const mine = events.filter((e) => e.method === 'a2a.task.event' && e.params.event.taskId === task.id);
    expect(mine).toHaveLength(3);
    // `switchboard tasks show` reads the same task from the broker's file.
    const shown = spawnSync(process.execPath, [BIN, 'tasks', 'show', task.id, '--db', h.db, '--json'], {
      encoding: 'utf8',
    });
    expect(shown.status, shown.stderr).toBe(0);
    const json = JSON.parse(shown.stdout) as {
      task: { status: { state: string }; agentName: string; artifacts: unknown[] };
    };
    expect(json.task).toMatchObject({ agentName: 'sdk-streamer', status: { state: 'completed' } });
    expect(JSON.stringify(json.task.artifacts)).toContain('echo: hello');
  }, 60_000);

  it('a remote whose card says it does not stream is polled', async () => {
    await until(async () => ((await agentNames(client, token)).includes('poller') ? true : undefined));
    const { task } = await client.send({ token, to: 'poller', message: text('polled') });
    const followed = await followTask(client, token, task.id);
    expect(followed.steps.filter((s) => s !== 'working')).toEqual(['artifact:answer', 'completed']);
    expect(textOf(followed.task.artifacts[0]?.parts)).toBe('echo: polled');
    expect(existsSync(`${h.db}.remote-tasks.db`)).toBe(true);
  }, 60_000);

  it('input-required: the question reaches the local sender, whose answer goes to the remote task', async () => {
    const { task } = await client.send({ token, to: 'sdk-streamer', message: text('ask') });
    const asked = await followTask(client, token, task.id, ['input-required']).catch((e) => {
      console.log(bridge.stderr());
      throw e;
    });
    expect(asked.steps).toEqual(['input-required']);
    expect(textOf(asked.task.status.message?.parts)).toBe('which colour?');
    await client.send({ token, taskId: task.id, message: text('blue') });
    const answered = await followTask(client, token, task.id).catch((e) => {
      console.log(bridge.stderr());
      throw e;
    });
    expect(answered.steps).toEqual(['artifact:answer', 'completed']);
    expect(textOf(answered.task.artifacts[0]?.parts)).toBe('colour: blue');
  }, 60_000);

  it('input-required over polling: the answer goes to the remote task, the stale question is not written again', async () => {
    const { task } = await client.send({ token, to: 'poller', message: text('ask') });
    const asked = await followTask(client, token, task.id, ['input-required']);
    expect(asked.steps.filter((s) => s !== 'working')).toEqual(['input-required']);
    await client.send({ token, taskId: task.id, message: text('green') });
    const answered = await followTask(client, token, task.id).catch((e) => {
      console.log(bridge.stderr());
      throw e;
    });
    expect(answered.steps).toEqual(['artifact:answer', 'completed']);
    expect(textOf(answered.task.artifacts[0]?.parts)).toBe('colour: green');
  }, 60_000);

  it('a cancel of the local task cancels the remote one', async () => {
    const { task } = await client.send({ token, to: 'sdk-streamer', message: text('wait') });
    await followTask(client, token, task.id, ['working']);
    await client.cancel({ token, id: task.id });
    const remoteId = await until(() => remoteTaskIdOf(h.db, task.id));
    const sdk = await new ClientFactory().createFromUrl(streamer.url);
    const remote = await until(async () => {
      const t = await sdk.getTask(GetTaskRequest.fromJSON({ id: remoteId }));
      return t.status?.state === TaskState.TASK_STATE_CANCELED ? t : undefined;
    });
    expect(remote.id).toBe(remoteId);
    expect((await client.getTask({ token, id: task.id })).task.status.state).toBe('canceled');
  }, 60_000);

  it('a remote that is down: add-remote says so and exits 1; a task sent to it fails naming the URL', async () => {
    const doomed = await startSdkAgent('stream');
    const url = doomed.url;
    expect(agentsCli(['add-remote', url, '--db', h.db, '--name', 'doomed']).status).toBe(0);
    await until(async () => ((await agentNames(client, token)).includes('doomed') ? true : undefined));
    await doomed.stop();
    const refused = agentsCli(['add-remote', url, '--db', h.db, '--name', 'other']);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(`the remote agent at ${url} is unreachable: connection refused (ECONNREFUSED)`);
    expect(refused.stderr).toMatch(/check that it runs/);
    const { task } = await client.send({ token, to: 'doomed', message: text('hello') });
    const failed = await followTask(client, token, task.id, ['failed'], 20_000);
    expect(failed.steps).toEqual(['failed']);
    expect(textOf(failed.task.status.message?.parts)).toMatch(
      new RegExp(`^the remote agent at ${url.replace(/[.]/g, '[.]')} is unreachable: connection refused`),
    );
  }, 60_000);

  it('a remote killed mid-task and not restarted: the task fails naming the URL once the reconnect window passes', async () => {
    const doomed = await startSdkAgent('stream');
    expect(agentsCli(['add-remote', doomed.url, '--db', h.db, '--name', 'doomed-later']).status).toBe(0);
    await until(async () => ((await agentNames(client, token)).includes('doomed-later') ? true : undefined));
    const { task } = await client.send({ token, to: 'doomed-later', message: text('wait') });
    await followTask(client, token, task.id, ['working']);
    await doomed.stop();
    const failed = await followTask(client, token, task.id, ['failed'], 30_000);
    expect(failed.steps).toEqual(['failed']);
    expect(textOf(failed.task.status.message?.parts)).toMatch(
      /^the remote agent at http:.* is unreachable: .*tried again for 3 s/,
    );
  }, 60_000);
});

/** The remote task id the bridge recorded for a local task (read from its task store). */
function remoteTaskIdOf(db: string, localTaskId: string): string | undefined {
  const store = new Database(`${db}.remote-tasks.db`, { readonly: true });
  try {
    const row = store.prepare('SELECT remote_task_id FROM remote_tasks WHERE local_task_id = ?').get(localTaskId) as
      | { remote_task_id: string | null }
      | undefined;
    return row?.remote_task_id ?? undefined;
  } finally {
    store.close();
  }
}
