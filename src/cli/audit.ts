import type { AuditChain } from '../persistence/audit/audit-chain.js';
import type { AuditVerification, AuditVerifyOptions } from '../persistence/audit/chain-walk.js';
import { type AuditDigest, parseAuditDigest } from '../persistence/audit/digest.js';
import { SqliteAuditLog } from '../persistence/audit/sqlite-chain.js';
import { SchemaVersionError } from '../persistence/kernel/migrations.js';
import type { AuditHead, AuditRow } from '../protocol/audit.js';
import type { CliCommand } from './command.js';
import {
  CliUsageError,
  type FlagSpec,
  booleanFlag,
  parseCommandArgs,
  reportUsageError,
  stringFlag,
} from './command-args.js';
import { loadAuditPublicKey, writeAuditKeyPair } from './audit-key.js';
import { printDigest } from './audit-digest.js';
import { hasTable, openExistingDatabase, requireComponent } from './read-database.js';
import { auditOf, isPostgresUrl, openPostgresForReading } from './read-postgres.js';

export const AUDIT_USAGE = `Usage: switchboard audit verify --db PATH|URL [--expect-head SEQ:HASH] [--digest LINE]
                              [--public-key FILE [--require-signed-head]] [--json]
       switchboard audit digest --db PATH|URL [--public-key FILE]
       switchboard audit keygen --out FILE

Walks the hash-chained audit from its first row and checks every link:
each row's hash is SHA-256 over the domain tag, the previous row's hash and
the row's RFC 8785 canonical JSON, and the chain head kept beside the table
must name the last row. An edited, deleted, reordered or inserted row, or
rows cut from the end, are found; the first bad row is named with the
reason. The database is opened read-only.

audit digest prints the chain's signed head (its newest checkpoint, of
--public-key's key when given; the unsigned head when there is none) as one
line, after verifying the chain: keep it outside the database (a ticket, a
log, a second store). A writer of the database can rewind the chain to any
earlier state, even delete every row and checkpoint; audit verify --digest
LINE catches it.

Options:
  --db PATH               the SQLite file the Coordinator wrote (required;
                          never created), or postgres://USER[:PASSWORD]@
                          HOST:PORT/DB: a Coordinator's PostgreSQL database
                          (the same rows, hashing and checks)
  --expect-head SEQ:HASH  also check against a head noted elsewhere (as
                          printed by a previous verify): row SEQ must still
                          have HASH (the chain may have grown since); a
                          chain shorter than SEQ is truncated
  --digest LINE           the chain must extend a digest audit digest printed
                          (quote it): shorter is rolled-back (a cut, a rewind
                          to genesis), another hash at its row is
                          digest-mismatch (a rewrite); with --public-key, a
                          signed digest's signature is checked
                          (digest-signature)
  --public-key FILE       check the signed checkpoints of this Ed25519 key
                          (FILE.pub of audit keygen): a bad signature, a
                          checkpoint whose row hash differs (rewritten), or
                          one past the last row (truncated) is a break; rows
                          after the newest checkpoint are counted unsigned
  --require-signed-head   with --public-key: fail when any row follows the
                          newest checkpoint, or when no checkpoint signs the
                          chain at all, even an empty one (unsigned-head)
  --out FILE              keygen: write the private key to FILE (mode 0600,
                          never over an existing file) and the public key to
                          FILE.pub; give FILE to the Coordinator's --audit-key
  --json                  print one JSON object on stdout:
                          {"ok":true,"entries","head":{"seq","hash"}} or
                          {"ok":false,"seq","reason","detail","row"}
  -h, --help              show this help

Reasons: hash-mismatch (a row was changed), prev-hash-mismatch (rows
reordered, replaced or inserted), seq-gap (a row is missing), truncated
(rows cut from the end), head-mismatch (the head does not match the last
row), malformed-row (a row cannot be read back), checkpoint-signature (a
checkpoint does not verify), checkpoint-mismatch (a signed row hash
differs: the chain was rewritten), unsigned-head (rows past the newest
checkpoint, or no checkpoint at all, with --require-signed-head),
rolled-back (shorter than the --digest), digest-mismatch (the --digest's row
has another hash), digest-signature (the --digest does not verify with the
key).

Exit status: 0 when the chain is intact; 1 when it is not (the first bad
row is named) or a PostgreSQL does not answer; 2 for a usage error or a
database that is not a switchboard database with an audit.`;

