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
import { ITEM_BUDGET_EXCEEDED, type Usage } from '../protocol/work-envelope.js';
import {
  type ConversationMessage,
  type ToolOutput,
  firstPrompt,
  jsonInText,
  resumeOutput,
  toolMessage,
  userMessage,
} from './conversation.js';
import { type McpServerConfig, McpServers } from './mcp/mcp-servers.js';
import { mcpToolsOf } from './mcp/mcp-tools.js';
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
import { type AgentBudget, budgetStop, itemBudgetStop, modelStepKey } from './steps.js';
import { ASK_TOOL, DELEGATE_TOOL, parseAsk, parseDelegate } from './suspending-tools.js';
import { type AgentTool, type ToolRun, agentToolRuns, runTool } from './tool-runs.js';

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

export type { AgentTool } from './tool-runs.js';

/** What a model agent is: its model, instructions, tools, prices and limits. */
export interface ModelAgentOptions {
  /** The model (any AI SDK provider's language model). */
  model: AgentLanguageModel;
  /** The system prompt. */
  system?: string;
  /** Tools the model may call, by name (`ask` and `delegate` are the agent's own). */
  tools?: Record<string, AgentTool>;
  /**
   * MCP servers whose tools the model may call, by a name of letters, digits,
   * `-` and `_`: stdio (`{ command, args?, env?, cwd? }`) or streamable HTTP
   * (`{ url, headers? }`). Server `fs`'s tool `read` is the model's
   * `fs__read`. Connected by the first hop (or `connect()`), closed by `close()`.
   */
  mcpServers?: Record<string, McpServerConfig>;
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
 * A model agent: a worker handler, with its MCP servers' lifetime. `connect()`
 * connects the servers and lists their tools (the first hop does it
 * otherwise), so that a bad server stops a worker before it takes work;
 * `close()` closes them (a stdio server's process ends): call it once the
 * worker has stopped. Both do nothing for an agent without MCP servers.
 */
export type ModelAgent = WorkHandler & {
  connect(): Promise<void>;
  close(): Promise<void>;
};

/**
 * A worker handler that runs a model through the Vercel AI SDK: the hop's
 * input (after the item's earlier outputs) is the first user message; the
 * model calls tools until it answers, and its answer completes the hop (text,
 * and a data part for a structured answer). `ask` suspends the hop with the
 * whole conversation as its checkpoint; the answer resumes it, in any worker
 * process, as the tool's result. Each model call and tool call runs once per
 * hop (recorded through `effects.once`); each hop reports its priced usage.
 * The tools of `mcpServers` are called through the MCP SDK client, each call
 * a step run once like any tool's. `ai` is imported when the first hop runs.
 */
export function createModelAgent(options: ModelAgentOptions): ModelAgent {
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
  const mcp =
    options.mcpServers === undefined || Object.keys(options.mcpServers).length === 0
      ? undefined
      : new McpServers(options.mcpServers);
  const ownRuns = agentToolRuns(tools);

  const mcpTools = () => mcpToolsOf(mcp, tools);

  const handler = async (hop: HopInput): Promise<HandlerResult> => {
    const declarations: Record<string, ToolDeclaration> = {};
    for (const [name, tool] of Object.entries(tools)) {
      declarations[name] = {
        inputSchema: tool.inputSchema,
        ...(tool.description === undefined ? {} : { description: tool.description }),
      };
    }
    const fromMcp = await mcpTools();
    Object.assign(declarations, fromMcp.declarations);
    const runs: Record<string, ToolRun> = { ...ownRuns, ...fromMcp.runs };
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
    // What this segment (from the hop's start or resumption) spent is what it reports, failed or not.
    const since = { ...spent };
    try {
      return await loop();
    } catch (error) {
      throw withUsage(error, segmentUsage(spent, since, modelName));
    }

    async function loop(): Promise<HandlerResult> {
      for (;;) {
        // The work item's budget first: a stop on it fails the item (BUDGET_EXCEEDED), whatever the rules.
        const itemStop = itemBudgetStop(hop.headers.itemBudget, spent);
        if (itemStop !== null) {
          throw new NonRetryableError(
            `the model agent stopped before model call ${step + 1}: ${itemStop} (the hop spent ${spent.inputTokens + spent.outputTokens} tokens, ${spent.costUsd} USD)`,
            { type: ITEM_BUDGET_EXCEEDED, details: { spent, itemBudget: hop.headers.itemBudget } },
          );
        }
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
              : await runTool(hop, runs, call, thisStep, messages),
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
    }
  };
  return Object.assign(handler, {
    connect: async () => {
      await mcpTools();
    },
    close: async () => {
      await mcp?.close();
    },
  });
}

/**
 * The error a hop fails with, carrying what the hop spent before it failed
 * (`usage`, read by the worker harness and charged to the work item). An
 * error that says nothing of usage, or that spent nothing, is left as it is.
 */
function withUsage(error: unknown, usage: Usage): unknown {
  if (usage.inputTokens + usage.outputTokens === 0 && usage.costUsd === 0) return error;
  if (error === null || typeof error !== 'object' || 'usage' in error) return error;
  try {
    Object.defineProperty(error, 'usage', { value: usage, enumerable: true, configurable: true });
  } catch {
    // A frozen error reports no usage.
  }
  return error;
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
