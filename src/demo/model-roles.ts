import type { WorkHandler } from '../actors/worker/handler.js';
import { AgentFileError, agentModel } from '../agents/agent-file.js';
import { createModelAgent } from '../agents/model-agent.js';
import type { DemoProvider } from './model-choice.js';

/**
 * The dev SDLC roles as model agents (`switchboard demo --models`): one model
 * for every role, each with its instructions; coding may ask the architect.
 * Each hop is bounded (`maxSteps`, a per-hop budget) so that a demo never
 * spends much.
 */

const SYSTEM: Record<string, string> = {
  architect:
    'You are the architect of a small software team. Given a feature request, write a short design (at most 120 words): the components, the data, the risks. Answer questions from the coding agent in two sentences.',
  coding:
    'You are the coding agent. Given a request and its design, describe the change you make (files, functions) in at most 120 words. If a design decision is missing, ask the architect once with the ask tool.',
  testing: 'You are the testing agent. Given the change, list the tests you ran and their result in at most 80 words.',
  devops: 'You are the devops agent. Given the tested change, describe the rollout in at most 60 words.',
};

/** Per hop: a few model calls and a few cents at most. */
const HOP_LIMITS = { maxSteps: 4, budget: { maxCostUsd: 0.05 } };

/**
 * The handlers of the dev SDLC roles, all on `provider`'s model. Throws the
 * agent file's error (with the `npm install` to run) when the provider
 * package or `ai` is not installed.
 */
export async function modelDemoHandlers(provider: DemoProvider): Promise<Record<string, WorkHandler>> {
  try {
    await import('ai');
  } catch {
    throw new AgentFileError('model agents need the Vercel AI SDK: install it with `npm install ai`');
  }
  const model = await agentModel(
    { provider: provider.packageName, export: provider.exportName, model: provider.model },
    process.cwd(),
  );
  const handlers: Record<string, WorkHandler> = {};
  for (const [role, system] of Object.entries(SYSTEM)) {
    handlers[role] = createModelAgent({
      model,
      system,
      ...HOP_LIMITS,
      ask: role === 'coding' ? { roles: ['architect'] } : false,
    });
  }
  return handlers;
}
