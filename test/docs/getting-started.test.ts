import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = new URL('../..', import.meta.url).pathname;
const page = readFileSync(join(root, 'docs/getting-started.md'), 'utf8');
const dir = mkdtempSync(join(tmpdir(), 'sb-getting-started-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function blocks(lang: string): string[] {
  return [...page.matchAll(new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``, 'g'))].map((match) => match[1] ?? '');
}

describe('docs/getting-started.md', () => {
  it('its ts blocks, run in order as one script, delegate a review and print the answer', async () => {
    const code = blocks('ts');
    expect(code.length, 'the embedding and the delegation blocks').toBeGreaterThanOrEqual(2);
    const script = code
      .join('\n')
      .replace("'a2a-switchboard'", JSON.stringify(join(root, 'src/index.ts')))
      .replace("'agents.db'", JSON.stringify(join(dir, 'agents.db')));
    const file = join(dir, 'getting-started.mts');
    writeFileSync(file, script);
    const { stdout } = await run(process.execPath, ['--import', 'tsx', file], { cwd: root, timeout: 60_000 });
    expect(stdout).toContain('reviewer answered: Looks good to me.');
  });

  it('names the install and the demo it says to run, and the demo command exists', async () => {
    const shell = blocks('sh').join('\n');
    expect(shell).toContain('npm install a2a-switchboard');
    expect(shell).toContain('npx switchboard demo');
    const { stdout } = await run(process.execPath, [join(root, 'bin/switchboard.js'), 'demo', '--help']);
    expect(stdout).toContain('Usage: switchboard demo');
  });
});
