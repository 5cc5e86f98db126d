import { NonRetryableError } from '../actors/worker/errors.js';
import {
  type HandlerResult,
  type HopInput,
  type WorkHandler,
  complete,
  spawn,
  suspend,
} from '../actors/worker/handler.js';
import {
  type AgentSpend,
  type ModelAgentCheckpoint,
  ModelAgentCheckpointSchema,
  type PendingToolCall,
} from '../protocol/model-agent-checkpoint.js';
import type { Part } from '../protocol/parts.js';
import type { Usage } from '../protocol/work-envelope.js';
import {
  type ConversationMessage,
  type ToolOutput,
  firstPrompt,
  jsonInText,
  resumeOutput,
  toolMessage,
  toolOutput,
  userMessage,
} from './conversation.js';
import {
  DEFAULT_PRICING,
  type ModelPricing,
  NO_SPEND,
  type PricingTable,
  addStep,
  checkPricing,
  priceOf,
  stepCost,
} from './pricing.js';
import { type ModelStep, type ModelToolCall, type ToolDeclaration, callModel, outputSchemaOf } from './sdk.js';
import { type AgentBudget, budgetStop, modelStepKey, toolStepKey } from './steps.js';
import { ASK_TOOL, DELEGATE_TOOL, parseAsk, parseDelegate } from './suspending-tools.js';

/**
 * A language model as the AI SDK gives it (`openai('gpt-4o')`,
 * `anthropic('claude-sonnet-4-0')`, a `MockLanguageModelV3`): the fields
 * read here, so that the type needs no `ai` installed.
 */
export interface AgentLanguageModel {
  readonly specificationVersion: string;
  readonly provider: string;
  readonly modelId: string;
}

/**
 * A tool as the AI SDK's `tool()` makes it: what the model reads
 * (`description`, `inputSchema`: zod, Standard Schema or `jsonSchema()`), and
 * `execute`, run once per call whatever the redeliveries (its value is
 * recorded; give external systems `effects.key` of the call as their
 * idempotency key).
 */
export interface AgentTool {
  description?: string;
  inputSchema: unknown;
  execute?(input: never, options: { toolCallId: string; messages: unknown[]; abortSignal: AbortSignal }): unknown;
}

/** What a model agent is: its model, instructions, tools, prices and limits. */
export interface ModelAgentOptions {
  /** The model (any AI SDK provider's language model). */
  model: AgentLanguageModel;
  /** The system prompt. */
  system?: string;
  /** Tools the model may call, by name (`ask` and `delegate` are the agent's own). */
  tools?: Record<string, AgentTool>;
  /** The model's price, or a table to look it up in (default: `DEFAULT_PRICING`); a model with no price is refused. */
  pricing?: ModelPricing | PricingTable;
  /** Model calls per hop, over its suspensions (default 20): one more fails the hop `MaxStepsExceeded`. */
  maxSteps?: number;
  /** What a hop may spend: checked before every model call; the hop fails `BudgetExceeded` when spent. */
  budget?: AgentBudget;
  /** A structured answer (zod, Standard Schema or `jsonSchema()`): the final text is parsed and checked, and becomes a data part. */
  outputSchema?: unknown;
  /** The `ask({ role, question })` tool: on by default; `false` removes it; `{ roles }` limits whom it asks. */
  ask?: boolean | { roles: string[] };
  /** The `delegate({ workflow, input, budget })` tool, which runs child work items: off by default. */
  delegate?: boolean;
  /** The first user message of a hop (default: the earlier hops' outputs, then the hop's input). */
  prompt?: (hop: HopInput) => string;
  /**
   * Stream each model call's text, as the model writes it, as artifact
   * chunks of the hop (`hop.stream`): on by default where the worker gives a
   * stream; `false` makes each call whole (`generateText`).
   */
  stream?: boolean;
}

const DEFAULT_MAX_STEPS = 20;

function priceFor(options: ModelAgentOptions): ModelPricing {
  const given = options.pricing;
  const modelId = options.model.modelId;
  if (given !== undefined && typeof (given as ModelPricing).inputPerMTok === 'number') {
    return checkPricing(given as ModelPricing, modelId);
  }
  const table = (given as PricingTable | undefined) ?? DEFAULT_PRICING;
  const price = priceOf(table, modelId);
  if (price === undefined) {
    throw new NonRetryableError(
      `no price for model ${modelId}: give createModelAgent a pricing ({ inputPerMTok, outputPerMTok, cachedInputPerMTok? }, USD per million tokens)`,
      { type: 'InvalidPricing' },
    );
  }
  return checkPricing(price, modelId);
}

