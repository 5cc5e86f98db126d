#!/usr/bin/env node
// The `switchboard` command. The TypeScript sources are compiled to dist/ by
// `npm install` (the `prepare` script) and by `npm run build`.
import '../dist/cli/main.js';
