import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Every ```ts / ```js block of README.md and docs/*.md that imports from
// `a2a-switchboard` (or one of its subpaths) is type-checked against the entry
// points as they are in src/: `a2a-switchboard` is src/index.ts and
// `a2a-switchboard/<sub>` is src/entry/<sub>.ts. A block is one of three kinds,
// told by an HTML comment on the line before its fence:
//   (none)               a whole program: type-checked, strict, as a user's .mts (.mjs for js) file;
//   <!-- fragment -->    a piece of a program (names it does not define), or a program written against an
//                        SDK that is not installed here: only its imports of the package are checked;
//   <!-- run -->         a whole program that is also run (with tsx, twice in one scratch directory, so on the
//                        same database files) and must exit 0 both times.
// Modules an example imports that are not installed here (an LLM vendor's SDK)
// are declared as untyped modules. README.md's first block and
// docs/getting-started.md are also run by their own tests.

const run = promisify(execFile);
const root = new URL('../..', import.meta.url).pathname;
const PACKAGE = 'a2a-switchboard';
const IMPORTS_PACKAGE =
  /\bfrom\s+['"]a2a-switchboard(\/[\w-]+)?['"]|\bimport\(\s*['"]a2a-switchboard(\/[\w-]+)?['"]\s*\)/;

type Kind = 'program' | 'fragment' | 'run';

interface Example {
  /** `page:line` of the opening fence. */
  name: string;
  lang: 'ts' | 'js';
  kind: Kind;
  code: string;
}

function pages(): string[] {
  const docs = readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...docs];
}

function examplesOf(page: string, text: string): Example[] {
  const found: Example[] = [];
  for (const match of text.matchAll(/(?:<!--\s*(fragment|run)\s*-->[ \t]*\n)?```(ts|js)\n([\s\S]*?)```/g)) {
    const code = match[3] ?? '';
    if (!IMPORTS_PACKAGE.test(code)) continue;
    const line = text.slice(0, match.index).split('\n').length + (match[1] ? 1 : 0);
    found.push({
      name: `${page}:${line}`,
      lang: match[2] === 'js' ? 'js' : 'ts',
      kind: (match[1] as Kind | undefined) ?? 'program',
      code,
    });
  }
  return found;
}

/** The import declarations of `code` whose module is the package or one of its subpaths. */
function packageImports(code: string): string {
  const source = ts.createSourceFile('example.mts', code, ts.ScriptTarget.ES2022, true);
  return source.statements
    .filter(
      (statement): statement is ts.ImportDeclaration =>
        ts.isImportDeclaration(statement) &&
        ts.isStringLiteral(statement.moduleSpecifier) &&
        (statement.moduleSpecifier.text === PACKAGE || statement.moduleSpecifier.text.startsWith(`${PACKAGE}/`)),
    )
    .map((statement) => statement.getText(source))
    .join('\n');
}

const OPTIONS: ts.CompilerOptions = {
  strict: true,
  noEmit: true,
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  lib: ['lib.es2023.d.ts'],
  types: ['node'],
  skipLibCheck: true,
  allowJs: true,
  checkJs: true,
  paths: {
    [PACKAGE]: [join(root, 'src/index.ts')],
    [`${PACKAGE}/*`]: [join(root, 'src/entry/*.ts')],
  },
};

/** Modules the examples import that do not resolve here and are not the package's. */
function missingModules(files: string[]): string[] {
  const missing = new Set<string>();
  for (const file of files) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
    for (const statement of source.statements) {
      if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
      const specifier = statement.moduleSpecifier.text;
      if (specifier === PACKAGE || specifier.startsWith(`${PACKAGE}/`)) continue;
      const { resolvedModule } = ts.resolveModuleName(
        specifier,
        file,
        OPTIONS,
        ts.sys,
        undefined,
        undefined,
        ts.ModuleKind.ESNext,
      );
      if (resolvedModule === undefined) missing.add(specifier);
    }
  }
  return [...missing].sort();
}

