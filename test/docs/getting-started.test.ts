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
  it('its ts blocks, run in order as one script (twice, on the same files), delegate a review, run a work item and print both answers', async () => {
    const code = blocks('ts');
    expect(code.length, 'the embedding, the delegation and the workflow blocks').toBeGreaterThanOrEqual(3);
    const script = code
      .join('\n')
      .replaceAll("'a2a-switchboard'", JSON.stringify(join(root, 'src/index.ts')))
      .replace("'agents.db'", JSON.stringify(join(dir, 'agents.db')))
      .replace("'work.db'", JSON.stringify(join(dir, 'work.db')));
    const file = join(dir, 'getting-started.mts');
    writeFileSync(file, script);
    // Twice on the same files: a second run must not take the first run's tasks for new ones.
    for (const pass of [1, 2]) {
      const { stdout } = await run(process.execPath, ['--import', 'tsx', file], { cwd: root, timeout: 60_000 });
      expect(stdout, `run ${pass}`).toContain('reviewer answered: Looks good to me.');
      expect(stdout, `run ${pass}`).toContain('the writer answered: summary of 1 part(s): all good');
    }
    // The shell line after it reads the item back from the file the script left.
    expect(blocks('sh').join('\n')).toContain('npx switchboard items list --db work.db');
    const listed = await run(process.execPath, [
      join(root, 'bin/switchboard.js'),
      'items',
      'list',
      '--db',
      join(dir, 'work.db'),
    ]);
    const rows = listed.stdout.split('\n').filter((line) => /completed\s+summarize@1/.test(line));
    expect(rows, 'one completed item per run').toHaveLength(2);
    for (const row of rows)
      expect(row).toMatch(/completed\s+summarize@1\s+summarize\s+1\s.*summary of 1 part\(s\): all good/);
  }, 150_000);

  it('names the install and the demo it says to run, and the demo command exists', async () => {
    const shell = blocks('sh').join('\n');
    expect(shell).toContain('npm install a2a-switchboard');
    expect(shell).toContain('npx switchboard demo');
    const { stdout } = await run(process.execPath, [join(root, 'bin/switchboard.js'), 'demo', '--help']);
    expect(stdout).toContain('Usage: switchboard demo');
  });
});
