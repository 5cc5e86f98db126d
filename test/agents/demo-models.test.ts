import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEMO_PROVIDERS, chooseDemoProvider, noKeyLine, providerLine } from '../../src/demo/model-choice.js';

// `switchboard demo --models`: which provider it picks from the environment
// (a fake env), and the real CLI without a key (it falls back to the scripted
// agents and completes) or with a key whose provider package is not
// installed (it names the package). No model is ever called.

const bin = new URL('../../bin/switchboard.js', import.meta.url).pathname;
const KEYS = DEMO_PROVIDERS.map((p) => p.keyVariable);

function run(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const base = { ...process.env };
  for (const key of KEYS) delete base[key];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...base, ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('demo --models: the provider from the environment', () => {
  it('picks the first provider whose key is set, in the documented order', () => {
    expect(chooseDemoProvider({})).toBeNull();
    expect(chooseDemoProvider({ OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '  ' })).toBeNull();
    expect(chooseDemoProvider({ GOOGLE_GENERATIVE_AI_API_KEY: 'g' })).toMatchObject({
      packageName: '@ai-sdk/google',
      model: 'gemini-2.5-flash',
    });
    expect(chooseDemoProvider({ GOOGLE_GENERATIVE_AI_API_KEY: 'g', ANTHROPIC_API_KEY: 'a' })).toMatchObject({
      packageName: '@ai-sdk/anthropic',
    });
    expect(
      chooseDemoProvider({ GOOGLE_GENERATIVE_AI_API_KEY: 'g', ANTHROPIC_API_KEY: 'a', OPENAI_API_KEY: 'o' }),
    ).toMatchObject({ packageName: '@ai-sdk/openai', exportName: 'openai', model: 'gpt-4o-mini' });
  });

  it('says which provider and model, and which variable, never the key', () => {
    const secret = 'sk-very-secret-123';
    const provider = chooseDemoProvider({ OPENAI_API_KEY: secret })!;
    const line = providerLine(provider);
    expect(line).toContain('@ai-sdk/openai');
    expect(line).toContain('gpt-4o-mini');
    expect(line).toContain('OPENAI_API_KEY');
    expect(line).not.toContain(secret);
    for (const key of KEYS) expect(noKeyLine()).toContain(key);
  });
});

describe('switchboard demo --models (the CLI)', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it('without a key: says so on stderr, runs the scripted agents, completes', async () => {
    dir = mkdtempSync(join(tmpdir(), 'sb-demo-models-'));
    const { code, stdout, stderr } = await run(
      ['demo', '--models', '--json', '--approve', '--db', join(dir, 'demo.db')],
      {},
    );
    expect(code, stderr).toBe(0);
    expect(stderr).toContain(noKeyLine());
    const summary = JSON.parse(stdout.trim()) as { items: { state: string }[]; audit: { ok: boolean } };
    expect(summary.items.map((i) => i.state)).toEqual(['completed', 'completed']);
    expect(summary.audit.ok).toBe(true);
  }, 90_000);

  it('with a key but no provider package: names the package to install, exit 1, the key never printed', async () => {
    dir = mkdtempSync(join(tmpdir(), 'sb-demo-models-'));
    const secret = 'sk-test-not-a-real-key-42';
    const { code, stdout, stderr } = await run(['demo', '--models', '--approve', '--db', join(dir, 'demo.db')], {
      ANTHROPIC_API_KEY: secret,
    });
    expect(code).toBe(1);
    expect(stderr).toContain('npm install @ai-sdk/anthropic');
    expect(stdout + stderr).not.toContain(secret);
  }, 60_000);
});