/** Every flag the command accepts (each is documented in its --help; a test checks it). */
export const AUDIT_FLAGS: FlagSpec = {
  db: { type: 'string' },
  'expect-head': { type: 'string' },
  digest: { type: 'string' },
  'public-key': { type: 'string' },
  'require-signed-head': { type: 'boolean' },
  out: { type: 'string' },
  json: { type: 'boolean' },
};

function parseHead(text: string | undefined): AuditHead | undefined {
  if (text === undefined) return undefined;
  const match = /^([0-9]{1,15}):([0-9a-f]{64})$/.exec(text);
  if (match === null) throw new CliUsageError('--expect-head must be SEQ:HASH (a row number, a colon, 64 hex digits)');
  return { seq: Number(match[1]), hash: match[2]! };
}

/**
 * Walks the chain; on a break, also the row it names when that row can be read
 * (for context; the verdict does not depend on it).
 */
async function verifyWithRow(
  audit: AuditChain,
  options: AuditVerifyOptions,
): Promise<{ verification: AuditVerification; row: AuditRow | undefined }> {
  const verification = await audit.verifyChain(options);
  let row: AuditRow | undefined;
  if (!verification.ok) {
    row = await audit
      .list({ afterSeq: verification.seq - 1, limit: 1 })
      .then((rows) => rows.find((r) => r.seq === verification.seq))
      .catch(() => undefined);
  }
  return { verification, row };
}

function describeRow(row: AuditRow): string {
  const hop = row.hop === null ? '' : `, hop ${row.hop}`;
  return `row ${row.seq}: ${row.kind} of item ${row.itemId}${hop} by ${row.actor} at ${row.at}`;
}

async function runAudit(argv: string[]): Promise<number> {
  let opened: ReturnType<typeof openExistingDatabase>;
  let action: (chain: AuditChain) => Promise<number>;
  let db: string | undefined;
  try {
    const args = parseCommandArgs(argv, AUDIT_FLAGS, 1);
    const [sub] = args.positionals;
    if (sub === undefined) throw new CliUsageError("missing subcommand: 'verify', 'digest' or 'keygen'");
    if (sub === 'keygen') return keygen(stringFlag(args, 'out'), args.values);
    if (sub !== 'verify' && sub !== 'digest') {
      throw new CliUsageError(`unknown subcommand '${sub}' (expected 'verify', 'digest' or 'keygen')`);
    }
    if (args.values.out !== undefined) throw new CliUsageError('--out is an option of audit keygen');
    const publicKeyFile = stringFlag(args, 'public-key');
    const publicKey = publicKeyFile === undefined ? undefined : loadAuditPublicKey(publicKeyFile);
    if (sub === 'digest') {
      for (const flag of ['expect-head', 'digest', 'require-signed-head', 'json']) {
        if (args.values[flag] !== undefined) throw new CliUsageError(`--${flag} is not an option of audit digest`);
      }
      action = (chain) => printDigest(chain, publicKey);
    } else {
      const json = booleanFlag(args, 'json');
      const expectedHead = parseHead(stringFlag(args, 'expect-head'));
      const digest = parseDigest(stringFlag(args, 'digest'));
      const requireSignedHead = booleanFlag(args, 'require-signed-head');
      if (requireSignedHead && publicKeyFile === undefined) {
        throw new CliUsageError('--require-signed-head needs --public-key FILE');
      }
      const options: AuditVerifyOptions = {
        ...(expectedHead === undefined ? {} : { expectedHead }),
        ...(digest === undefined ? {} : { digest }),
        ...(publicKey === undefined ? {} : { publicKey, requireSignedHead }),
      };
      action = async (chain) => {
        const { verification, row } = await verifyWithRow(chain, options);
        return printVerification(verification, row, json);
      };
    }
    db = stringFlag(args, 'db');
    if (db !== undefined && isPostgresUrl(db)) return await onPostgres(db, action);
    opened = openExistingDatabase(db, 'read');
  } catch (error) {
    if (error instanceof CliUsageError) return reportUsageError('audit', error, AUDIT_USAGE);
    throw error;
  }
  try {
    requireComponent(opened, 'audit', 'audit');
  } catch (error) {
    opened.db.close();
    return reportUsageError('audit', error as CliUsageError, AUDIT_USAGE);
  }
  try {
    if (!hasTable(opened.db, 'audit_log') || !hasTable(opened.db, 'audit_head')) {
      // The schema says there is an audit, but its table was dropped.
      const verification: AuditVerification = {
        ok: false,
        seq: 1,
        reason: 'malformed-row',
        detail: 'the audit tables are missing',
      };
      return printVerification(verification, undefined, argv.includes('--json'));
    }
    let audit: SqliteAuditLog;
    try {
      audit = new SqliteAuditLog(opened.db, { readOnly: true });
    } catch (error) {
      if (error instanceof SchemaVersionError) {
        process.stderr.write(`switchboard audit: ${error.message}\n`);
        return 2;
      }
      throw error;
    }
    // verifyChain reads rows and head in one read transaction: the same snapshot, even while a Coordinator appends.
    return await action(audit.chain);
  } finally {
    opened.db.close();
  }
}

