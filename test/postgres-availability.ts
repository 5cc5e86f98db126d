import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** The PostgreSQL the tests use (`SWITCHBOARD_TEST_PG_URL` overrides it): trust auth, user postgres. */
export const PG_URL = process.env.SWITCHBOARD_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const IN_CI = process.env.CI === 'true';

/** Whether a PostgreSQL answers a `SELECT 1` within a second. */
export async function probePostgres(url = PG_URL): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    await client.end();
    return true;
  } catch {
    await client.end().catch(() => undefined);
    return false;
  }
}

/**
 * Decided once, before a file's suites are declared: `pgUp` when PostgreSQL
 * answers; `runPg` also in CI, where a missing PostgreSQL must FAIL the
 * PostgreSQL suites (they cannot connect) instead of skipping them.
 */
export async function postgresGate(): Promise<{ pgUp: boolean; runPg: boolean }> {
  const pgUp = await probePostgres();
  return { pgUp, runPg: pgUp || IN_CI };
}

/** A database of its own (a random name) on the test server; `drop()` removes it, closing what is left connected. */
export async function createTestDatabase(
  prefix = 'sb_test',
): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}`));
  const u = new URL(PG_URL);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    name,
    drop: () => admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}

async function admin<T>(run: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 5000 });
  await c.connect();
  try {
    return await run(c);
  } finally {
    await c.end();
  }
}
