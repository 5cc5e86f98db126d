import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = new URL('..', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'sb-readme-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('README', () => {
  it('its embedding example runs as written (twice, on the same file) and wakes the requester', async () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const block = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block, 'a ```ts block in README.md').toBeDefined();
    const script = `${(block ?? '')
      .replace("'a2a-switchboard'", JSON.stringify(join(root, 'src/index.ts')))
      .replace("'agents.db'", JSON.stringify(join(dir, 'agents.db')))}
broker.events(lead.agentId).subscribe((e) => console.log('LEAD', e.params.event.kind, e.params.event.status?.state));
await new Promise((resolve) => setTimeout(resolve, 100));
await broker.close();
`;
    const file = join(dir, 'example.mts');
    writeFileSync(file, script);
    // Twice on the same file: an example runs any number of times.
    for (const pass of [1, 2]) {
      const { stdout } = await run(process.execPath, ['--import', 'tsx', file], { cwd: root });
      expect(stdout, `run ${pass}`).toContain('a2a.task.event');
      expect(stdout, `run ${pass}`).toContain('LEAD status-update completed');
    }
  });

  it('names the two commands a new user runs', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    expect(readme).toContain('npm install && npm start');
    expect(readme).toContain('npm install && npm test');
  });
});
