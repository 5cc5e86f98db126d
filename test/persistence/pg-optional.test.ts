import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type NodeRun, runNode } from '../node-run.js';

/**
 * `pg` is an optional peer dependency: the package (the built `dist/`;
 * `npm test` builds first) and the embedded Coordinator must work without
 * it, and asking for PostgreSQL without it must say what to install. Each
 * child runs with resolution hooks (`fixtures/block-pg.mjs`) under which
 * `pg` cannot be found: a static `import ... from 'pg'` in any module the
 * entries reach fails the child's first import.
 */
const fixtures = new URL('./fixtures/', import.meta.url);
const block = new URL('block-pg.mjs', fixtures).pathname;

function node(args: string[]): Promise<NodeRun> {
  return runNode(['--import', block, ...args]);
}

describe('pg is optional', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it('the hooks really hide pg: importing it fails as for a package not installed', async () => {
    const r = await node(['--input-type=module', '-e', "await import('pg')"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('ERR_MODULE_NOT_FOUND');
  });

  it('the embedded Coordinator runs without pg; asking for PostgreSQL says what to install', async () => {
    dir = mkdtempSync(join(tmpdir(), 'sb-no-pg-'));
    const r = await node([new URL('embedded-coordinator.mjs', fixtures).pathname, dir]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      state: 'completed',
      wanted: {
        name: 'PostgresError',
        code: 'PG_CLIENT_MISSING',
        message:
          "the PostgreSQL store needs the package 'pg' (node-postgres ^8.23.1), which cannot be found: " +
          "run 'npm install pg@8' in the project that uses switchboard",
      },
    });
  });

  it('the root and the coordinator entry load without pg; a lease says what to install', async () => {
    const r = await node([
      new URL('lease-without-pg.mjs', fixtures).pathname,
      'postgres://postgres:hunter2@127.0.0.1:5432/postgres',
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({
      rootLoaded: true,
      name: 'CoordinatorLeaseError',
      code: 'COORD_LEASE_BACKEND',
      role: 'closed',
    });
    expect(out.message).toContain(
      "PostgreSQL needs the package 'pg' (node-postgres ^8.23.1), which cannot be found: run 'npm install pg@8' in the project that uses switchboard",
    );
    expect(out.message).not.toContain('hunter2');
  });
});
