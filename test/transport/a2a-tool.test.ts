import { afterEach, describe, expect, it } from 'vitest';
import { A2AToolInputSchema } from '../../src/protocol/a2a-tool.js';
import { type A2ATool, type A2AToolResult, createA2ATool } from '../../src/transport/a2a-tool.js';
import { type SwitchboardClient, connect } from '../../src/transport/client.js';
import { delegate } from '../../src/transport/delegate.js';
import { tempDir, text } from './helpers.js';

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function spawnClient(): Promise<SwitchboardClient> {
  const tmp = tempDir();
  cleanups.push(tmp.cleanup);
  const client = await connect({ spawn: { db: tmp.db, stderr: 'pipe' } });
  cleanups.push(() => client.close());
  return client;
}

function ok<T extends A2AToolResult>(result: T): Extract<T, { ok: true }> {
  if (!result.ok) throw new Error(`tool failed: ${result.errorCode}: ${result.message}`);
  return result as Extract<T, { ok: true }>;
}

describe('the A2A tool', () => {
  it('has the name, a description naming every action, and a JSON Schema without a token', async () => {
    const client = await spawnClient();
    const { token } = await client.register({ name: 'a', contextId: 'c' });
    const tool = createA2ATool({ client, token });
    expect(tool.name).toBe('A2A');
    for (const action of ['discover', 'send', 'get', 'wait', 'complete', 'cancel']) {
      expect(tool.description).toContain(`${action}`);
    }
    expect(tool.jsonSchema.type).toBe('object');
    const properties = tool.jsonSchema.properties as Record<string, { enum?: string[] }>;
    expect(properties.action?.enum).toEqual(['discover', 'send', 'get', 'wait', 'complete', 'cancel']);
    expect(Object.keys(properties)).not.toContain('token');
    expect(JSON.stringify(tool.jsonSchema)).not.toContain(token);
    expect(tool.inputSchema).toBe(A2AToolInputSchema);
  });

  it('runs a whole delegation: discover, send, wait, get, complete, and the requester is woken', async () => {
    const client = await spawnClient();
    const parent = await client.register({ name: 'planner', contextId: 'session' });
    const child = await client.register({
      name: 'researcher',
      contextId: 'session',
      description: 'finds facts',
      skills: [{ id: 'search', name: 'Search' }],
    });
    const asker = createA2ATool({ client, token: parent.token });
    const worker = createA2ATool({ client, token: child.token });

    const found = ok(await asker.execute({ action: 'discover' }));
    expect(found.action === 'discover' && found.agents).toEqual([
      {
        name: 'researcher',
        agentId: child.agentId,
        contextId: 'session',
        kind: 'subagent',
        description: 'finds facts',
        skills: [{ id: 'search', name: 'Search' }],
      },
    ]);
    const sent = ok(await asker.execute({ action: 'send', to: 'researcher', text: 'capital of France?' }));
    if (sent.action !== 'send') throw new Error('unexpected');
    expect(sent.task).toMatchObject({ state: 'submitted', worker: 'researcher', requester: 'planner' });
    const taskId = sent.task.taskId;

    const incoming = ok(await worker.execute({ action: 'wait', timeoutSeconds: 10 }));
    expect(incoming.action === 'wait' && incoming.events).toEqual([
      {
        seq: 1,
        taskId,
        type: 'status',
        state: 'submitted',
        final: false,
        message: { from: 'planner', role: 'user', text: 'capital of France?' },
      },
    ]);
    const read = ok(await worker.execute({ action: 'get', taskId }));
    expect(read.action === 'get' && read.task.history).toEqual([
      { from: 'planner', role: 'user', text: 'capital of France?' },
    ]);
    const done = ok(
      await worker.execute({
        action: 'complete',
        taskId,
        text: 'Paris',
        artifact: { name: 'answer.json', data: { city: 'Paris' } },
      }),
    );
    expect(done.action === 'complete' && done.task.state).toBe('completed');

    const woken = ok(await asker.execute({ action: 'wait', taskId, timeoutSeconds: 10 }));
    if (woken.action !== 'wait') throw new Error('unexpected');
    expect(woken.events.map((e) => e.type)).toEqual(['artifact', 'status']);
    expect(woken.events[0]?.artifact).toMatchObject({ name: 'answer.json', data: [{ city: 'Paris' }] });
    expect(woken.events[1]).toMatchObject({
      state: 'completed',
      final: true,
      message: { from: 'researcher', text: 'Paris' },
    });

    const empty = ok(await asker.execute({ action: 'wait', timeoutSeconds: 0.1 }));
    expect(empty.action === 'wait' && empty.note).toContain('wait again');
  });

  it('cancels a task, and lets the worker fail one', async () => {
    const client = await spawnClient();
    const r = await client.register({ name: 'r', contextId: 'c' });
    const w = await client.register({ name: 'w', contextId: 'c' });
    const asker = createA2ATool({ client, token: r.token });
    const worker = createA2ATool({ client, token: w.token });
    const first = ok(await asker.execute({ action: 'send', to: 'w', text: 'one' }));
    const second = ok(await asker.execute({ action: 'send', to: 'w', text: 'two', data: { n: 2 } }));
    if (first.action !== 'send' || second.action !== 'send') throw new Error('unexpected');
    const canceled = ok(await asker.execute({ action: 'cancel', taskId: first.task.taskId }));
    expect(canceled.action === 'cancel' && canceled.task.state).toBe('canceled');
    const failed = ok(
      await worker.execute({ action: 'complete', taskId: second.task.taskId, outcome: 'failed', text: 'no data' }),
    );
    expect(failed.action === 'complete' && failed.task).toMatchObject({
      state: 'failed',
      statusMessage: { from: 'w', role: 'agent', text: 'no data' },
    });
    const woken = ok(await asker.execute({ action: 'wait', taskId: second.task.taskId, timeoutSeconds: 10 }));
    expect(woken.action === 'wait' && woken.events.map((e) => e.state)).toEqual(['failed']);
    const read = ok(await worker.execute({ action: 'get', taskId: second.task.taskId, historyLength: 1 }));
    expect(read.action === 'get' && read.task.history).toEqual([{ from: 'w', role: 'agent', text: 'no data' }]);
  });

  it('returns errors as results with a code and one sentence, never throwing and never showing the token', async () => {
    const client = await spawnClient();
    const r = await client.register({ name: 'r', contextId: 'c' });
    const w = await client.register({ name: 'w', contextId: 'c' });
    const asker = createA2ATool({ client, token: r.token });
    const worker = createA2ATool({ client, token: w.token });
    const lonely = await client.register({ name: 'alone', contextId: 'elsewhere', kind: 'parent' });
    const lonelyTool = createA2ATool({ client, token: lonely.token });

    const cases: [A2ATool, unknown, string][] = [
      [asker, { action: 'fly' }, 'INVALID_INPUT'],
      [asker, { action: 'send', text: 'no target' }, 'INVALID_INPUT'],
      [asker, { action: 'get' }, 'INVALID_INPUT'],
      [asker, { action: 'wait', timeoutSeconds: 500 }, 'INVALID_INPUT'],
      [asker, { action: 'send', to: 'nobody', text: 'hi' }, 'A2A_UNKNOWN_AGENT'],
      [asker, { action: 'get', taskId: 'missing' }, 'A2A_UNKNOWN_TASK'],
      [asker, { action: 'send', to: 'w', text: 'x'.repeat(16_001) }, 'A2A_PAYLOAD_TOO_LARGE'],
      [lonelyTool, { action: 'discover' }, 'A2A_NO_PEERS'],
    ];
    for (const [tool, input, code] of cases) {
      const result = await tool.execute(input);
      expect(result.ok).toBe(false);
      if (result.ok) continue;
      expect(result.errorCode, JSON.stringify(input)).toBe(code);
      expect(result.message).toMatch(/^[A-Z].*[.]$/);
      expect(result.message.split(/[.!?](\s|$)/).filter((s) => s.trim().length > 1)).toHaveLength(1);
      expect(JSON.stringify(result)).not.toContain(r.token);
    }

    const sent = ok(await asker.execute({ action: 'send', to: 'w', text: 'job' }));
    if (sent.action !== 'send') throw new Error('unexpected');
    const taskId = sent.task.taskId;
    const notMine = await asker.execute({ action: 'complete', taskId });
    expect(notMine).toMatchObject({ ok: false, errorCode: 'A2A_INVALID_TRANSITION' });
    expect(!notMine.ok && notMine.message).toContain('Only the agent serving this task');
    ok(await worker.execute({ action: 'complete', taskId, outcome: 'rejected', text: 'not my job' }));
    const ended = await worker.execute({ action: 'complete', taskId });
    expect(ended).toMatchObject({ ok: false, errorCode: 'A2A_TASK_TERMINAL' });
    const stranger = await lonelyTool.execute({ action: 'get', taskId });
    expect(stranger).toMatchObject({ ok: false, errorCode: 'A2A_CROSS_CONTEXT_DENIED' });

    await client.deregister({ token: r.token });
    const gone = await asker.execute({ action: 'discover' });
    expect(gone).toMatchObject({ ok: false, errorCode: 'A2A_UNKNOWN_TOKEN' });
    expect(JSON.stringify(gone)).not.toContain(r.token);
  });
});

