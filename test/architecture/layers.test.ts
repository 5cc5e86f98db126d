import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The layer rule of `npm run lint` (.dependency-cruiser.cjs), run through
// dependency-cruiser's CLI: on the real src/, and on a small tree in a temp
// dir that mirrors src/'s rooms, clean and then with wrong imports planted.

const repo = new URL('../..', import.meta.url).pathname;
const depcruise = join(repo, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs');
const config = join(repo, '.dependency-cruiser.cjs');

interface Run {
  code: number | null;
  output: string;
}

function cruise(cwd: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [depcruise, 'src', '--config', '.dependency-cruiser.cjs', '--output-type', 'err'],
      { cwd, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== 'number') reject(error);
        else resolve({ code: error ? (error.code as number) : 0, output: stdout + stderr });
      },
    );
  });
}

/** One module per room (and the leaves), each importing the room below it; index.ts imports them all. */
const CLEAN_TREE: Record<string, string> = {
  'protocol/task.ts': 'export const Task = {};\n',
  'workflow/records.ts': "import { Task } from '../protocol/task.js';\nexport const records = [Task];\n",
  'workflow/governance.ts': "import { records } from './records.js';\nexport const governed = records;\n",
  'machines/x.ts': "import { governed } from '../workflow/governance.js';\nexport const machine = governed;\n",
  'persistence/kernel/database.ts': "import { machine } from '../../machines/x.js';\nexport const db = machine;\n",
  'persistence/kernel/redis/hash-tag.ts': "import { db } from '../database.js';\nexport const hashTag = db;\n",
  'persistence/a2a/store.ts': "import { db } from '../kernel/database.js';\nexport const store = db;\n",
  'persistence/context/redis-store.ts':
    "import { hashTag } from '../kernel/redis/hash-tag.js';\nexport const contextStore = hashTag;\n",
  'bus/work-queue.ts': "import { store } from '../persistence/a2a/store.js';\nexport const queue = store;\n",
  'bus/sqlite/queue.ts': "import { queue } from '../work-queue.js';\nexport const sqlite = queue;\n",
  'bus/redis/queue.ts': "import { queue } from '../work-queue.js';\nexport const redis = queue;\n",
  'actors/broker/broker.ts':
    "import { VERSION } from '../../version.js';\nimport { log } from '../../log/logger.js';\nexport const broker = [VERSION, log];\n",
  'log/logger.ts': 'export const log = 1;\n',
  'version.ts': "export const VERSION = '0';\n",
  'index.ts': [
    "export * from './machines/x.js';",
    "export * from './bus/sqlite/queue.js';",
    "export * from './bus/redis/queue.js';",
    "export * from './persistence/context/redis-store.js';",
    "export * from './actors/broker/broker.js';",
    '',
  ].join('\n'),
};

/**
 * The clean tree with upward imports (a machine importing the broker; the
 * Context Engine importing the bus, which sits above the stores), sibling
 * imports (between the bus backends; between the Context Engine and another
 * store), I/O in a pure room, a leaf importing up, and a cycle.
 */
const PLANTED_TREE: Record<string, string> = {
  ...CLEAN_TREE,
  'persistence/context/redis-store.ts':
    "import { hashTag } from '../kernel/redis/hash-tag.js';\nimport { redis } from '../../bus/redis/queue.js';\nimport { store } from '../a2a/store.js';\nexport const contextStore = [hashTag, redis, store];\n",
  'machines/x.ts':
    "import { governed } from '../workflow/governance.js';\nimport { broker } from '../actors/broker/broker.js';\nexport const machine = [governed, broker];\n",
  'bus/sqlite/queue.ts':
    "import { queue } from '../work-queue.js';\nimport type { redis } from '../redis/queue.js';\nexport const sqlite: typeof redis = queue;\n",
  'workflow/records.ts':
    "import { readFileSync } from 'node:fs';\nimport { Task } from '../protocol/task.js';\nimport { governed } from './governance.js';\nexport const records = [Task, readFileSync, () => governed];\n",
  'log/logger.ts': "import { Task } from '../protocol/task.js';\nexport const log = Task;\n",
};

function writeTree(tree: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-layers-'));
  copyFileSync(config, join(dir, '.dependency-cruiser.cjs'));
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext' }, include: ['src'] }),
  );
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  for (const [path, text] of Object.entries(tree)) {
    const file = join(dir, 'src', path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
  }
  return dir;
}

describe('the layer rule (.dependency-cruiser.cjs)', () => {
  const dirs: string[] = [];
  let clean: Run;
  let planted: Run;

  beforeAll(async () => {
    const cleanDir = writeTree(CLEAN_TREE);
    const plantedDir = writeTree(PLANTED_TREE);
    dirs.push(cleanDir, plantedDir);
    [clean, planted] = await Promise.all([cruise(cleanDir), cruise(plantedDir)]);
  }, 120_000);

  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('passes a tree whose imports all go down', () => {
    expect(clean.output).toContain('no dependency violations found');
    expect(clean.code).toBe(0);
  });

  it('fails on an upward import, naming the layer rule and the import', () => {
    expect(planted.code).not.toBe(0);
    expect(planted.output).toMatch(/error layer-machines: src\/machines\/x\.ts → src\/actors\/broker\/broker\.ts/);
  });

  it('fails on a cycle', () => {
    expect(planted.output).toMatch(/error no-circular: src\/workflow\/(records|governance)\.ts →/);
  });

  it('fails on a (type-only) import between sibling rooms', () => {
    expect(planted.output).toMatch(
      /error siblings-bus-backends: src\/bus\/sqlite\/queue\.ts → src\/bus\/redis\/queue\.ts/,
    );
  });

  it('keeps the Context Engine with the stores: below the bus, a sibling of the other stores', () => {
    expect(planted.output).toMatch(
      /error layer-persistence-stores: src\/persistence\/context\/redis-store\.ts → src\/bus\/redis\/queue\.ts/,
    );
    expect(planted.output).toMatch(
      /error siblings-persistence-stores: src\/persistence\/context\/redis-store\.ts → src\/persistence\/a2a\/store\.ts/,
    );
  });

  it('fails on a node:* module in a pure room, and on a leaf importing from src/', () => {
    expect(planted.output).toMatch(/error pure-no-node: src\/workflow\/records\.ts → (node:)?fs/);
    expect(planted.output).toMatch(/error leaves: src\/log\/logger\.ts → src\/protocol\/task\.ts/);
  });

  it('passes the real src/', async () => {
    const real = await cruise(repo);
    expect(real.output).toContain('no dependency violations found');
    expect(real.code).toBe(0);
  }, 120_000);
});
