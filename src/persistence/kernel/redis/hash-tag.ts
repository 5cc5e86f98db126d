/**
 * The hash tag of a deployment's keys. Every key of one deployment (the work
 * bus's and the Context Engine's) starts with `{prefix}`: Redis Cluster
 * hashes only what stands between the braces, so all of them fall in one
 * slot, where one Lua script may touch any of them atomically. Several
 * deployments (prefixes) share a Redis or spread over a cluster's slots.
 */

const PREFIX_PATTERN = /^[A-Za-z0-9._:-]{1,64}$/;

/**
 * Checks a deployment prefix and returns its hash-tagged form `{prefix}`; a
 * bad one is refused with the error `invalid` makes of a message that says
 * what a prefix may hold (each caller raises its own error class and code).
 */
export function hashTag(prefix: unknown, invalid: (message: string) => Error): string {
  if (typeof prefix !== 'string' || !PREFIX_PATTERN.test(prefix)) {
    throw invalid('prefix must be 1-64 letters, digits, . _ : or -');
  }
  return `{${prefix}}`;
}
