import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { z } from 'zod';
import { AgentNameSchema } from '../protocol/agent.js';
import { type ErrorCodeOf, SwitchboardError, type SwitchboardErrorOptions } from '../protocol/switchboard-error.js';

/**
 * The gateway's client keys: one bearer key per name, scoped to the agents
 * it may reach. A key is 32 random bytes shown once; the file keeps only its
 * SHA-256. The file is JSON, written whole to a temporary file and renamed
 * over the old one, so a reader never sees half of it.
 */

/** The gateway's refusals of its own (keys file, key names, listening). */
export class GatewayError extends SwitchboardError {
  /** The error's code: a string a caller can branch on (listed in `ERROR_CODES`). */
  declare readonly code: ErrorCodeOf<'GatewayError'>;
  constructor(code: ErrorCodeOf<'GatewayError'>, message: string, options: SwitchboardErrorOptions = {}) {
    super(code, message, options);
  }
}

/** A key's name: what the gateway's broker agent is called after (`gateway-NAME`). */
export const GatewayKeyNameSchema = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/,
    'a key name is 1 to 63 letters, digits, - or _, starting with a letter or digit',
  );

const KeyRowSchema = z.object({
  name: GatewayKeyNameSchema,
  agents: z.array(AgentNameSchema).min(1),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  createdAt: z.number().int(),
  revokedAt: z.number().int().optional(),
});

const KeysFileSchema = z.object({ gatewayKeys: z.literal(1), keys: z.array(KeyRowSchema) });

/** One key as the file holds it (never the key itself). */
export type GatewayKeyRow = z.infer<typeof KeyRowSchema>;

/** A key's prefix, so that a leaked one is easy to recognise in a log or a repository. */
const KEY_PREFIX = 'sbgw_';

/** The keys file of a broker's database file: beside it. */
export function defaultKeysFile(db: string): string {
  return `${db}.gateway-keys.json`;
}

function sha256(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** The keys of a file (none when it does not exist yet). */
export function readKeys(file: string): GatewayKeyRow[] {
  if (!existsSync(file)) return [];
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new GatewayError('GATEWAY_KEYS_FILE', `cannot read the keys file ${file}: ${(error as Error).message}`, {
      details: { file },
      cause: error,
    });
  }
  const parsed = KeysFileSchema.safeParse(raw);
  if (!parsed.success) {
    throw new GatewayError(
      'GATEWAY_KEYS_FILE',
      `${file} is not a gateway keys file (${parsed.error.issues[0]?.message}): give --keys the file switchboard gateway keys add wrote`,
      { details: { file } },
    );
  }
  return parsed.data.keys;
}

function writeKeys(file: string, keys: GatewayKeyRow[]): void {
  const temporary = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(temporary, `${JSON.stringify({ gatewayKeys: 1, keys }, null, 2)}\n`, { mode: 0o600 });
    renameSync(temporary, file);
  } catch (error) {
    throw new GatewayError('GATEWAY_KEYS_FILE', `cannot write the keys file ${file}: ${(error as Error).message}`, {
      details: { file },
      cause: error,
    });
  }
}

/** Mints a key for `name`, scoped to `agents`; answers the key (shown once: only its SHA-256 is kept). */
export function addKey(file: string, name: string, agents: readonly string[], now = Date.now()): string {
  const keys = readKeys(file);
  if (keys.some((k) => k.name === name && k.revokedAt === undefined)) {
    throw new GatewayError(
      'GATEWAY_KEY_EXISTS',
      `the key "${name}" exists and is not revoked: revoke it first (switchboard gateway keys revoke ${name}) or pick another name`,
      { details: { name } },
    );
  }
  const key = `${KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
  const kept = keys.filter((k) => k.name !== name);
  kept.push({ name, agents: [...agents], sha256: sha256(key), createdAt: now });
  writeKeys(file, kept);
  return key;
}

/** Revokes the key of `name`: refused from the next request on. */
export function revokeKey(file: string, name: string, now = Date.now()): void {
  const keys = readKeys(file);
  const row = keys.find((k) => k.name === name && k.revokedAt === undefined);
  if (row === undefined) {
    throw new GatewayError(
      'GATEWAY_KEY_UNKNOWN',
      `no live key is named "${name}": list them with switchboard gateway keys list`,
      { details: { name } },
    );
  }
  row.revokedAt = now;
  writeKeys(file, keys);
}

/** Keys presented and found, remembered so that a request does not hash its key again (at most this many). */
const FOUND_KEYS_KEPT = 1024;

/**
 * The keys of a file as the gateway checks them: read again whenever the
 * file changes (it is looked at, a `stat`, on every check), so that a key
 * added or revoked while the gateway runs counts from the next request on.
 * A key presented and found is remembered until the file changes, so that it
 * is not hashed again.
 */
export class KeyRing {
  private readonly file: string;
  private stamp = '';
  private byHash = new Map<string, GatewayKeyRow>();
  /** Keys presented and found since the file last changed. */
  private found = new Map<string, GatewayKeyRow>();

  constructor(file: string) {
    this.file = file;
    this.refresh();
  }

  /** Whether a key of this name is live (not revoked), as the file says now. */
  isLive(name: string): boolean {
    this.refresh();
    for (const row of this.byHash.values()) if (row.name === name) return true;
    return false;
  }

  /** The live key row a bearer key is, or undefined. */
  find(key: string): GatewayKeyRow | undefined {
    this.refresh();
    const known = this.found.get(key);
    if (known !== undefined) return known;
    const hash = sha256(key);
    const row = this.byHash.get(hash);
    if (row === undefined) return undefined;
    // The map lookup is by hash already; compare in constant time all the same.
    if (!timingSafeEqual(Buffer.from(row.sha256, 'hex'), Buffer.from(hash, 'hex'))) return undefined;
    if (this.found.size >= FOUND_KEYS_KEPT) this.found.clear();
    this.found.set(key, row);
    return row;
  }

  private refresh(): void {
    let stamp = 'absent';
    try {
      const stat = statSync(this.file);
      stamp = `${stat.mtimeMs}:${stat.size}:${stat.ino}`;
    } catch {
      // No file: no keys.
    }
    if (stamp === this.stamp) return;
    let rows: GatewayKeyRow[];
    try {
      rows = stamp === 'absent' ? [] : readKeys(this.file);
    } catch {
      // A file caught mid-replace or damaged: keep the keys read last (the next request reads it again).
      this.found = new Map();
      return;
    }
    this.byHash = new Map(rows.filter((r) => r.revokedAt === undefined).map((r) => [r.sha256, r]));
    this.found = new Map();
    this.stamp = stamp;
  }
}
