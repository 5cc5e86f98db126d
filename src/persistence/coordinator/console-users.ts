import type { SqliteDatabase } from '../kernel/database.js';
import type { PgQuery } from '../kernel/postgres.js';

/**
 * The console's users, in the Coordinator's database (`coord_console_users`):
 * one row per approver with the SHA-256 of their access token (the token
 * itself is never stored), and when it was revoked. Both stores answer the
 * same four calls; the console looks a token's hash up on every action.
 */

/** One console user as listed (never their token, nor its hash). */
export interface ConsoleUserRow {
  name: string;
  createdAt: number;
  revokedAt: number | null;
}

export interface ConsoleUserTable {
  /**
   * Records `name` with its token's hash. Resolves false (and changes
   * nothing) when the name holds a token not revoked; a revoked name is
   * given the new token.
   */
  add(name: string, tokenSha256: string, at: number): Promise<boolean>;
  /** Marks the name's token revoked; false when there is no such live user. */
  revoke(name: string, at: number): Promise<boolean>;
  /** Every user, by name. */
  list(): Promise<ConsoleUserRow[]>;
  /** The name of the live (not revoked) user whose token hashes to this, if any. */
  nameOf(tokenSha256: string): Promise<string | undefined>;
}

type Row = { name: string; created_at: number | string; revoked_at: number | string | null };
const rowOf = (r: Row): ConsoleUserRow => ({
  name: r.name,
  createdAt: Number(r.created_at),
  revokedAt: r.revoked_at === null ? null : Number(r.revoked_at),
});

/** The users of a SQLite file (its Coordinator's schema 10 or later). */
export function sqliteConsoleUsers(db: SqliteDatabase): ConsoleUserTable {
  return {
    async add(name, hash, at) {
      const result = db
        .prepare(
          `INSERT INTO coord_console_users (name, token_sha256, created_at, revoked_at) VALUES (?, ?, ?, NULL)
           ON CONFLICT (name) DO UPDATE SET token_sha256 = excluded.token_sha256, created_at = excluded.created_at, revoked_at = NULL
           WHERE coord_console_users.revoked_at IS NOT NULL`,
        )
        .run(name, hash, at);
      return result.changes === 1;
    },
    async revoke(name, at) {
      return (
        db.prepare('UPDATE coord_console_users SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL').run(at, name)
          .changes === 1
      );
    },
    async list() {
      return (
        db.prepare('SELECT name, created_at, revoked_at FROM coord_console_users ORDER BY name').all() as Row[]
      ).map(rowOf);
    },
    async nameOf(hash) {
      const row = db
        .prepare('SELECT name FROM coord_console_users WHERE token_sha256 = ? AND revoked_at IS NULL')
        .get(hash) as { name: string } | undefined;
      return row?.name;
    },
  };
}

/** The users of a Coordinator's PostgreSQL database (its schema 3 or later). */
export function postgresConsoleUsers(pool: PgQuery): ConsoleUserTable {
  return {
    async add(name, hash, at) {
      const { rows } = await pool.query(
        `INSERT INTO coord_console_users (name, token_sha256, created_at, revoked_at) VALUES ($1, $2, $3, NULL)
         ON CONFLICT (name) DO UPDATE SET token_sha256 = excluded.token_sha256, created_at = excluded.created_at, revoked_at = NULL
         WHERE coord_console_users.revoked_at IS NOT NULL
         RETURNING name`,
        [name, hash, at],
      );
      return rows.length === 1;
    },
    async revoke(name, at) {
      const { rows } = await pool.query(
        'UPDATE coord_console_users SET revoked_at = $1 WHERE name = $2 AND revoked_at IS NULL RETURNING name',
        [at, name],
      );
      return rows.length === 1;
    },
    async list() {
      return (
        (await pool.query('SELECT name, created_at, revoked_at FROM coord_console_users ORDER BY name')).rows as Row[]
      ).map(rowOf);
    },
    async nameOf(hash) {
      const { rows } = await pool.query(
        'SELECT name FROM coord_console_users WHERE token_sha256 = $1 AND revoked_at IS NULL',
        [hash],
      );
      return (rows[0] as { name: string } | undefined)?.name;
    },
  };
}