const examples = pages().flatMap((page) => examplesOf(page, readFileSync(join(root, page), 'utf8')));
let scratch = '';
let diagnostics = new Map<string, string[]>();
const fileOf = new Map<string, string>();
// Two files that must not type-check: proof that a name an entry does not export fails the check.
const CANARIES: Record<string, string> = {
  'canary-root.mts': `import { createDispatcher } from '${PACKAGE}';\nexport {};\n`,
  'canary-subpath.mts': `import { createBroker } from '${PACKAGE}/protocol';\nexport {};\n`,
};

beforeAll(() => {
  mkdirSync(join(root, '.tmp'), { recursive: true });
  // Inside the repository: the examples' other imports (zod, ai, ...) resolve from its node_modules.
  scratch = mkdtempSync(join(root, '.tmp', 'doc-examples-'));
  examples.forEach((example, index) => {
    const base = `${String(index).padStart(2, '0')}-${example.name.replace(/[^\w]+/g, '-')}`;
    const file = join(scratch, `${base}.${example.lang === 'js' ? 'mjs' : 'mts'}`);
    const code = example.kind === 'fragment' ? `${packageImports(example.code)}\nexport {};\n` : example.code;
    writeFileSync(file, code);
    fileOf.set(example.name, file);
  });
  for (const [name, code] of Object.entries(CANARIES)) writeFileSync(join(scratch, name), code);
  const files = [...fileOf.values(), ...Object.keys(CANARIES).map((name) => join(scratch, name))];
  const shims = join(scratch, 'not-installed.d.ts');
  writeFileSync(
    shims,
    missingModules(files)
      .map((specifier) => `declare module '${specifier}';\n`)
      .join(''),
  );
  const program = ts.createProgram([...files, shims], OPTIONS);
  diagnostics = new Map(
    files.map((file) => {
      const source = program.getSourceFile(file);
      const found = source ? ts.getPreEmitDiagnostics(program, source) : [];
      return [
        file,
        found.map((d) => {
          const where =
            d.file && d.start !== undefined ? `line ${d.file.getLineAndCharacterOfPosition(d.start).line + 1}: ` : '';
          return `${where}${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
        }),
      ];
    }),
  );
}, 180_000);

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe('the examples of README.md and docs/*.md', () => {
  it('are found: the pages import the package in blocks of each kind', () => {
    expect(examples.length).toBeGreaterThanOrEqual(10);
    expect(examples.filter((example) => example.kind === 'program').length).toBeGreaterThan(0);
    expect(examples.filter((example) => example.kind === 'fragment').length).toBeGreaterThan(0);
    expect(examples.filter((example) => example.kind === 'run').length).toBeGreaterThan(0);
  });

  it('a name an entry does not export fails the check (at the root and at a subpath)', () => {
    for (const name of Object.keys(CANARIES)) {
      expect(diagnostics.get(join(scratch, name))?.join('\n'), name).toMatch(/has no exported member/);
    }
  });

  for (const example of examples) {
    const what = example.kind === 'fragment' ? 'its imports resolve' : 'type-checks (strict)';
    it(`${example.name}: ${what}`, () => {
      expect(diagnostics.get(fileOf.get(example.name) ?? '')).toEqual([]);
    });
  }

  for (const example of examples.filter((e) => e.kind === 'run')) {
    it(`${example.name}: runs to its end, twice on the same files`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'sb-doc-example-'));
      try {
        const script = example.code.replace(
          /(['"])a2a-switchboard(\/[\w-]+)?\1/g,
          (_, _quote: string, sub: string | undefined) =>
            JSON.stringify(join(root, sub ? `src/entry${sub}.ts` : 'src/index.ts')),
        );
        const file = join(dir, `example.${example.lang === 'js' ? 'mjs' : 'mts'}`);
        writeFileSync(file, script);
        const tsx = pathToFileURL(join(root, 'node_modules/tsx/dist/loader.mjs')).href;
        // Twice in the same directory (so on the same database files): an example runs any number of times.
        for (const pass of [1, 2]) {
          const result = await run(process.execPath, ['--import', tsx, file], { cwd: dir, timeout: 60_000 });
          expect(result.stderr, `run ${pass}`).toBe('');
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }, 90_000);
  }
});
