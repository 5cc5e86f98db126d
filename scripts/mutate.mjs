// `npm run mutate [-- STRYKER ARGS]`: the mutation run of the pure core
// (stryker.config.mjs), then each mutated module's score held to its
// threshold (`moduleThresholds` in the same config). Exits non-zero when
// Stryker fails or a module scores under its threshold. The reports stay in
// .mutation/ (report.html to read, report.json for tools).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const reportPath = join(root, '.mutation/report.json');
const { moduleThresholds } = await import(join(root, 'stryker.config.mjs'));

rmSync(reportPath, { force: true });
const stryker = join(root, 'node_modules/.bin/stryker');
const run = spawnSync(stryker, ['run', ...process.argv.slice(2)], { cwd: root, stdio: 'inherit' });
if (run.status !== 0) {
  console.error(`mutate: stryker exited with ${run.status ?? run.signal}; see its output above`);
  process.exit(run.status ?? 1);
}
if (!existsSync(reportPath)) {
  console.error('mutate: no .mutation/report.json: is the json reporter still in stryker.config.mjs?');
  process.exit(1);
}

/** The threshold of a module: its own entry, else the longest folder entry that holds it, else the default. */
function thresholdOf(path) {
  if (moduleThresholds[path] !== undefined) return moduleThresholds[path];
  const folders = Object.keys(moduleThresholds)
    .filter((key) => key.endsWith('/') && path.startsWith(key))
    .sort((a, b) => b.length - a.length);
  return folders.length > 0 ? moduleThresholds[folders[0]] : moduleThresholds.default;
}

const report = JSON.parse(readFileSync(reportPath, 'utf8'));
const rows = [];
let failed = 0;
for (const [file, { mutants }] of Object.entries(report.files)) {
  const path = relative(root, join(report.projectRoot ?? root, file)).replaceAll('\\', '/');
  const count = (status) => mutants.filter((m) => m.status === status).length;
  const detected = count('Killed') + count('Timeout');
  const undetected = count('Survived') + count('NoCoverage');
  const valid = detected + undetected;
  const score = valid === 0 ? 100 : (100 * detected) / valid;
  const threshold = thresholdOf(path);
  const ok = score >= threshold;
  if (!ok) failed++;
  rows.push({ path, mutants: mutants.length, killed: detected, survived: undetected, score, threshold, ok });
}
rows.sort((a, b) => a.path.localeCompare(b.path));
const width = Math.max(6, ...rows.map((r) => r.path.length));
console.log(`\n${'module'.padEnd(width)}  mutants  detected  undetected   score  threshold`);
for (const r of rows) {
  console.log(
    `${r.path.padEnd(width)}  ${String(r.mutants).padStart(7)}  ${String(r.killed).padStart(8)}  ${String(r.survived).padStart(10)}  ${r.score.toFixed(1).padStart(5)}%  ${String(r.threshold).padStart(8)}%${r.ok ? '' : '  BELOW'}`,
  );
}
if (failed > 0) {
  console.error(`\nmutate: ${failed} module(s) under their threshold: read .mutation/report.html for the survivors`);
  process.exit(1);
}
console.log('\nmutate: every module at or above its threshold (report: .mutation/report.html)');
