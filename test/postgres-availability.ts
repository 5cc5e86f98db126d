import { randomUUID } from 'node:crypto';
import pg from 'pg';

/**
 * The PostgreSQL the tests use (`SWITCHBOARD_TEST_POSTGRES_URL` overrides
 * it): trust auth, user postgres. Each test makes a database of its own with
 * a random name (`createTestDatabase`) and drops it afterwards.
 */
export const POSTGRES_URL = process.env.SWITCHBOARD_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const IN_CI = process.env.CI === 'true';

/** Whether a PostgreSQL answers `SELECT 1` within a second. */
export async function probePostgres(url = POSTGRES_URL): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    await client.end();
    return true;
  } catch {
    client.connection.stream.destroy();
    return false;
  }
}

/**
 * Decided once, before a file's suites are declared: `postgresUp` when a
 * PostgreSQL answers; `runPostgres` also in CI, where a missing PostgreSQL
 * must FAIL the suites (they cannot connect) instead of skipping them.
 */
export async function postgresGate(): Promise<{ postgresUp: boolean; runPostgres: boolean }> {
  const postgresUp = await probePostgres();
  return { postgresUp, runPostgres: postgresUp || IN_CI };
}

/** `url` naming another database of the same server. */
export function databaseUrl(name: string, url = POSTGRES_URL): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

export interface TestDatabase {
  name: string;
  url: string;
  /** Drops the database (ending the sessions still on it). */
  drop(): Promise<void>;
}

/** A new, empty database with a random name, on the server of `adminUrl` (the benches pass theirs). */
export async function createTestDatabase(prefix = 'sb_test', adminUrl = POSTGRES_URL): Promise<TestDatabase> {
  const name = `${prefix}_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5000 });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  return {
    name,
    url: databaseUrl(name, adminUrl),
    async drop() {
      const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5000 });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/** `url` with `secret` as its password (trust auth ignores it): a secret no output may show. */
export function withPassword(url: string, secret: string): string {
  const parsed = new URL(url);
  parsed.password = secret;
  return parsed.toString();
}
