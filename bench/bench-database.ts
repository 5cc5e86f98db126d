import { type TestDatabase, createTestDatabase } from '../test/postgres-availability.js';

/**
 * The PostgreSQL server the benches use: PG_URL (or POSTGRES_URL), by
 * default postgres://postgres@127.0.0.1:5432/postgres (trust, user postgres).
 */
export const BENCH_POSTGRES_URL =
  process.env.PG_URL ?? process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * A new, empty database with a random name on the bench's server, for one
 * bench (or one engine of it); `drop()` removes it, ending its sessions.
 */
export function createBenchDatabase(prefix: string): Promise<TestDatabase> {
  return createTestDatabase(prefix, BENCH_POSTGRES_URL);
}
