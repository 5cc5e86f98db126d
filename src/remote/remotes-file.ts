import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { z } from 'zod';
import { type V1AgentCard, V1AgentCardSchema } from '../protocol/a2a-v1/schemas.js';
import { AgentNameSchema, foldAgentName } from '../protocol/agent.js';
import { named } from '../protocol/wire-schema.js';
import { RemoteAgentError } from './remote-errors.js';

/**
 * The remote A2A agents of a broker: one row per remote, under the local
 * name it is registered as. The file is JSON beside the broker's database
 * (`PATH.remotes.json`), written whole to a temporary file and renamed over
 * the old one, readable by its owner only: it holds the bearer keys sent to
 * the remotes.
 */

const RemoteRowSchema = z.object({
  /** The local agent's name: what local agents send to. */
  name: AgentNameSchema,
  /** The URL the remote was added by: its base URL, or its card's URL. */
  url: z.string().url(),
  /** The bearer key sent to the remote (`Authorization: Bearer`), when it needs one. */
  token: z.string().min(1).optional(),
  /** The remote's card, as it was read when the remote was added. */
  card: named<V1AgentCard>(V1AgentCardSchema),
  addedAt: z.number().int(),
});

const RemotesFileSchema = z.object({ remoteAgents: z.literal(1), remotes: z.array(RemoteRowSchema) });

/** One remote agent as the remotes file holds it. */
export type RemoteAgentRow = z.infer<typeof RemoteRowSchema>;

/** The remotes file of a broker's database file: beside it. */
export function defaultRemotesFile(db: string): string {
  return `${db}.remotes.json`;
}

/** The remotes of a file (none when it does not exist yet). */
export function readRemotes(file: string): RemoteAgentRow[] {
  if (!existsSync(file)) return [];
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new RemoteAgentError('REMOTE_FILE', `cannot read the remotes file ${file}: ${(error as Error).message}`, {
      details: { file },
      cause: error,
    });
  }
  const parsed = RemotesFileSchema.safeParse(raw);
  if (!parsed.success) {
    throw new RemoteAgentError(
      'REMOTE_FILE',
      `${file} is not a remotes file (${parsed.error.issues[0]?.message}): it is written by switchboard agents add-remote; do not edit it by hand`,
      { details: { file } },
    );
  }
  return parsed.data.remotes;
}

function writeRemotes(file: string, remotes: readonly RemoteAgentRow[]): void {
  const temporary = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(temporary, `${JSON.stringify({ remoteAgents: 1, remotes }, null, 2)}\n`, { mode: 0o600 });
    renameSync(temporary, file);
  } catch (error) {
    throw new RemoteAgentError('REMOTE_FILE', `cannot write the remotes file ${file}: ${(error as Error).message}`, {
      details: { file },
      cause: error,
    });
  }
}

/** Adds a remote under its local name (refused when the name is taken). */
export function putRemote(file: string, row: RemoteAgentRow): void {
  const remotes = readRemotes(file);
  if (remotes.some((r) => foldAgentName(r.name) === foldAgentName(row.name))) {
    throw new RemoteAgentError(
      'REMOTE_NAME_TAKEN',
      `a remote agent is already named "${row.name}": remove it first (switchboard agents remove-remote ${row.name}) or pick another --name`,
      { details: { name: row.name } },
    );
  }
  writeRemotes(file, [...remotes, row]);
}

/** Removes the remote of a local name; answers the row removed. */
export function dropRemote(file: string, name: string): RemoteAgentRow {
  const remotes = readRemotes(file);
  const row = remotes.find((r) => foldAgentName(r.name) === foldAgentName(name));
  if (row === undefined) {
    throw new RemoteAgentError(
      'REMOTE_UNKNOWN',
      `no remote agent is named "${name}": list them with switchboard agents remotes`,
      { details: { name } },
    );
  }
  writeRemotes(
    file,
    remotes.filter((r) => r !== row),
  );
  return row;
}

/**
 * Keeps a newer card of a remote (read again when its bridge starts): the
 * row of `name` at `url`, if it is still there; whether anything changed.
 */
export function replaceRemoteCard(file: string, name: string, url: string, card: RemoteAgentRow['card']): boolean {
  const remotes = readRemotes(file);
  const at = remotes.findIndex((r) => r.name === name && r.url === url);
  if (at === -1 || JSON.stringify(remotes[at]!.card) === JSON.stringify(card)) return false;
  writeRemotes(
    file,
    remotes.map((r, i) => (i === at ? { ...r, card } : r)),
  );
  return true;
}
