import { afterEach, describe, expect, it } from 'vitest';
import { A2A_MAX_FILE_BYTES, A2A_MAX_TEXT_CHARS, MAX_LINE_BYTES } from '../../src/protocol/bounds.js';
import { LeanServe, type LineSummary, tempDir, text } from './helpers.js';

// Answers whose sum passed V8's longest string (2^29 - 24 characters) used to
// be joined into one write and kill `serve` with RangeError: these are the
// reproductions, on the real process, at full size (every payload is in bounds).

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

/** RSS the process may reach while answering (its baseline is about 100 MB): a few large answers at a time, not all. */
const RSS_CEILING = 1024 * 1024 * 1024;
const TIMEOUT = 600_000;

function start(): LeanServe {
  const tmp = tempDir();
  cleanups.push(tmp.cleanup);
  const server = new LeanServe(tmp.db);
  cleanups.push(async () => {
    if (server.child.exitCode === null && server.child.signalCode === null) await server.kill();
  });
  return server;
}

/** A file part of exactly `A2A_MAX_FILE_BYTES` decoded bytes (27,962,028 characters of base64). */
function maxFilePart() {
  const bytes = Buffer.alloc(A2A_MAX_FILE_BYTES, 0x61);
  return { kind: 'file' as const, file: { name: 'big.bin', bytes: bytes.toString('base64') } };
}

async function pair(server: LeanServe, contextId: string) {
  const worker = (await server.call('a2a.agents.register', { name: 'w', contextId })) as { token: string };
  const requester = (await server.call('a2a.agents.register', { name: 'r', contextId })) as { token: string };
  return { worker, requester };
}

/** The process is alive, answers a call and writes its answers as lines of at most 32 MiB. */
async function expectAlive(server: LeanServe) {
  const answer = await server.request('app.handshake', { protocolVersion: 10 });
  expect(answer.error).toBeUndefined();
  expect(server.child.exitCode).toBeNull();
  for (const summary of server.summaries) expect(summary.bytes).toBeLessThanOrEqual(MAX_LINE_BYTES);
  expect(server.stderr).not.toContain('RangeError');
}

/**
 * The entries of a batch after the last that fit: the first that did not fit
 * is `tooLarge`; the rest of the batch, spent, is `-32000` naming the same
 * bound (not run, or run and not serialized).
 */
function notFitted(entries: readonly LineSummary[]) {
  tooLarge(entries[0]);
  for (const entry of entries.slice(1)) {
    expect(entry.error?.code).toBe(-32000);
    expect(entry.error?.data).toMatchObject({ limit: 'MAX_LINE_BYTES', max: MAX_LINE_BYTES });
    expect(entry.error?.message).toContain('historyLength');
  }
}

function tooLarge(summary: LineSummary | undefined) {
  expect(summary?.error?.code).toBe(-32603);
  expect(summary?.error?.data).toMatchObject({ limit: 'MAX_LINE_BYTES', max: MAX_LINE_BYTES });
  expect(summary?.error?.message).toContain('historyLength');
}

