// What `require('a2a-switchboard')` (and each subpath) loads: the `require`
// condition of every export in package.json points here, so that a CommonJS
// caller learns why instead of ERR_PACKAGE_PATH_NOT_EXPORTED. Compiled to
// dist/cjs-refusal.cjs.
throw Object.assign(
  new Error(
    'a2a-switchboard is ESM-only: use import (or await import() from CommonJS), e.g. ' +
      "const { connect } = await import('a2a-switchboard');",
  ),
  { code: 'ERR_REQUIRE_ESM' },
);