function segmentUsage(spent: AgentSpend, since: AgentSpend, model: string): Usage {
  return {
    inputTokens: spent.inputTokens - since.inputTokens,
    outputTokens: spent.outputTokens - since.outputTokens,
    costUsd: Math.max(0, spent.costUsd - since.costUsd),
    model,
  };
}

/**
 * A worker handler that runs a model through the Vercel AI SDK: the hop's
 * input (after the item's earlier outputs) is the first user message; the
 * model calls tools until it answers, and its answer completes the hop (text,
 * and a data part for a structured answer). `ask` suspends the hop with the
 * whole conversation as its checkpoint; the answer resumes it, in any worker
 * process, as the tool's result. Each model call and tool call runs once per
 * hop (recorded through `effects.once`); each hop reports its priced usage.
 * `ai` is imported when the first hop runs.
 */
export function createModelAgent(options: ModelAgentOptions): WorkHandler {
  const pricing = priceFor(options);
  const maxSteps = options.maxSteps ?? DEFAULT_MAX_STEPS;
  if (!Number.isInteger(maxSteps) || maxSteps < 1) {
    throw new NonRetryableError(`maxSteps must be a whole number of model calls, at least 1, not ${maxSteps}`, {
      type: 'InvalidAgent',
    });
  }
  const tools = options.tools ?? {};
  for (const name of ['ask', 'delegate']) {
    if (Object.hasOwn(tools, name)) {
      throw new NonRetryableError(`the tool name ${name} is the agent's own: rename your tool`, {
        type: 'InvalidAgent',
      });
    }
  }
  const askRoles = typeof options.ask === 'object' ? new Set(options.ask.roles) : undefined;
  const model = options.model;
  const modelName = model.modelId;
  const label = `${model.provider}:${model.modelId}`;

  return async (hop: HopInput): Promise<HandlerResult> => {
    const declarations: Record<string, ToolDeclaration> = {};
    for (const [name, tool] of Object.entries(tools)) {
      declarations[name] = {
        inputSchema: tool.inputSchema,
        ...(tool.description === undefined ? {} : { description: tool.description }),
      };
    }
    if (options.ask !== false) declarations.ask = await ASK_TOOL(askRoles);
    if (options.delegate === true) declarations.delegate = await DELEGATE_TOOL();
    const output = options.outputSchema === undefined ? undefined : await outputSchemaOf(options.outputSchema);
    const system =
      output === undefined
        ? options.system
        : `${options.system ?? ''}\n\nGive your final answer as JSON only, of this JSON Schema:\n${JSON.stringify(output.jsonSchema)}`.trim();

    let messages: ConversationMessage[];
    let step: number;
    let spent: AgentSpend;
    if (hop.resume === undefined) {
      messages = [userMessage((options.prompt ?? firstPrompt)(hop))];
      step = 0;
      spent = { ...NO_SPEND };
    } else {
      const parsed = ModelAgentCheckpointSchema.safeParse(hop.resume.state);
      if (!parsed.success) {
        throw new NonRetryableError('the checkpoint of this hop is not a model agent checkpoint', {
          type: 'InvalidCheckpoint',
        });
      }
      const saved = parsed.data;
      const answer = resumeOutput(hop.resume, saved.pending.toolName);
      messages = [...saved.messages, toolMessage([{ ...saved.pending, output: answer }])];
      step = saved.step;
      spent = saved.spent;
    }
    // What this segment (from the hop's start or resumption) spent is what it reports.
    const since = { ...spent };

    for (;;) {
      const stop = budgetStop(options.budget, spent);
      if (stop !== null) {
        throw new NonRetryableError(`the model agent stopped before model call ${step + 1}: ${stop}`, {
          type: 'BudgetExceeded',
          details: { spent, budget: options.budget },
        });
      }
      if (step >= maxSteps) {
        throw new NonRetryableError(
          `the model agent made ${step} model calls without answering (maxSteps ${maxSteps})`,
          {
            type: 'MaxStepsExceeded',
          },
        );
      }
      const current = messages;
      const stream = options.stream === false ? undefined : hop.stream;
      const artifactId = answerArtifactId(hop, step);
      // A step that completed is replayed from its record: the callback is not run, nothing streams again.
      const made: ModelStep = await hop.effects.once(modelStepKey(step), async () => {
        const streaming =
          stream === undefined
            ? {}
            : { onText: (text: string) => stream.write(artifactId, text, { name: `answer of ${label}` }) };
        try {
          return await callModel({
            model,
            system,
            messages: current,
            tools: declarations,
            signal: hop.signal,
            ...streaming,
          });
        } finally {
          stream?.end(artifactId);
        }
      });
      spent = addStep(spent, made.tokens, stepCost(pricing, made.tokens));
      messages = [...messages, ...made.messages];
      const thisStep = step;
      step++;

      if (made.toolCalls.length === 0) {
        const parts: Part[] = made.text.length > 0 ? [{ kind: 'text', text: made.text }] : [];
        if (output !== undefined) {
          const json = jsonInText(made.text);
          const checked = json.ok ? await output.check(json.value) : json;
          if (!checked.ok) {
            // Told what is wrong, the model answers again (one more step).
            messages = [
              ...messages,
              userMessage(`Your answer does not match the schema: ${checked.error}. Answer again, JSON only.`),
            ];
            continue;
          }
          parts.push({ kind: 'data', data: checked.value as Record<string, unknown> });
        }
        if (parts.length === 0) parts.push({ kind: 'text', text: '' });
        return complete({
          parts,
          usage: segmentUsage(spent, since, modelName),
          metadata: { model: label, steps: step },
        });
      }

      const results: { toolCallId: string; toolName: string; output: ToolOutput }[] = [];
      let pending: { call: PendingToolCall; result: HandlerResult } | undefined;
      for (const call of made.toolCalls) {
        const suspending = call.toolName === 'ask' || call.toolName === 'delegate';
        if (suspending && pending === undefined && call.invalid === undefined) {
          const suspension = suspendingCall(call, askRoles);
          if ('error' in suspension) {
            results.push({ toolCallId: call.toolCallId, toolName: call.toolName, output: suspension.error });
          } else {
            pending = {
              call: { toolCallId: call.toolCallId, toolName: call.toolName as 'ask' | 'delegate' },
              result: suspension.result,
            };
          }
          continue;
        }
        results.push({
          toolCallId: call.toolCallId,
          toolName: call.toolName,
          output: suspending
            ? {
                type: 'error-text',
                value: call.invalid ?? 'one ask or delegate at a time: call it again after this one is answered',
              }
            : await runTool(hop, tools, call, thisStep, messages),
        });
      }
      if (results.length > 0) messages = [...messages, toolMessage(results)];
      if (pending !== undefined) {
        const checkpoint: ModelAgentCheckpoint = {
          kind: 'model-agent',
          version: 1,
          model: label,
          messages,
          step,
          spent,
          pending: pending.call,
        };
        const usage = segmentUsage(spent, since, modelName);
        return { ...pending.result, state: checkpoint, usage } as HandlerResult;
      }
    }
  };
}

