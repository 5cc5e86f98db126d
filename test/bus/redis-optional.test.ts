import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type NodeRun, runNode } from '../node-run.js';

/**
 * `redis` is an optional peer dependency: the package root (the built
 * `dist/index.js`; `npm test` builds first) and the embedded path must work
 * without it, and asking for Redis without it must say what to install. Each
 * child runs with resolution hooks (`fixtures/block-redis.mjs`) under which
 * `redis` and `@redis/*` cannot be found, as when they are not installed: a
 * static `import ... from 'redis'` in any module the root reaches fails the
 * child's first import.
 */
const fixtures = new URL('./fixtures/', import.meta.url);
const block = new URL('block-redis.mjs', fixtures).pathname;
const bin = new URL('../../bin/switchboard.js', import.meta.url).pathname;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

function node(args: string[]): Promise<NodeRun> {
  return runNode(['--import', block, ...args]);
}

const INSTALL = "needs the package 'redis' (node-redis ^6.3.1), which cannot be found: run 'npm install redis@6'";

describe('redis is optional', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it('the hooks really hide redis: importing it fails as for a package not installed', async () => {
    const r = await node(['--input-type=module', '-e', "await import('redis')"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('ERR_MODULE_NOT_FOUND');
    expect(r.stderr).toContain("Cannot find package 'redis'");
  });

  it('the package root loads and runs an embedded broker and SQLite queue without redis', async () => {
    dir = mkdtempSync(join(tmpdir(), 'sb-no-redis-'));
    const r = await node([new URL('embedded.mjs', fixtures).pathname, dir]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ registered: true, published: '1', delivered: '1', acked: true });
  });

  it('asking for a Redis bus or Redis context store without redis fails with what to install', async () => {
    const r = await node([new URL('redis-wanted.mjs', fixtures).pathname, REDIS_URL]);
    expect(r.code).toBe(0);
    const { queue, store } = JSON.parse(r.stdout) as Record<string, { name: string; code: string; message: string }>;
    expect(queue).toEqual({
      name: 'BusError',
      code: 'BUS_BACKEND',
      message: `the Redis Streams work bus ${INSTALL} in the project that uses switchboard`,
    });
    expect(store).toEqual({
      name: 'ContextStoreError',
      code: 'CONTEXT_BACKEND',
      message: `the Redis Context Engine store ${INSTALL} in the project that uses switchboard`,
    });
  });

  it('the CLI with --bus redis:// says what to install and exits non-zero', async () => {
    const r = await node([bin, 'top', '--bus', REDIS_URL, '--once']);
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`the Redis Streams work bus ${INSTALL}`);
  });
});
