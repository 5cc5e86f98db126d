import { AGENTS_PAGE_MAX_BYTES, DEFAULT_AGENTS_LIMIT } from '../../protocol/bounds.js';
import type { AgentCard } from '../../protocol/agent.js';

/** One agent as paging sees it: its registration order and its card. */
export interface PagedAgent {
  readonly order: number;
  readonly card: AgentCard;
}

/** One page of `a2a.agents.list`: its cards and, when more may follow, the cursor of the next page. */
export interface AgentPage {
  agents: AgentCard[];
  nextCursor?: string;
}

export interface AgentPageOptions {
  /** The previous page's `nextCursor`: the page starts after the agent of that order. */
  cursor?: string;
  /** Cards at most (default `DEFAULT_AGENTS_LIMIT`). */
  limit?: number;
  /** Bytes of cards at most (default `AGENTS_PAGE_MAX_BYTES`); the first card is always taken. */
  maxBytes?: number;
  /** Bytes of one card as JSON. */
  sizeOf: (card: AgentCard) => number;
}

/**
 * The page of `agents` (any order) after `cursor`, in registration order:
 * at most `limit` cards and `maxBytes` bytes of them. The cursor is the order
 * of the last card given, so that agents registering or leaving between pages
 * neither repeat nor shift a page: a later page holds the agents registered
 * since, and a card is never given twice.
 */
export function pageOfAgents(agents: readonly PagedAgent[], options: AgentPageOptions): AgentPage {
  const after = options.cursor === undefined ? -1 : Number(options.cursor);
  const limit = options.limit ?? DEFAULT_AGENTS_LIMIT;
  const maxBytes = options.maxBytes ?? AGENTS_PAGE_MAX_BYTES;
  const candidates = agents.filter((a) => a.order > after).sort((a, b) => a.order - b.order);
  const page: AgentCard[] = [];
  let bytes = 0;
  let last = after;
  for (const agent of candidates) {
    if (page.length >= limit) break;
    const size = options.sizeOf(agent.card);
    if (page.length > 0 && bytes + size > maxBytes) break;
    page.push(agent.card);
    bytes += size;
    last = agent.order;
  }
  if (page.length === candidates.length) return { agents: page };
  return { agents: page, nextCursor: String(last) };
}