/**
 * The artifact a model call's text streams to: one per model call of the
 * hop's attempt (`answer-<hop>.<attempt>-model-<n>`), the same when a
 * redelivered hop runs the call again, so a receiver drops what it has.
 */
export function answerArtifactId(hop: HopInput, step: number): string {
  return `answer-${hop.headers.hop}.${hop.headers.attempt}-${modelStepKey(step).replace('/', '-')}`;
}

/** The suspension an `ask` or `delegate` call makes, or the error result a bad one gets. */
function suspendingCall(
  call: ModelToolCall,
  askRoles: Set<string> | undefined,
): { result: HandlerResult } | { error: ToolOutput } {
  if (call.toolName === 'ask') {
    const ask = parseAsk(call.input, askRoles);
    if ('error' in ask) return { error: { type: 'error-text', value: ask.error } };
    return {
      result: suspend({
        ask: { role: ask.role, message: { role: 'agent', parts: [{ kind: 'text', text: ask.question }] } },
        state: null,
      }),
    };
  }
  const child = parseDelegate(call.input);
  if ('error' in child) return { error: { type: 'error-text', value: child.error } };
  return { result: spawn([child]) };
}

/** Runs one tool call once per hop: its value (or its error) is recorded, and replayed on a redelivery. */
async function runTool(
  hop: HopInput,
  tools: Record<string, AgentTool>,
  call: ModelToolCall,
  step: number,
  messages: ConversationMessage[],
): Promise<ToolOutput> {
  if (call.invalid !== undefined) return { type: 'error-text', value: call.invalid };
  const tool = Object.hasOwn(tools, call.toolName) ? tools[call.toolName] : undefined;
  if (tool?.execute === undefined) {
    return { type: 'error-text', value: `there is no tool ${call.toolName} to run` };
  }
  const execute = tool.execute.bind(tool) as (input: unknown, options: unknown) => unknown;
  return hop.effects.once(toolStepKey(step, call.toolCallId), async (): Promise<ToolOutput> => {
    try {
      const value = await execute(call.input, { toolCallId: call.toolCallId, messages, abortSignal: hop.signal });
      return JSON.parse(JSON.stringify(toolOutput(value))) as ToolOutput;
    } catch (error) {
      return { type: 'error-text', value: error instanceof Error ? error.message : String(error) };
    }
  });
}
