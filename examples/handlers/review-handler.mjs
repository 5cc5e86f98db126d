// A handler module for `switchboard worker --handler` (docs/handlers.md).
// It serves the two roles of the workflow in review.json, beside it:
//   writer    drafts a text from the work item's input, and answers the
//             reviewer's question when asked;
//   reviewer  reads the writer's draft from context.outputs, asks the writer
//             who the text is for (suspends), and approves it on the answer.
// A request with no topic is refused with a NonRetryableError: the hop fails
// at once, without retries, and the workflow routes on its type.
import { NonRetryableError, complete, suspend } from 'a2a-switchboard';

/** @typedef {import('a2a-switchboard').HopInput} HopInput */
/** @typedef {import('a2a-switchboard').HandlerResult} HandlerResult */

/**
 * The text of some parts.
 * @param {import('a2a-switchboard').Part[]} parts
 */
function textOf(parts) {
  return parts.map((part) => (part.kind === 'text' ? part.text : '')).join(' ');
}

/**
 * @param {HopInput} hop
 * @returns {HandlerResult}
 */
function writer(hop) {
  const request = textOf(hop.message.parts);
  // A query from a suspended hop (the reviewer's question): the completion is the answer.
  if (hop.headers.askedBy !== undefined) {
    return complete({ parts: [{ kind: 'text', text: 'For the operators who upgrade it.' }] });
  }
  if (!/\p{L}/u.test(request)) {
    // Not worth a retry: the hop fails now, and review.json ends the item on this type.
    throw new NonRetryableError(`the request "${request}" names no topic`, { type: 'NoTopic' });
  }
  return complete({
    parts: [{ kind: 'text', text: `Draft: ${request}.` }],
    usage: { inputTokens: 120, outputTokens: 40, costUsd: 0.0004, model: 'scripted' },
    memory: { topic: request },
  });
}

/**
 * @param {HopInput} hop
 * @returns {HandlerResult}
 */
function reviewer(hop) {
  const { context, resume } = hop;
  if (resume === undefined) {
    // The item's completed hops, oldest first: the writer's draft is the last output it made.
    const draft = context.outputs.filter((output) => output.role === 'writer').at(-1);
    if (draft === undefined) throw new NonRetryableError('there is no draft to review', { type: 'NoDraft' });
    // Ask the writer and stand down: no reviewer holds the hop while the question waits.
    // What the resumed hop needs goes in `state` (the writer's answer joins context.outputs too).
    return suspend({
      ask: { role: 'writer', message: { role: 'agent', parts: [{ kind: 'text', text: 'Who is this text for?' }] } },
      state: { draft: textOf(draft.parts), draftHop: draft.hop },
    });
  }
  // Resumed: the state saved at the suspension, and the writer's reply.
  const { draft, draftHop } = /** @type {{ draft: string, draftHop: number }} */ (resume.state);
  const topic = String(context.memory.topic);
  return complete({
    parts: [
      {
        kind: 'text',
        text: `Approved "${draft}" (hop ${draftHop}, about ${topic}) for: ${textOf(resume.reply.parts)}`,
      },
    ],
    artifacts: [{ artifactId: 'review', name: 'review.md', parts: [{ kind: 'text', text: '- reads well\n- ship it' }] }],
  });
}

/** @type {Record<string, (hop: HopInput) => HandlerResult>} */
const roles = { writer, reviewer };

/** @type {import('a2a-switchboard').WorkHandler} */
export default function handler(hop) {
  const role = roles[hop.role];
  if (role === undefined) throw new NonRetryableError(`this module serves no role ${hop.role}`);
  return role(hop);
}
