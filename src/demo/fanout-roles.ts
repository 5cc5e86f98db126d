import { type WorkHandler, complete } from '../actors/worker/worker.js';
import type { Part } from '../protocol/parts.js';
import { demoUsage } from './pricing.js';

/**
 * The demo's role agents for the review fan-out workflow: deterministic
 * scripted handlers, clearly a demo, that speak in `data` parts so the
 * workflow can map over and route on what they say.
 *
 * The script, per work item:
 * - architect splits the request into three tasks (`{ tasks: [...] }`);
 * - coding writes each task as its own child work item (`{ task, patch }`),
 *   and a fix (`{ fixed: true }`) when QA asks for one;
 * - security passes (`{ verdict: "ok" }`);
 * - QA asks for changes on the first review and approves once fixed;
 * - devops releases once the release manager approves.
 */

function textOf(parts: readonly Part[]): string {
  return parts
    .filter((p): p is Extract<Part, { kind: 'text' }> => p.kind === 'text')
    .map((p) => p.text)
    .join(' ');
}

function dataOf(parts: readonly Part[]): Record<string, unknown> | undefined {
  const data = parts.find((p) => p.kind === 'data');
  return data?.kind === 'data' ? data.data : undefined;
}

/** A stable number from a string, for token counts that differ per request but not per run. */
function spread(seed: string, range: number): number {
  let h = 0;
  for (let i = 0; i < seed.length; i++) h = (h * 31 + seed.charCodeAt(i)) >>> 0;
  return h % range;
}

const architect: WorkHandler = ({ message }) => {
  const request = textOf(message.parts);
  return complete({
    parts: [
      { kind: 'text', text: `Plan for "${request}": three tasks.` },
      { kind: 'data', data: { tasks: ['schema and storage', 'API endpoint', 'UI and docs'] } },
    ],
    usage: demoUsage('demo-large', 1_500 + spread(request, 400), 400 + spread(request, 100)),
  });
};

const coding: WorkHandler = ({ message }) => {
  const request = textOf(message.parts);
  const data = dataOf(message.parts);
  // A map's element arrives as `{ value }`; a fix gets the joined reviews.
  if (data !== undefined && typeof data.value === 'string') {
    return complete({
      parts: [
        { kind: 'data', data: { task: data.value, patch: `+ ${data.value} (${request.length} chars of request)` } },
      ],
      usage: demoUsage('demo-medium', 2_000 + spread(data.value, 600), 900 + spread(data.value, 300)),
    });
  }
  return complete({
    parts: [{ kind: 'data', data: { fixed: true, note: 'addressed the review comments' } }],
    usage: demoUsage('demo-medium', 1_200 + spread(request, 300), 500),
  });
};

const security: WorkHandler = ({ message }) =>
  complete({
    parts: [{ kind: 'data', data: { verdict: 'ok', findings: [] } }],
    usage: demoUsage('demo-small', 900 + spread(textOf(message.parts), 200), 120),
  });

const qa: WorkHandler = ({ message }) => {
  const fixed = dataOf(message.parts)?.fixed === true;
  return complete({
    parts: [
      {
        kind: 'data',
        data: fixed
          ? { verdict: 'approved' }
          : { verdict: 'changes-requested', comments: ['the API endpoint lacks a test for an empty body'] },
      },
    ],
    usage: demoUsage('demo-small', 1_100 + spread(textOf(message.parts), 200), 160),
  });
};

const devops: WorkHandler = ({ message }) =>
  complete({
    parts: [{ kind: 'text', text: `Released "${textOf(message.parts)}" behind a flag.` }],
    usage: demoUsage('demo-small', 700, 120),
  });

/** The scripted handlers of the review fan-out workflow, by role. */
export const FANOUT_HANDLERS: Record<string, WorkHandler> = { architect, coding, security, qa, devops };