describe('delegate()', () => {
  async function setup() {
    const client = await spawnClient();
    const parent = await client.register({ name: 'parent-run', contextId: 'session' });
    return { client, parent };
  }

  it('registers the delegate, hands it the tool, and deregisters it when the run resolves', async () => {
    const { client, parent } = await setup();
    let seenToken: string | undefined;
    const answer = await delegate({
      client,
      agent: { name: 'helper', contextId: 'session' },
      async run({ tool, agentId }) {
        expect(agentId).toBeTypeOf('string');
        const { task } = await client.send({ token: parent.token, to: 'helper', message: text('ping') });
        const events = await tool.execute({ action: 'wait', timeoutSeconds: 10 });
        seenToken = JSON.stringify(events);
        ok(await tool.execute({ action: 'complete', taskId: task.id, text: 'pong' }));
        return task.id;
      },
    });
    const { task } = await client.getTask({ token: parent.token, id: answer });
    expect(task.status.state).toBe('completed');
    expect(seenToken).not.toContain('token');
    // The delegate is gone: its name is free and nobody is addressable.
    const list = await client.listAgents({ token: parent.token }).catch((e: { code?: string }) => e.code);
    expect(list).toBe('A2A_NO_PEERS');
  });

  it('deregisters the delegate when the run throws (its open task fails) and rethrows', async () => {
    const { client, parent } = await setup();
    let taskId = '';
    const error = await delegate({
      client,
      agent: { name: 'helper', contextId: 'session' },
      async run({ tool }) {
        const { task } = await client.send({ token: parent.token, to: 'helper', message: text('ping') });
        taskId = task.id;
        await tool.execute({ action: 'wait', timeoutSeconds: 10 });
        throw new Error('model crashed');
      },
    }).catch((e: unknown) => e);
    expect((error as Error).message).toBe('model crashed');
    const { task } = await client.getTask({ token: parent.token, id: taskId });
    expect(task.status.state).toBe('failed');
  });

  it('settles at once on abort, deregisters the delegate and aborts the run', async () => {
    const { client, parent } = await setup();
    const controller = new AbortController();
    let runSignal: AbortSignal | undefined;
    let tool: A2ATool | undefined;
    const settled = delegate({
      client,
      agent: { name: 'helper', contextId: 'session' },
      signal: controller.signal,
      run: (delegation) => {
        runSignal = delegation.signal;
        tool = delegation.tool;
        return new Promise<never>(() => {});
      },
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await client.listAgents({ token: parent.token })).agents.map((a) => a.name)).toEqual(['helper']);
    controller.abort(new Error('user stopped it'));
    const error = await settled.catch((e: unknown) => e);
    expect((error as Error).message).toBe('user stopped it');
    expect(runSignal?.aborted).toBe(true);
    const after = await tool?.execute({ action: 'discover' });
    expect(after).toMatchObject({ ok: false, errorCode: 'A2A_UNKNOWN_TOKEN' });
  });
});
