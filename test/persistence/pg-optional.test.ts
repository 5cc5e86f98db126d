import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';

/**
 * `pg` is an optional peer dependency: the package root and the coordinator
 * entry (the built dist/; `npm test` builds first) load without it, and a
 * leader lease asked for without it says what to install. The children run
 * with resolution hooks (`fixtures/block-pg.mjs`) under which `pg` cannot be
 * found: a static import of it anywhere the entries reach fails their load.
 */
const fixtures = new URL('./fixtures/', import.meta.url);
const block = new URL('block-pg.mjs', fixtures).pathname;

function node(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', block, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('pg is optional', () => {
  it('the hooks really hide pg: importing it fails as for a package not installed', async () => {
    const r = await node(['--input-type=module', '-e', "await import('pg')"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('ERR_MODULE_NOT_FOUND');
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
  });
});
