import { z } from 'zod';

/**
 * What a model agent's suspended hop keeps in the Context Engine (the
 * suspension's `state`): the whole conversation so far, the tool call the
 * answer will resume, how many model steps ran, and what they cost. A new
 * worker process resumes the hop from it with nothing else.
 */

/** Tokens and dollars a model agent spent in one hop, summed over its model steps. */
export const AgentSpendSchema = z.object({
  inputTokens: z.number().int().nonnegative(),
  outputTokens: z.number().int().nonnegative(),
  /** Of the input tokens, those read from the provider's prompt cache. */
  cachedInputTokens: z.number().int().nonnegative(),
  /** Of the output tokens, those spent reasoning. */
  reasoningTokens: z.number().int().nonnegative(),
  costUsd: z.number().nonnegative(),
});
/** Tokens and dollars spent (inferred from `AgentSpendSchema`). */
export interface AgentSpend extends z.infer<typeof AgentSpendSchema> {}

/** The suspending tool call the answer (or the children's outcomes) resumes, as its tool result. */
export const PendingToolCallSchema = z.object({
  toolCallId: z.string().min(1).max(256),
  toolName: z.enum(['ask', 'delegate']),
});
/** A suspending tool call (inferred from `PendingToolCallSchema`). */
export interface PendingToolCall extends z.infer<typeof PendingToolCallSchema> {}

/** A model agent's checkpoint, version 1. */
export const ModelAgentCheckpointSchema = z.object({
  kind: z.literal('model-agent'),
  version: z.literal(1),
  /** The model that ran the conversation (`provider:modelId`). */
  model: z.string().min(1).max(512),
  /** The conversation as the AI SDK's model messages (system prompt aside): user, assistant (with tool calls) and tool results. */
  messages: z.array(z.record(z.string(), z.unknown())),
  /** Model steps run in this hop so far: the next step's index. */
  step: z.number().int().nonnegative(),
  /** What the hop spent so far, over all its segments (the budget checks it). */
  spent: AgentSpendSchema,
  pending: PendingToolCallSchema,
});
/** A model agent's checkpoint (inferred from `ModelAgentCheckpointSchema`). */
export interface ModelAgentCheckpoint extends z.infer<typeof ModelAgentCheckpointSchema> {}