function parseDigest(text: string | undefined): AuditDigest | undefined {
  if (text === undefined) return undefined;
  try {
    return parseAuditDigest(text);
  } catch (error) {
    throw new CliUsageError(`--digest: ${(error as Error).message}`);
  }
}

/** `--db postgres://...`: the same chain kept in PostgreSQL. */
async function onPostgres(url: string, action: (chain: AuditChain) => Promise<number>): Promise<number> {
  let opened: Awaited<ReturnType<typeof openPostgresForReading>>;
  try {
    opened = await openPostgresForReading(url, 'audit');
  } catch (error) {
    process.stderr.write(`switchboard audit: ${(error as Error).message}\n`);
    return 1;
  }
  try {
    let audit: AuditChain;
    try {
      audit = await auditOf(opened);
    } catch (error) {
      process.stderr.write(`switchboard audit: ${opened.where}: ${(error as Error).message}\n`);
      return error instanceof SchemaVersionError ? 2 : 1;
    }
    return await action(audit);
  } catch (error) {
    process.stderr.write(`switchboard audit: ${opened.where}: ${(error as Error).message}\n`);
    return 1;
  } finally {
    await opened.close();
  }
}

function printVerification(verification: AuditVerification, row: AuditRow | undefined, json: boolean): number {
  if (json) {
    process.stdout.write(`${JSON.stringify(verification.ok ? verification : { ...verification, row: row ?? null })}\n`);
  } else if (verification.ok) {
    const c = verification.checkpoints;
    process.stdout.write(
      `Audit chain intact: ${verification.entries} entries\n` +
        `Head: ${verification.head.seq}:${verification.head.hash}\n` +
        (c === undefined
          ? ''
          : `Signed: ${c.verified} checkpoint(s) of key ${c.keyId}, the newest at row ${c.signedSeq}; ` +
            `${c.unsignedRows} row(s) after it unsigned` +
            (c.otherKeys > 0 ? ` (${c.otherKeys} checkpoint(s) of other keys not checked)` : '') +
            '\n'),
    );
  } else {
    process.stdout.write(
      `Audit chain BROKEN at row ${verification.seq} (${verification.reason}): ${verification.detail}\n` +
        (row === undefined ? '' : `  ${describeRow(row)}\n`),
    );
  }
  return verification.ok ? 0 : 1;
}

function keygen(out: string | undefined, values: Record<string, unknown>): number {
  for (const flag of ['db', 'expect-head', 'digest', 'public-key', 'require-signed-head', 'json']) {
    if (values[flag] !== undefined) throw new CliUsageError(`--${flag} is not an option of audit keygen`);
  }
  if (out === undefined) throw new CliUsageError('audit keygen needs --out FILE');
  const written = writeAuditKeyPair(out);
  process.stdout.write(
    `Private key: ${written.privateFile} (mode 0600; give it to the Coordinator's --audit-key, keep it off the database host's backups)\n` +
      `Public key: ${written.publicFile} (for audit verify --public-key)\n` +
      `Key id: ${written.keyId}\n`,
  );
  return 0;
}

export const auditCommand: CliCommand = {
  name: 'audit',
  summary:
    'verify the hash-chained audit of a database, print its signed head to keep elsewhere, or make a checkpoint key (audit verify, audit digest, audit keygen)',
  usage: AUDIT_USAGE,
  run: runAudit,
};
