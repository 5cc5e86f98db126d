// `npm run build`, after tsc: copies every file tsc does not emit that the
// compiled modules read at run time to the same path under dist/: the `.lua`
// files (`new URL('./scripts/x.lua', import.meta.url)`) and every file of an
// `assets/` folder (the console's page, script and styles).
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src');
const dist = join(root, 'dist');

let copied = 0;
let lua = 0;
for (const entry of readdirSync(src, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile()) continue;
  const isLua = entry.name.endsWith('.lua');
  if (!isLua && !entry.parentPath.split(/[\\/]/).includes('assets')) continue;
  if (isLua) lua++;
  const from = join(entry.parentPath, entry.name);
  const to = join(dist, relative(src, from));
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(from, to);
  copied++;
}
if (lua === 0) {
  process.stderr.write('copy-assets: no .lua files under src/: the Redis scripts are missing\n');
  process.exit(1);
}
