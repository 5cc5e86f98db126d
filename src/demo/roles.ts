import { NonRetryableError, type WorkHandler, complete, suspend } from '../actors/worker/worker.js';
import type { Part } from '../protocol/parts.js';
import { type DemoModel, demoUsage } from './pricing.js';

/**
 * The demo's role agents: deterministic scripted handlers, clearly a demo.
 * A real LLM agent plugs into the same `WorkHandler` interface (it gets the
 * hop's message, the work item's context and, on a resume, the reply; it
 * returns `complete(...)` or `suspend(...)`, with its usage).
 *
 * The script, per work item:
 * - architect writes a design;
 * - coding asks the architect a question (suspends: no coding worker holds
 *   the hop while it waits), resumes with the answer and writes the change;
 * - testing fails the first time (`TestsFailed`, which the workflow sends
 *   back to coding) and passes after coding's fix;
 * - devops deploys once the release manager approves.
 */

export const DEMO_ROLE_MODELS: Record<string, DemoModel> = {
  architect: 'demo-large',
  coding: 'demo-medium',
  testing: 'demo-small',
  devops: 'demo-small',
};

function text(parts: readonly Part[]): string {
  return parts
    .filter((p): p is Extract<Part, { kind: 'text' }> => p.kind === 'text')
    .map((p) => p.text)
    .join(' ');
}

/** A stable number from a string, for token counts that differ per request but not per run. */
function spread(seed: string, range: number): number {
  let h = 0;
  for (let i = 0; i < seed.length; i++) h = (h * 31 + seed.charCodeAt(i)) >>> 0;
  return h % range;
}

function said(answer: string): Part[] {
  return [{ kind: 'text', text: answer }];
}

const architect: WorkHandler = ({ headers, message }) => {
  const request = text(message.parts);
  const model = DEMO_ROLE_MODELS.architect!;
  if (headers.askedBy !== undefined) {
    return complete({
      parts: said('Use PostgreSQL with one row per key and a token bucket; keep the limits in config.'),
      usage: demoUsage(model, 900 + spread(request, 300), 180 + spread(request, 60)),
    });
  }
  return complete({
    parts: said(`Design for "${request}": a middleware, a store interface, metrics and a rollout flag.`),
    usage: demoUsage(model, 1_800 + spread(request, 600), 650 + spread(request, 200)),
  });
};

const coding: WorkHandler = ({ message, context, resume }) => {
  const request = text(message.parts);
  const model = DEMO_ROLE_MODELS.coding!;
  if (resume !== undefined) {
    return complete({
      parts: said(`Implemented "${request}" as designed, on the architect's answer: ${text(resume.reply.parts)}`),
      usage: demoUsage(model, 5_200 + spread(request, 900), 2_100 + spread(request, 500)),
    });
  }
  const visits = context.outputs.filter((o) => o.role === 'coding').length;
  if (visits === 0) {
    return suspend({
      ask: { role: 'architect', message: { role: 'agent', parts: said('Which store should the limits live in?') } },
      state: { request },
      usage: demoUsage(model, 2_400 + spread(request, 400), 120),
    });
  }
  return complete({
    parts: said('Fixed the off-by-one in the refill and the failing test.'),
    usage: demoUsage(model, 3_100 + spread(request, 500), 900 + spread(request, 200)),
  });
};

const testing: WorkHandler = ({ message, context }) => {
  const request = text(message.parts);
  const codings = context.outputs.filter((o) => o.role === 'coding').length;
  if (codings <= 1) {
    throw new NonRetryableError('2 of 48 tests failed (refill boundary)', { type: 'TestsFailed' });
  }
  return complete({
    parts: said('48 of 48 tests passed.'),
    usage: demoUsage(DEMO_ROLE_MODELS.testing!, 1_500 + spread(request, 300), 220),
  });
};

const devops: WorkHandler = ({ message }) => {
  const request = text(message.parts);
  return complete({
    parts: said('Deployed behind a flag to 5%, then 100%; error rate unchanged.'),
    usage: demoUsage(DEMO_ROLE_MODELS.devops!, 800 + spread(request, 200), 150),
  });
};

/** The scripted handlers by role. */
export const DEMO_HANDLERS: Record<string, WorkHandler> = { architect, coding, testing, devops };
