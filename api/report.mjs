// Runs API Extractor once per entry point of package.json `exports` (one config
// each: API Extractor analyses one entry per run). `check` fails when a report
// differs from the one checked in under api/; `update` rewrites them.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Extractor, ExtractorConfig } from '@microsoft/api-extractor';

const mode = process.argv[2];
if (mode !== 'check' && mode !== 'update') {
  console.error('usage: node api/report.mjs check|update (check: fail on a changed API; update: rewrite api/*.api.md)');
  process.exit(2);
}
const root = new URL('..', import.meta.url).pathname;
const configs = [
  join(root, 'api-extractor.json'),
  ...readdirSync(join(root, 'api/config'))
    .filter((name) => name.endsWith('.json'))
    .sort()
    .map((name) => join(root, 'api/config', name)),
];

let failed = 0;
for (const path of configs) {
  const config = ExtractorConfig.loadFileAndPrepare(path);
  const result = Extractor.invoke(config, { localBuild: mode === 'update', showVerboseMessages: false });
  const report = config.reportFilePath.slice(root.length);
  if (!result.succeeded) {
    failed++;
    console.error(
      result.apiReportChanged
        ? `${report}: the API differs from the checked-in report; if the change is intended, run npm run api:update and commit ${report}`
        : `${report}: API Extractor failed (${result.errorCount} errors, ${result.warningCount} warnings; see above)`,
    );
  } else {
    console.log(`${report}: ${result.apiReportChanged ? 'updated' : 'unchanged'} (${result.warningCount} warnings)`);
  }
}
process.exit(failed ? 1 : 0);
