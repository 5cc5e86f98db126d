import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BACKGROUND_LOG_MAX_BYTES, rotateLog } from '../../src/transport/host-broker.js';
import { connect } from '../../src/transport/client.js';
import { backgroundLogPath } from '../../src/transport/host-paths.js';
import { hostDir } from './helpers.js';
import { alive, eventually, ownerPid } from './runtime.js';

const saved = process.env.XDG_RUNTIME_DIR;
let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
  if (saved === undefined) delete process.env.XDG_RUNTIME_DIR;
  else process.env.XDG_RUNTIME_DIR = saved;
});

describe("a background broker's log stays bounded", () => {
  it('rotateLog renames a log over the limit to LOG.1 (replacing the old one) and leaves a short or missing one', () => {
    const h = hostDir();
    cleanups.push(h.cleanup);
    const log = join(h.dir, 'broker.log');
    rotateLog(log, 10);
    expect(existsSync(log)).toBe(false);
    writeFileSync(log, 'short\n');
    rotateLog(log, 10);
    expect(readFileSync(log, 'utf8')).toBe('short\n');
    writeFileSync(`${log}.1`, 'the oldest\n');
    writeFileSync(log, 'longer than ten bytes\n');
    rotateLog(log, 10);
    expect(existsSync(log)).toBe(false);
    expect(readFileSync(`${log}.1`, 'utf8')).toBe('longer than ten bytes\n');
  });

  it('connect({ db }) starting a broker rotates a log over 8 MiB first; the new broker writes a fresh one', async () => {
    const h = hostDir();
    cleanups.push(h.cleanup);
    const run = join(h.dir, 'run');
    mkdirSync(run, { mode: 0o700 });
    process.env.XDG_RUNTIME_DIR = run;
    mkdirSync(join(run, 'switchboard'), { mode: 0o700 });
    const log = backgroundLogPath(h.db);
    const old = `${'{"msg":"an old line"}\n'.repeat(Math.ceil(BACKGROUND_LOG_MAX_BYTES / 22) + 1)}`;
    writeFileSync(log, old, { mode: 0o600 });
    const client = await connect({ db: h.db, idleSeconds: 1 });
    const pid = ownerPid(h.db);
    expect(pid).toBeDefined();
    await client.close();
    expect(readFileSync(`${log}.1`, 'utf8')).toBe(old);
    const fresh = readFileSync(log, 'utf8');
    expect(fresh).not.toContain('an old line');
    expect(fresh).toContain('a2a broker open');
    // It stops by itself once idle.
    await eventually(() => pid !== undefined && !alive(pid), 20_000);
  }, 60_000);
});
