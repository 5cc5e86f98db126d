import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The tarball `npm pack` makes, unpacked into a project of its own with the
// repository's installed dependencies linked in (no network): what a user gets.
const run = promisify(execFile);
const root = new URL('../..', import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), 'sb-pack-'));
const project = join(work, 'project');
const installed = join(project, 'node_modules/a2a-switchboard');
let shipped: string[] = [];

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)));
}

beforeAll(async () => {
  // npm pack runs `prepare` (the clean build) unless told not to; the tests build first.
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], {
    cwd: root,
  });
  const [{ filename }] = JSON.parse(stdout) as [{ filename: string }];
  mkdirSync(installed, { recursive: true });
  await run('tar', ['-xzf', join(work, filename), '-C', installed, '--strip-components=1']);
  shipped = filesUnder(installed).sort();
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
  };
  for (const name of [...Object.keys(pkg.dependencies), 'typescript', '@types/node']) {
    const link = join(project, 'node_modules', name);
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(join(root, 'node_modules', name), link, 'dir');
  }
  mkdirSync(join(project, 'node_modules/.bin'), { recursive: true });
  symlinkSync('../a2a-switchboard/bin/switchboard.js', join(project, 'node_modules/.bin/switchboard'));
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'user-project', type: 'module', private: true }));
}, 120_000);
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('the packed package', () => {
  it('ships the build, the docs, the license and the sources its maps name; no tests, no stale output', () => {
    for (const file of [
      'package.json',
      'README.md',
      'LICENSE',
      'dist/index.js',
      'dist/index.d.ts',
      'bin/switchboard.js',
    ]) {
      expect(shipped, file).toContain(file);
    }
    expect(shipped).toContain('docs/getting-started.md');
    // docs/handlers.md's module and workflow, which the page links to.
    expect(shipped).toContain('examples/handlers/review-handler.mjs');
    expect(shipped).toContain('examples/handlers/review.json');
    expect(readFileSync(join(installed, 'LICENSE'), 'utf8')).toContain('Apache License');
    expect(shipped.filter((file) => file.startsWith('test/') || file.startsWith('bench/'))).toEqual([]);
    // Every dist file comes from a source that exists (a compiled module, or an asset copied as it is): a clean
    // build leaves nothing behind.
    const orphans = shipped
      .filter((file) => file.startsWith('dist/') && file.endsWith('.js'))
      .filter((file) => {
        const source = file.slice('dist/'.length);
        return (
          !existsSync(join(installed, 'src', source.replace(/\.js$/, '.ts'))) &&
          !existsSync(join(installed, 'src', source))
        );
      });
    expect(orphans).toEqual([]);
    // The console's page ships whole: nothing of it is fetched at run time.
    for (const asset of ['index.html', 'console.js', 'console.css']) {
      expect(shipped).toContain(`dist/console/assets/${asset}`);
    }
  });

  it('type-checks, strict, without skipLibCheck and without the optional peers, a user file importing every entry', async () => {
    // Nothing resolves `redis`, `pg`, `ai` or better-sqlite3's types here: a user
    // without the optional peers must type-check all the same.
    for (const absent of ['redis', 'pg', 'ai', '@types/pg', '@types/better-sqlite3', '@redis/client']) {
      expect(existsSync(join(project, 'node_modules', absent)), absent).toBe(false);
    }
    writeFileSync(
      join(project, 'main.ts'),
      [
        "import { createBroker, type Broker, TaskSchema } from 'a2a-switchboard';",
        "import * as protocol from 'a2a-switchboard/protocol';",
        "import { TASK_TRANSITIONS } from 'a2a-switchboard/machines';",
        "import * as bus from 'a2a-switchboard/bus';",
        "import * as transport from 'a2a-switchboard/transport';",
        "import { AuditLog } from 'a2a-switchboard/workflow';",
        "import * as coordinator from 'a2a-switchboard/coordinator';",
        "const broker: Broker = createBroker({ path: 'agents.db' });",
        'const rows: number = TASK_TRANSITIONS.length;',
        'export { broker, rows, AuditLog, TaskSchema, protocol, bus, transport, coordinator };',
        '',
      ].join('\n'),
    );
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          types: ['node'],
          skipLibCheck: false,
        },
        files: ['main.ts'],
      }),
    );
    const tsc = join(project, 'node_modules/typescript/bin/tsc');
    const result = await run(process.execPath, [tsc, '-p', project]).catch((error: { stdout: string }) => error);
    expect(result.stdout).toBe('');
  }, 120_000);

  it('imports at run time through the exports map, and refuses a path it does not export', async () => {
    const script = [
      "const root = await import('a2a-switchboard');",
      "const machines = await import('a2a-switchboard/machines');",
      "let refused = '';",
      "try { await import('a2a-switchboard/dist/transport/ndjson.js'); } catch (error) { refused = error.code; }",
      'console.log(typeof root.createBroker, machines.TASK_TRANSITIONS.length > 0, refused);',
    ].join('\n');
    writeFileSync(join(project, 'run.mjs'), script);
    const { stdout } = await run(process.execPath, [join(project, 'run.mjs')], { cwd: project });
    expect(stdout.trim()).toBe('function true ERR_PACKAGE_PATH_NOT_EXPORTED');
  });

  it('a require() from CommonJS, of the root or a subpath, says the package is ESM-only', async () => {
    const script = [
      "for (const name of ['a2a-switchboard', 'a2a-switchboard/protocol', 'a2a-switchboard/coordinator']) {",
      '  try { require(name); console.log(name, "loaded"); } catch (error) { console.log(name, error.code, error.message); }',
      '}',
    ].join('\n');
    writeFileSync(join(project, 'run.cjs'), script);
    const { stdout } = await run(process.execPath, [join(project, 'run.cjs')], { cwd: project });
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(3);
    for (const line of lines) {
      expect(line).toMatch(
        /^a2a-switchboard\S* ERR_REQUIRE_ESM a2a-switchboard is ESM-only: use import \(or await import\(\) from CommonJS\)/,
      );
    }
  });

  it('every relative link of its README and docs points to a file inside the package', () => {
    const pages = shipped.filter((file) => file === 'README.md' || (file.startsWith('docs/') && file.endsWith('.md')));
    expect(pages.length).toBeGreaterThan(5);
    const broken: string[] = [];
    for (const page of pages) {
      const text = readFileSync(join(installed, page), 'utf8');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (!target || /^[a-z]+:/i.test(target) || target.startsWith('#')) continue;
        const file = resolve(dirname(join(installed, page)), target.split('#')[0] ?? '');
        if (!file.startsWith(`${installed}/`) || !existsSync(file)) broken.push(`${page}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('its bin runs: switchboard --help exits 0', async () => {
    const { stdout } = await run(process.execPath, [join(project, 'node_modules/.bin/switchboard'), '--help'], {
      cwd: project,
    });
    expect(stdout).toContain('serve');
  });

  it('no source map names a source that is not in the tarball', () => {
    const maps = shipped.filter((file) => file.endsWith('.map'));
    expect(maps.length).toBeGreaterThan(10);
    const missing: string[] = [];
    for (const map of maps) {
      const { sources, sourceRoot } = JSON.parse(readFileSync(join(installed, map), 'utf8')) as {
        sources: string[];
        sourceRoot?: string;
      };
      for (const source of sources) {
        const file = resolve(dirname(join(installed, map)), sourceRoot ?? '', source);
        if (!file.startsWith(`${installed}/`) || !existsSync(file)) missing.push(`${map}: ${source}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
