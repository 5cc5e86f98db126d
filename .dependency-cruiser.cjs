// The layering of src/ as a rule `npm run lint` enforces (docs/architecture.md
// draws the same picture). LAYERS is ordered from the bottom: a module may
// import its own layer and the layers listed before it, never one listed
// after it. Rooms of one layer marked `siblings` must not know each other.
// `log/`, `telemetry/` and `version.ts` are leaves: importable from everywhere
// but the pure rooms (log writes to stderr; telemetry hands spans and metrics
// to whatever SDK is registered), importing nothing of src/ but each other.
// Type-only imports count like any other: no exceptions are whitelisted.

/** @type {ReadonlyArray<{ name: string, path: string, siblings?: string }>} */
const LAYERS = [
  { name: 'protocol', path: '^src/protocol/' },
  { name: 'workflow', path: '^src/workflow/' },
  { name: 'machines', path: '^src/machines/' },
  { name: 'decisions', path: '^src/decisions/' },
  { name: 'persistence-kernel', path: '^src/persistence/kernel/' },
  {
    name: 'persistence-stores',
    path: '^src/persistence/(a2a|audit|coordinator|context)/',
    siblings: 'a2a|audit|coordinator|context',
  },
  { name: 'bus', path: '^src/bus/[^/]+$' },
  { name: 'bus-backends', path: '^src/bus/(sqlite|redis)/', siblings: 'sqlite|redis' },
  { name: 'actors-inspection', path: '^src/actors/inspection[.]ts$' },
  { name: 'actors-broker', path: '^src/actors/broker/' },
  { name: 'actors-worker', path: '^src/actors/worker/' },
  { name: 'actors-coordinator', path: '^src/actors/coordinator/' },
  { name: 'transport', path: '^src/transport/' },
  { name: 'agents', path: '^src/agents/' },
  { name: 'inspect', path: '^src/inspect/' },
  { name: 'console', path: '^src/console/' },
  { name: 'demo', path: '^src/demo/' },
  { name: 'gateway', path: '^src/gateway/' },
  { name: 'remote', path: '^src/remote/' },
  { name: 'cli', path: '^src/cli/' },
  { name: 'index', path: '^src/index[.]ts$' },
];

/** Rooms with no I/O: no node:* module, no database or network client, no logger. */
const PURE = '^src/(protocol|workflow|machines|decisions)/';
/** The npm packages a pure room may import: computation only. */
const PURE_PACKAGES = '(^|/)node_modules/(zod|xstate|@xstate/store|rxjs)/';

const LEAVES = '^src/(log/|telemetry/|version[.]ts$)';

const upward = LAYERS.slice(0, -1).map((layer, index) => ({
  name: `layer-${layer.name}`,
  comment: `${layer.name} may import only the layers below it: ${
    LAYERS.slice(0, index)
      .map((l) => l.name)
      .join(', ') || 'none'
  } (and log, version.ts)`,
  severity: 'error',
  from: { path: layer.path },
  to: { path: LAYERS.slice(index + 1).map((l) => l.path) },
}));

const siblings = LAYERS.filter((layer) => layer.siblings).map((layer) => ({
  name: `siblings-${layer.name}`,
  comment: `the rooms of ${layer.name} (${layer.siblings}) must not import each other`,
  severity: 'error',
  from: { path: layer.path },
  to: { path: layer.path, pathNot: `^src/[^/]+/$1/` },
}));

module.exports = {
  forbidden: [
    ...upward,
    ...siblings,
    {
      name: 'actors-broker-alone',
      comment: 'the broker knows neither the Coordinator nor the workers (they run over it)',
      severity: 'error',
      from: { path: '^src/actors/broker/' },
      to: { path: '^src/actors/(coordinator|worker)/' },
    },
    {
      name: 'leaves',
      comment: 'log/, telemetry/ and version.ts import nothing of src/ but themselves',
      severity: 'error',
      from: { path: LEAVES },
      to: { path: '^src/', pathNot: LEAVES },
    },
    {
      name: 'pure-no-node',
      comment: 'protocol, workflow, machines and decisions are pure: no node:* module',
      severity: 'error',
      from: { path: PURE },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'pure-packages',
      comment:
        'protocol, workflow, machines and decisions import only computation packages (zod, xstate, rxjs): no SQLite, Redis, pino',
      severity: 'error',
      from: { path: PURE },
      to: { path: 'node_modules/', pathNot: PURE_PACKAGES },
    },
    {
      name: 'pure-no-log',
      comment:
        'protocol, workflow, machines and decisions do not log or trace (the logger writes to stderr; telemetry hands spans to an SDK)',
      severity: 'error',
      from: { path: PURE },
      to: { path: '^src/(log|telemetry)/' },
    },
    {
      name: 'no-circular',
      comment: 'no import cycle, type-only imports included',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'every import resolves to a file or an installed package',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
    {
      name: 'not-to-dev-dependency',
      comment:
        'src/ ships: it imports dependencies, never devDependencies (an optional peer dependency such as redis is also a devDependency so the tests run: allowed)',
      severity: 'error',
      from: { path: '^src/' },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only', 'npm-peer'] },
    },
    {
      name: 'no-orphans',
      comment:
        'every module of src/ is reachable: imported by another, or an entry (index.ts, cli/main.ts, a page script under assets/, cjs-refusal.cts: what require() loads)',
      severity: 'error',
      from: {
        orphan: true,
        pathNot: [
          '^src/index[.]ts$',
          '^src/cli/main[.]ts$',
          '^src/cjs-refusal[.]cts$',
          '[.]d[.]ts$',
          '^src/[^/]+/assets/',
        ],
      },
      to: {},
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
  },
};
