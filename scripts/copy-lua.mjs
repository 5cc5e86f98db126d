// `npm run build`, after tsc: copies every `.lua` file under src/ to the same
// path under dist/, where the compiled modules read them
// (`new URL('./scripts/x.lua', import.meta.url)`).
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src');
const dist = join(root, 'dist');

let copied = 0;
for (const entry of readdirSync(src, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith('.lua')) continue;
  const from = join(entry.parentPath, entry.name);
  const to = join(dist, relative(src, from));
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(from, to);
  copied++;
}
if (copied === 0) {
  process.stderr.write('copy-lua: no .lua files under src/: the Redis scripts are missing\n');
  process.exit(1);
}