describe('serve under large answers', () => {
  it('(a) answers 25 tasks.get of a task with a 20 MiB file, written at once, with RSS bounded', {
    timeout: TIMEOUT,
  }, async () => {
    const server = start();
    const { requester } = await pair(server, 'a');
    const created = await server.request('a2a.message.send', {
      token: requester.token,
      to: 'w',
      message: { parts: [maxFilePart()] },
    });
    expect(created.error).toBeUndefined();
    expect(created.bytes).toBeGreaterThan(27_000_000);
    const id = created.taskId as string;
    let lines = '';
    for (let i = 0; i < 25; i++) lines += server.requestLine('a2a.tasks.get', { token: requester.token, id }, 1000 + i);
    server.write(lines);
    await server.waitForCount((s) => typeof s.id === 'number' && s.id >= 1000, 25, TIMEOUT);
    const answers = server.summaries.filter((s) => typeof s.id === 'number' && s.id >= 1000);
    expect(answers).toHaveLength(25);
    for (const answer of answers) {
      expect(answer.error).toBeUndefined();
      expect(answer.history).toBe(1);
      expect(answer.bytes).toBeGreaterThan(27_000_000);
    }
    await expectAlive(server);
    expect(server.maxRss).toBeLessThan(RSS_CEILING);

    // (c) The same 25 calls as one batch: one array line of at most 32 MiB; the entries that do not fit say so.
    const batch = Array.from({ length: 25 }, (_, i) => ({
      jsonrpc: '2.0',
      id: 2000 + i,
      method: 'a2a.tasks.get',
      params: { token: requester.token, id },
    }));
    server.write(`${JSON.stringify(batch)}\n`);
    const array = await server.waitFor((s) => s.entries?.[0]?.id === 2000, TIMEOUT);
    expect(array.entries?.map((e) => e.id)).toEqual(batch.map((b) => b.id));
    expect(array.entries?.[0]?.history).toBe(1);
    notFitted(array.entries?.slice(1) ?? []);
    // historyLength keeps a batch's answers small.
    const small = batch.map((b) => ({ ...b, id: b.id + 1000, params: { ...b.params, historyLength: 0 } }));
    server.write(`${JSON.stringify(small)}\n`);
    const smallArray = await server.waitFor((s) => s.entries?.[0]?.id === 3000, TIMEOUT);
    expect(smallArray.entries?.every((e) => e.error === undefined && e.history === 0)).toBe(true);
    await expectAlive(server);
    expect(server.maxRss).toBeLessThan(RSS_CEILING);
  });

  it('(b) answers 170 tasks.get of a task of 200 messages of 16,000 characters, written at once, and as a batch', {
    timeout: TIMEOUT,
  }, async () => {
    const server = start();
    const { requester } = await pair(server, 'b');
    const long = (i: number) => text(`${i}`.padEnd(A2A_MAX_TEXT_CHARS, 'x'));
    const created = await server.request('a2a.message.send', { token: requester.token, to: 'w', message: long(0) });
    const id = created.taskId as string;
    let lines = '';
    for (let i = 1; i < 200; i++) {
      lines += server.requestLine(
        'a2a.message.send',
        { token: requester.token, taskId: id, message: long(i) },
        1000 + i,
      );
    }
    server.write(lines);
    await server.waitForCount((s) => typeof s.id === 'number' && s.id > 1000 && s.id < 1200, 199, TIMEOUT);
    expect(server.summaries.filter((s) => typeof s.id === 'number' && s.id > 1000 && s.id < 1200 && s.error)).toEqual(
      [],
    );
    lines = '';
    for (let i = 0; i < 170; i++)
      lines += server.requestLine('a2a.tasks.get', { token: requester.token, id }, 2000 + i);
    server.write(lines);
    await server.waitForCount((s) => typeof s.id === 'number' && s.id >= 2000 && s.id < 2170, 170, TIMEOUT);
    const answers = server.summaries.filter((s) => typeof s.id === 'number' && s.id >= 2000 && s.id < 2170);
    expect(answers.every((a) => a.error === undefined && a.history === 200)).toBe(true);
    await expectAlive(server);
    expect(server.maxRss).toBeLessThan(RSS_CEILING);

    const batch = Array.from({ length: 170 }, (_, i) => ({
      jsonrpc: '2.0',
      id: 3000 + i,
      method: 'a2a.tasks.get',
      params: { token: requester.token, id },
    }));
    server.write(`${JSON.stringify(batch)}\n`);
    const array = await server.waitFor((s) => s.entries?.[0]?.id === 3000, TIMEOUT);
    expect(array.bytes).toBeLessThanOrEqual(MAX_LINE_BYTES);
    const fitted = array.entries?.filter((e) => e.history === 200) ?? [];
    expect(fitted.length).toBeGreaterThan(1);
    notFitted(array.entries?.slice(fitted.length) ?? []);
    await expectAlive(server);
    expect(server.maxRss).toBeLessThan(RSS_CEILING);
  });

  it('(d) survives follow-ups that each carry a 20 MiB file: answers over the line bound say to use historyLength', {
    timeout: TIMEOUT,
  }, async () => {
    const server = start();
    const { requester } = await pair(server, 'd');
    const created = await server.request('a2a.message.send', {
      token: requester.token,
      to: 'w',
      message: { parts: [maxFilePart()] },
    });
    const id = created.taskId as string;
    const file = maxFilePart();
    // One at a time, as an agent would: the 18th killed the process.
    for (let i = 1; i <= 18; i++) {
      const answer = await server.request(
        'a2a.message.send',
        { token: requester.token, taskId: id, message: { parts: [file] } },
        TIMEOUT,
      );
      // The task no longer fits a line: the follow-up was taken, its answer says how to read the task.
      tooLarge(answer);
      expect(answer.error?.message).toContain('succeeded');
    }
    const last = await server.request('a2a.tasks.get', { token: requester.token, id, historyLength: 1 });
    expect(last.error).toBeUndefined();
    expect(last.history).toBe(1);
    // historyLength on the follow-up itself keeps its answer small.
    const light = await server.request('a2a.message.send', {
      token: requester.token,
      taskId: id,
      message: text('done'),
      historyLength: 0,
    });
    expect(light.error).toBeUndefined();
    expect(light.history).toBe(0);
    // A list that would carry the whole task is refused before anything is loaded.
    tooLarge(await server.request('a2a.tasks.list', { token: requester.token }, TIMEOUT));
    // A cancel of the task is taken (it must never be blocked by the task's size); its answer says how to read it.
    const canceled = await server.request('a2a.tasks.cancel', { token: requester.token, id }, TIMEOUT);
    tooLarge(canceled);
    expect(canceled.error?.message).toContain('succeeded');
    const after = await server.request('a2a.tasks.get', { token: requester.token, id, historyLength: 0 });
    expect(after.error).toBeUndefined();
    expect((after.line as { result: { task: { status: { state: string } } } }).result.task.status.state).toBe(
      'canceled',
    );
    await expectAlive(server);
    // The task (19 files of 27 MB, over 500 MB stored) is never loaded whole: answers too large are refused from
    // the rows' sizes, so RSS stays that of a few files in flight (it reached 3.2 GB when each answer loaded it).
    expect(server.maxRss).toBeLessThan(RSS_CEILING);
  });
});
