import { afterEach, describe, expect, it } from 'vitest';
import { A2A_TOOL_ACTIONS, A2AToolInputSchema } from '../../src/protocol/a2a-tool.js';
import { type A2ATool, type A2AToolResult, createA2ATool } from '../../src/transport/a2a-tool.js';
import { type SwitchboardClient, connect } from '../../src/transport/client.js';
import { delegate } from '../../src/transport/delegate.js';
import { createBroker } from '../../src/actors/broker/broker.js';
import { connectInProcess } from '../../src/transport/in-process.js';
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
    for (const action of A2A_TOOL_ACTIONS) expect(tool.description).toContain(`- ${action}`);
    // A few lines: one per action, a heading and the two flows.
    expect(tool.description.split('\n').length).toBeLessThanOrEqual(A2A_TOOL_ACTIONS.length + 4);
    expect(tool.jsonSchema.type).toBe('object');
    const properties = tool.jsonSchema.properties as Record<string, { enum?: string[] }>;
    expect(properties.action?.enum).toEqual(['discover', 'send', 'get', 'wait', 'ask', 'stream', 'complete', 'cancel']);
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
    // The worker's get marked the task working; then its result and the end.
    expect(woken.events.map((e) => [e.type, e.state])).toEqual([
      ['status', 'working'],
      ['artifact', undefined],
      ['status', 'completed'],
    ]);
    expect(woken.events[1]?.artifact).toMatchObject({ name: 'answer.json', data: [{ city: 'Paris' }] });
    expect(woken.events[2]).toMatchObject({
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

describe('the A2A tool, serving a task', () => {
  async function pair() {
    const client = await spawnClient();
    const lead = await client.register({ name: 'lead', contextId: 'session' });
    const researcher = await client.register({ name: 'researcher', contextId: 'session' });
    return {
      client,
      asker: createA2ATool({ client, token: lead.token }),
      worker: createA2ATool({ client, token: researcher.token }),
    };
  }

  it('a task the worker reads shows working; the requester reading it moves nothing', async () => {
    const { asker, worker } = await pair();
    const sent = ok(await asker.execute({ action: 'send', to: 'researcher', text: 'dig' }));
    if (sent.action !== 'send') throw new Error('unexpected');
    const taskId = sent.task.taskId;
    const mine = ok(await asker.execute({ action: 'get', taskId }));
    expect(mine.action === 'get' && mine.task.state).toBe('submitted');
    ok(await worker.execute({ action: 'wait', timeoutSeconds: 10 }));
    const read = ok(await worker.execute({ action: 'get', taskId }));
    expect(read.action === 'get' && read.task).toMatchObject({
      state: 'working',
      history: [{ from: 'lead', role: 'user', text: 'dig' }],
    });
    const woken = ok(await asker.execute({ action: 'wait', taskId, timeoutSeconds: 10 }));
    expect(woken.action === 'wait' && woken.events).toEqual([
      expect.objectContaining({ type: 'status', state: 'working', final: false }),
    ]);
    // Read again: no second move, no second event.
    ok(await worker.execute({ action: 'get', taskId }));
    const quiet = ok(await asker.execute({ action: 'wait', taskId, timeoutSeconds: 0 }));
    expect(quiet.action === 'wait' && quiet.events).toEqual([]);
  });

  it('a requester whose tool did not create the task moves nothing; a worker reply marks it working', async () => {
    const { client, worker } = await pair();
    const lead2 = await client.register({ name: 'lead2', contextId: 'session' });
    const { task } = await client.send({ token: lead2.token, to: 'researcher', message: text('one') });
    // A tool made later for the same requester (a restarted runtime) knows nothing of the task.
    const tool = createA2ATool({ client, token: lead2.token });
    const read = ok(await tool.execute({ action: 'get', taskId: task.id }));
    expect(read.action === 'get' && read.task.state).toBe('submitted');
    const again = ok(await tool.execute({ action: 'send', taskId: task.id, text: 'and two' }));
    expect(again.action === 'send' && again.task.state).toBe('submitted');
    const reply = ok(await worker.execute({ action: 'send', taskId: task.id, text: 'on it' }));
    expect(reply.action === 'send' && reply.task.state).toBe('working');
  });

  it('ask moves the task to input-required with the question; the answer wakes the worker and it works on', async () => {
    const { asker, worker } = await pair();
    const sent = ok(await asker.execute({ action: 'send', to: 'researcher', text: 'find the population' }));
    if (sent.action !== 'send') throw new Error('unexpected');
    const taskId = sent.task.taskId;
    ok(await worker.execute({ action: 'wait', timeoutSeconds: 10 }));

    const asked = ok(await worker.execute({ action: 'ask', taskId, text: 'Of which city?' }));
    expect(asked.action === 'ask' && asked.task).toMatchObject({
      state: 'input-required',
      statusMessage: { from: 'researcher', role: 'agent', text: 'Of which city?' },
    });
    const twice = await worker.execute({ action: 'ask', taskId, text: 'Of which city, again?' });
    expect(twice).toMatchObject({ ok: false, errorCode: 'A2A_INVALID_TRANSITION' });
    expect(!twice.ok && twice.message).toContain('You already asked');

    const question = ok(await asker.execute({ action: 'wait', taskId, timeoutSeconds: 10 }));
    expect(question.action === 'wait' && question.events).toEqual([
      expect.objectContaining({
        type: 'status',
        state: 'input-required',
        message: { from: 'researcher', role: 'agent', text: 'Of which city?' },
      }),
    ]);
    const notMine = await asker.execute({ action: 'ask', taskId, text: 'me?' });
    expect(notMine).toMatchObject({ ok: false, errorCode: 'A2A_INVALID_TRANSITION' });
    expect(!notMine.ok && notMine.message).toContain('Only the agent serving this task can use ask');

    const answered = ok(await asker.execute({ action: 'send', taskId, text: 'Lyon' }));
    expect(answered.action === 'send' && answered.task.state).toBe('working');
    const answer = ok(await worker.execute({ action: 'wait', taskId, timeoutSeconds: 10 }));
    expect(answer.action === 'wait' && answer.events).toEqual([
      expect.objectContaining({
        type: 'status',
        state: 'working',
        message: { from: 'lead', role: 'user', text: 'Lyon' },
      }),
    ]);
    const done = ok(await worker.execute({ action: 'complete', taskId, text: 'About 520,000.' }));
    expect(done.action === 'complete' && done.task.state).toBe('completed');
  });

  it('wait shows the requester that the agent serving its task left (its connection closed) and is back', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const broker = createBroker({ path: tmp.db });
    cleanups.push(() => broker.close());
    const { client } = await connectInProcess(broker);
    cleanups.push(() => client.close());
    const { token } = await client.register({ name: 'lead', contextId: 'session' });
    const researcher = await client.register({ name: 'researcher', contextId: 'session' });
    const asker = createA2ATool({ client, token });
    const sent = ok(await asker.execute({ action: 'send', to: 'researcher', text: 'population of Lyon?' }));
    if (sent.action !== 'send') throw new Error('unexpected');
    // What a socket or stdio session does when the researcher's connection closes, however it closes.
    expect(await broker.endRegistrations([researcher.token])).toBe(1);
    const left = ok(await asker.execute({ action: 'wait', taskId: sent.task.taskId, timeoutSeconds: 10 }));
    expect(left.action === 'wait' && left.events).toEqual([
      { seq: expect.any(Number), taskId: sent.task.taskId, type: 'agent', agent: 'researcher', presence: 'left' },
    ]);
    await client.register({ name: 'researcher', contextId: 'session' });
    const back = ok(await asker.execute({ action: 'wait', taskId: sent.task.taskId, timeoutSeconds: 10 }));
    expect(back.action === 'wait' && back.events).toEqual([
      { seq: expect.any(Number), taskId: sent.task.taskId, type: 'agent', agent: 'researcher', presence: 'back' },
    ]);
  });

  it('stream sends chunks the requester waits for as they come; complete ends the same artifact', async () => {
    const { asker, worker } = await pair();
    const sent = ok(await asker.execute({ action: 'send', to: 'researcher', text: 'write the report' }));
    if (sent.action !== 'send') throw new Error('unexpected');
    const taskId = sent.task.taskId;
    ok(await worker.execute({ action: 'wait', timeoutSeconds: 10 }));

    const first = ok(
      await worker.execute({ action: 'stream', taskId, artifact: { name: 'report.md', text: '# Part 1' } }),
    );
    expect(first.action === 'stream' && first.task.state).toBe('working');
    const early = ok(await asker.execute({ action: 'wait', taskId, timeoutSeconds: 10 }));
    expect(early.action === 'wait' && early.events).toEqual([
      expect.objectContaining({ type: 'status', state: 'working' }),
      expect.objectContaining({
        type: 'artifact',
        artifact: { artifactId: 'report.md', name: 'report.md', text: '# Part 1' },
        append: true,
        lastChunk: false,
      }),
    ]);
    ok(await worker.execute({ action: 'stream', taskId, artifact: { name: 'report.md', text: '# Part 2' } }));
    const second = ok(await asker.execute({ action: 'wait', taskId, timeoutSeconds: 10 }));
    expect(second.action === 'wait' && second.events).toEqual([
      expect.objectContaining({
        type: 'artifact',
        artifact: expect.objectContaining({ text: '# Part 2' }),
        lastChunk: false,
      }),
    ]);
    ok(
      await worker.execute({
        action: 'complete',
        taskId,
        text: 'Done.',
        artifact: { name: 'report.md', text: '# End' },
      }),
    );
    const end = ok(await asker.execute({ action: 'wait', taskId, timeoutSeconds: 10 }));
    expect(end.action === 'wait' && end.events).toEqual([
      expect.objectContaining({
        type: 'artifact',
        artifact: expect.objectContaining({ text: '# End' }),
        lastChunk: true,
      }),
      expect.objectContaining({ type: 'status', state: 'completed', final: true }),
    ]);
    const read = ok(await asker.execute({ action: 'get', taskId }));
    expect(read.action === 'get' && read.task.artifacts).toEqual([
      { artifactId: 'report.md', name: 'report.md', text: '# Part 1\n# Part 2\n# End' },
    ]);
    const bad = await worker.execute({ action: 'stream', taskId });
    expect(bad).toMatchObject({ ok: false, errorCode: 'INVALID_INPUT' });
  });

  it('reads null as absent, as strict-mode models send it', async () => {
    const { asker } = await pair();
    const sent = ok(
      await asker.execute({
        action: 'send',
        to: 'researcher',
        taskId: null,
        text: 'hi',
        data: null,
        outcome: null,
        artifact: null,
        timeoutSeconds: null,
        historyLength: null,
      }),
    );
    expect(sent.action === 'send' && sent.task.state).toBe('submitted');
  });

  it('an ambiguous `to` lists the candidates and says to send to one agentId', async () => {
    const client = await spawnClient();
    const lead = await client.register({ name: 'lead', contextId: 'home' });
    const a = await client.register({ name: 'critic', contextId: 'team-a' });
    const b = await client.register({ name: 'critic', contextId: 'team-b' });
    const asker = createA2ATool({ client, token: lead.token });
    const result = await asker.execute({ action: 'send', to: 'critic', text: 'review this' });
    expect(result).toEqual({
      ok: false,
      errorCode: 'A2A_UNKNOWN_AGENT',
      message: expect.stringMatching(/^Several agents are named "critic" .*agentId of the one you mean[.]$/),
      candidates: [
        { name: 'critic', contextId: 'team-a', agentId: a.agentId },
        { name: 'critic', contextId: 'team-b', agentId: b.agentId },
      ],
    });
    const chosen = ok(await asker.execute({ action: 'send', to: b.agentId, text: 'review this' }));
    expect(chosen.action === 'send' && chosen.task.worker).toBe('critic');
  });

  it('a wait lasts at most maxWaitSeconds and says so', async () => {
    const client = await spawnClient();
    const lead = await client.register({ name: 'lead', contextId: 'c' });
    const tool = createA2ATool({ client, token: lead.token, maxWaitSeconds: 0.2 });
    expect(() => createA2ATool({ client, token: lead.token, maxWaitSeconds: -1 })).toThrow(/maxWaitSeconds/);
    const result = ok(await tool.execute({ action: 'wait', timeoutSeconds: 120 }));
    expect(result.action === 'wait' && result).toMatchObject({
      events: [],
      note: expect.stringContaining('the longest one wait lasts here'),
    });
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
