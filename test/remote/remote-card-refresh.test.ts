import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listRemoteAgents } from '../../src/remote/remote-agents.js';
import { type SwitchboardClient, connect } from '../../src/transport/client.js';
import { SocketServe, hostDir } from '../host/helpers.js';
import { type SdkAgent, agentNames, agentsCli, startBridge, startSdkAgent, until } from './remote-helpers.js';

// A remote's card is read again each time its bridge starts: a card that changed since the remote
// was added counts from then on and is kept; a remote that cannot be read keeps the card it had.

describe('a remote agent’s card, read again when its bridge starts', () => {
  const h = hostDir();
  let serve: SocketServe;
  let remote: SdkAgent | undefined;
  let client: SwitchboardClient;
  let token: string;

  beforeAll(async () => {
    serve = new SocketServe(h.db, ['--listen', `unix:${h.socket}`, '--no-remote-agents']);
    await serve.listening(h.socket);
    client = await connect({ socket: h.socket });
    token = (await client.register({ name: 'lead', contextId: 'local' })).token;
  }, 60_000);

  afterAll(async () => {
    await client?.close().catch(() => {});
    await remote?.stop();
    await serve?.stop();
    h.cleanup();
  }, 30_000);

  const description = async () =>
    (await client.listAgents({ token })).agents.find((a) => a.name === 'changing')?.description;

  it('takes the card the remote has now, keeps it, and keeps the last one while the remote is down', async () => {
    remote = await startSdkAgent('poll');
    const port = remote.port;
    expect(agentsCli(['add-remote', remote.url, '--db', h.db, '--name', 'changing']).status).toBe(0);
    expect(listRemoteAgents(h.db)[0]?.card.capabilities.streaming).not.toBe(true);
    // The remote comes back on the same address with another card: it streams now.
    await remote.stop();
    remote = await startSdkAgent('stream', port);
    let bridge = await startBridge(h.db);
    await until(async () =>
      (await description()) === 'an agent of the official A2A SDK (streams)' ? true : undefined,
    );
    expect(listRemoteAgents(h.db)[0]?.card.capabilities.streaming).toBe(true);
    expect(bridge.stderr()).toContain('its card changed');
    await bridge.stop();
    // Down at the next start: the card kept last is used, and the agent is still there to send to.
    await remote.stop();
    remote = undefined;
    bridge = await startBridge(h.db);
    await until(async () => ((await agentNames(client, token)).includes('changing') ? true : undefined));
    expect(await description()).toBe('an agent of the official A2A SDK (streams)');
    expect(bridge.stderr()).toContain('cannot read its card again');
    expect(listRemoteAgents(h.db)[0]?.card.capabilities.streaming).toBe(true);
    await bridge.stop();
  }, 60_000);
});
