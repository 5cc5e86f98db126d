import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { createSqliteQueue } from '../../src/bus/sqlite/queue.js';
import { SWITCHBOARD_BIN } from '../../src/transport/serve-process.js';
import { workEnvelope } from '../bus/contract.js';
import { RawServe, tempDir, text } from '../transport/helpers.js';
import { Tmux, quote } from './tmux.js';

const run = promisify(execFile);

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

describe('switchboard top under a terminal (tmux)', () => {
  it('shows tasks and queues moving, redraws in place, and exits on q restoring the screen', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    // The writers: a real `switchboard serve` on the file, and a SQLite bus on the same file.
    const server = new RawServe(tmp.db, ['--log-level', 'silent']);
    cleanups.push(async () => {
      if (server.child.exitCode === null) await server.end();
    });
    const worker = (await server.call('a2a.agents.register', { name: 'coder', contextId: 'c' })) as { token: string };
    const lead = (await server.call('a2a.agents.register', { name: 'lead', contextId: 'c' })) as { token: string };
    const first = (await server.call('a2a.message.send', { token: lead.token, to: 'coder', message: text('one') })) as {
      task: { id: string };
    };
    await server.call('a2a.message.send', { token: lead.token, to: 'coder', message: text('two') });

    const tmux = new Tmux('switchboard-top');
    cleanups.push(() => tmux.kill());
    const command = [process.execPath, SWITCHBOARD_BIN, 'top', '--db', tmp.db, '--interval', '100']
      .map(quote)
      .join(' ');
    await tmux.start(`${command}; echo TOP-EXITED:$?; sleep 30`);

    let screen = await tmux.waitForScreen((s) => /TASKS 2\b/.test(s) && /submitted 2\b/.test(s), 'two submitted tasks');
    expect(screen).toContain('switchboard top');
    expect(screen).toContain(first.task.id);
    // No bus in the file yet: no queue section.
    expect(screen).not.toContain('QUEUES');

    // Tasks move in the other process: top follows.
    await server.call('a2a.tasks.status', { token: worker.token, id: first.task.id, state: 'working' });
    await tmux.waitForScreen((s) => /submitted 1\b/.test(s) && /working 1\b/.test(s), 'one task working');
    await server.call('a2a.tasks.status', { token: worker.token, id: first.task.id, state: 'completed' });
    screen = await tmux.waitForScreen((s) => /completed 1\b/.test(s) && /working 0\b/.test(s), 'one task completed');
    // A finished task leaves the list of live tasks.
    expect(screen).not.toContain(first.task.id);

    // Queues: three published, one leased, one dead-lettered.
    const bus = createSqliteQueue({ database: tmp.db });
    cleanups.push(() => bus.close());
    await tmux.waitForScreen((s) => s.includes('QUEUES 0'), 'the queue section once the bus made its table');
    for (let i = 0; i < 3; i++) await bus.publish('review', workEnvelope(i), { idempotencyKey: `k${i}` });
    const [leased] = await bus.consume('review', { consumer: 'w1', visibilityTimeoutMs: 60_000 });
    const [failing] = await bus.consume('review', { consumer: 'w1', visibilityTimeoutMs: 60_000 });
    if (leased === undefined || failing === undefined) throw new Error('nothing leased');
    await bus.nack(failing, { error: { type: 'Broken', message: 'no' }, retryable: false });
    // ROLE, READY, DELAYED, IN FLIGHT, DEAD, DONE
    await tmux.waitForScreen(
      (s) => /review\s+1\s+0\s+1\s+1\s+0\b/.test(s),
      'the review queue: 1 ready, 1 in flight, 1 dead',
    );
    await bus.ack(leased);
    await tmux.waitForScreen((s) => /review\s+1\s+0\s+0\s+1\s+1\b/.test(s), 'the acked message as done');

    await tmux.keys('q');
    screen = await tmux.waitForScreen((s) => s.includes('TOP-EXITED:0'), 'top exiting with code 0');
    // Back on the normal screen: top's frame is gone.
    expect(screen).not.toContain('TASKS');
  });

  it('exits cleanly on Ctrl-C too', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const server = new RawServe(tmp.db, ['--log-level', 'silent']);
    await server.call('a2a.agents.register', { name: 'a', contextId: 'c' });
    await server.end();
    const tmux = new Tmux('switchboard-top');
    cleanups.push(() => tmux.kill());
    const command = [process.execPath, SWITCHBOARD_BIN, 'top', '--db', tmp.db].map(quote).join(' ');
    await tmux.start(`${command}; echo TOP-EXITED:$?; sleep 30`, 80, 20);
    await tmux.waitForScreen((s) => s.includes('TASKS 0'), 'the first frame');
    await tmux.keys('C-c');
    const screen = await tmux.waitForScreen((s) => s.includes('TOP-EXITED:0'), 'top exiting with code 0');
    expect(screen).not.toContain('TASKS 0');
  });
});

describe('switchboard top without a terminal', () => {
  it('prints one plain snapshot and exits; refuses a missing file or a bad interval', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const server = new RawServe(tmp.db, ['--log-level', 'silent']);
    const lead = (await server.call('a2a.agents.register', { name: 'lead', contextId: 'c' })) as { token: string };
    await server.call('a2a.agents.register', { name: 'coder', contextId: 'c' });
    await server.call('a2a.message.send', { token: lead.token, to: 'coder', message: text('secret-body') });
    const child = spawn(process.execPath, [SWITCHBOARD_BIN, 'top', '--db', tmp.db], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    await server.end();
    expect(code).toBe(0);
    expect(stdout).toMatch(/TASKS 1\s+submitted 1/);
    expect(stdout).not.toContain('\x1b[');
    expect(stdout).not.toContain('secret-body');

    const missing = await run(process.execPath, [SWITCHBOARD_BIN, 'top', '--db', `${tmp.dir}/nope.db`]).catch((e) => e);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('does not exist');
    const badInterval = await run(process.execPath, [SWITCHBOARD_BIN, 'top', '--db', tmp.db, '--interval', '5']).catch(
      (e) => e,
    );
    expect(badInterval.code).toBe(2);
    expect(badInterval.stderr).toContain('--interval');
  });
});
