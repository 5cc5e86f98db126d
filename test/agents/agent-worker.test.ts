import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type Proc, runCli, terminate } from '../scaleout/processes.js';
import { askThenKill, scenarioDir } from './ask-kill-scenario.js';

// Model agents in real `switchboard worker --agent` processes on the SQLite
// bus: the ask-then-SIGKILL scenario (ask-kill-scenario.ts; the same runs on
// Redis in agent-worker-redis.test.ts), and a missing provider package.

const { dir, cleanup } = scenarioDir();
const procs: Proc[] = [];
afterAll(async () => {
  for (const proc of procs) await terminate(proc);
  cleanup();
});

describe('switchboard worker --agent', () => {
  it('resumes an asking agent in a new process after a SIGKILL: checkpoint + answer, no step twice, cost = priced usage', async () => {
    await askThenKill({ dir, bus: [], workerStore: (db) => ['--db', db], procs });
  }, 240_000);

  it('names the provider package to install when it is missing, and exits 1', async () => {
    const file = join(dir, 'openai.json');
    writeFileSync(file, JSON.stringify({ provider: '@ai-sdk/not-installed-here', model: 'gpt-4o' }));
    const run = await runCli(['worker', '--db', join(dir, 'x.db'), '--role', 'coding', '--agent', file]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('npm install @ai-sdk/not-installed-here');
  }, 60_000);
});
