import { AuditLog, type AuditVerification } from '../persistence/audit/chain.js';
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
import { hasTable, openExistingDatabase, requireComponent } from './read-database.js';

export const AUDIT_USAGE = `Usage: switchboard audit verify --db PATH [--expect-head SEQ:HASH] [--json]

Walks the hash-chained audit from its first row and checks every link:
each row's hash is SHA-256 over the domain tag, the previous row's hash and
the row's RFC 8785 canonical JSON, and the chain head kept beside the table
must name the last row. An edited, deleted, reordered or inserted row, or
rows cut from the end, are found; the first bad row is named with the
reason. The database is opened read-only.

Options:
  --db PATH               the SQLite file the Coordinator wrote (required;
                          never created)
  --expect-head SEQ:HASH  also check against a head kept elsewhere (as
                          printed by a previous verify): catches rows cut
                          from the end together with the stored head
  --json                  print one JSON object on stdout:
                          {"ok":true,"entries","head":{"seq","hash"}} or
                          {"ok":false,"seq","reason","detail","row"}
  -h, --help              show this help

Reasons: hash-mismatch (a row was changed), prev-hash-mismatch (rows
reordered, replaced or inserted), seq-gap (a row is missing), truncated
(rows cut from the end), head-mismatch (the head does not match the last
row), malformed-row (a row cannot be read back).

Exit status: 0 when the chain is intact; 1 when it is not (the first bad
row is named); 2 for a usage error or a file that is not a switchboard
database with an audit.`;

/** Every flag the command accepts (each is documented in its --help; a test checks it). */
export const AUDIT_FLAGS: FlagSpec = {
  db: { type: 'string' },
  'expect-head': { type: 'string' },
  json: { type: 'boolean' },
};

function parseHead(text: string | undefined): AuditHead | undefined {
  if (text === undefined) return undefined;
  const match = /^([0-9]{1,15}):([0-9a-f]{64})$/.exec(text);
  if (match === null) throw new CliUsageError('--expect-head must be SEQ:HASH (a row number, a colon, 64 hex digits)');
  return { seq: Number(match[1]), hash: match[2]! };
}

/** The row a break names, when it can be read (for context; the verdict does not depend on it). */
function rowAt(audit: AuditLog, seq: number): AuditRow | undefined {
  try {
    return audit.list({ afterSeq: seq - 1, limit: 1 }).find((r) => r.seq === seq);
  } catch {
    return undefined;
  }
}

function describeRow(row: AuditRow): string {
  const hop = row.hop === null ? '' : `, hop ${row.hop}`;
  return `row ${row.seq}: ${row.kind} of item ${row.itemId}${hop} by ${row.actor} at ${row.at}`;
}

async function runAudit(argv: string[]): Promise<number> {
  let json: boolean;
  let opened: ReturnType<typeof openExistingDatabase>;
  let expectedHead: AuditHead | undefined;
  try {
    const args = parseCommandArgs(argv, AUDIT_FLAGS, 1);
    const [sub] = args.positionals;
    if (sub === undefined) throw new CliUsageError("missing subcommand: 'verify'");
    if (sub !== 'verify') throw new CliUsageError(`unknown subcommand '${sub}' (expected 'verify')`);
    json = booleanFlag(args, 'json');
    expectedHead = parseHead(stringFlag(args, 'expect-head'));
    opened = openExistingDatabase(stringFlag(args, 'db'), 'read');
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
    let verification: AuditVerification;
    let row: AuditRow | undefined;
    if (!hasTable(opened.db, 'audit_log') || !hasTable(opened.db, 'audit_head')) {
      // The schema says there is an audit, but its table was dropped.
      verification = { ok: false, seq: 1, reason: 'malformed-row', detail: 'the audit tables are missing' };
    } else {
      let audit: AuditLog;
      try {
        audit = new AuditLog(opened.db);
      } catch (error) {
        if (error instanceof SchemaVersionError) {
          process.stderr.write(`switchboard audit: ${error.message}\n`);
          return 2;
        }
        throw error;
      }
      // One read transaction: rows and head from the same snapshot, even while a Coordinator appends.
      verification = opened.db
        .transaction(() => audit.verifyChain(expectedHead === undefined ? {} : { expectedHead }))
        .deferred();
      if (!verification.ok) row = rowAt(audit, verification.seq);
    }
    if (json) {
      process.stdout.write(
        `${JSON.stringify(verification.ok ? verification : { ...verification, row: row ?? null })}\n`,
      );
    } else if (verification.ok) {
      process.stdout.write(
        `Audit chain intact: ${verification.entries} entries\n` +
          `Head: ${verification.head.seq}:${verification.head.hash}\n`,
      );
    } else {
      process.stdout.write(
        `Audit chain BROKEN at row ${verification.seq} (${verification.reason}): ${verification.detail}\n` +
          (row === undefined ? '' : `  ${describeRow(row)}\n`),
      );
    }
    return verification.ok ? 0 : 1;
  } finally {
    opened.db.close();
  }
}

export const auditCommand: CliCommand = {
  name: 'audit',
  summary: 'verify the hash-chained audit of a database (audit verify)',
  usage: AUDIT_USAGE,
  run: runAudit,
};
