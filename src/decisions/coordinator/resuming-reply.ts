import type { HopRecord } from '../../workflow/records.js';
import type { Work } from './work.js';

/**
 * The reply that put a stage hop out again after it stood down: the answer
 * to its question (kept on the query hop), or its children's outcomes (kept
 * on the hop itself). What re-publishing the hop sends (a bus that lost its
 * messages, a hop past its timeout), instead of its start: a worker given the
 * start again would replay the suspension its first delivery recorded and
 * start the children, or ask the question, a second time.
 */
export interface ResumingReply {
  /** The reply's result envelope, as it was published. */
  body: unknown;
  /** The query it answered; null for a hop resumed by its children. */
  query: HopRecord | null;
}

/**
 * The reply that resumed `hop` last, or undefined when the hop is out on its
 * start. The run's directive names the continuation the hop is out under;
 * a run whose directive does not name this hop (a snapshot from before the
 * directive was kept) takes the last reply recorded.
 */
export function resumingReply(work: Work, hop: HopRecord): ResumingReply | undefined {
  const answered = [...work.hops.values()].filter(
    (q) => q.kind === 'query' && q.askedBy === hop.id && q.reply !== null,
  );
  const own = hop.reply ?? null;
  const directive = work.ctx?.directive;
  if (directive?.kind === 'dispatch' && directive.hop === hop.hop && directive.attempt === hop.attempt) {
    const resume = directive.resume;
    if (resume === null) return undefined;
    // A reply that names no continuation (none recorded) never equals the one the directive resumes.
    if (continuationOf(own) === resume) return { body: own, query: null };
    const query = answered.find((q) => q.continuation === resume);
    if (query !== undefined) return { body: query.reply, query };
  }
  const last = answered.at(-1);
  if (last !== undefined) return { body: last.reply, query: last };
  return own === null ? undefined : { body: own, query: null };
}

/** The continuation a reply resumes (its `askedBy` header), if it names one. */
export function continuationOf(reply: unknown): string | undefined {
  const token = (reply as { headers?: { askedBy?: { continuationToken?: unknown } } } | null)?.headers?.askedBy
    ?.continuationToken;
  return typeof token === 'string' ? token : undefined;
}
