import type { ConversationMessage } from './conversation.js';
import { type StepTokens, stepTokens } from './pricing.js';

/**
 * The Vercel AI SDK (`ai`, an optional peer dependency) as a model agent uses
 * it: imported when the first hop runs, never at load, so that a project
 * without it is unaffected. One model call is one `generateText` step with
 * tools that have no `execute`: the agent runs the tools itself, each as a
 * step of its own.
 */

type Ai = typeof import('ai');
let loaded: Promise<Ai> | undefined;

/** The AI SDK, or an error saying to install it. */
function loadAi(): Promise<Ai> {
  loaded ??= import('ai').catch((error: unknown) => {
    loaded = undefined;
    throw new Error(
      `a model agent needs the Vercel AI SDK: install it with \`npm install ai\` (${(error as Error).message})`,
    );
  });
  return loaded;
}

/** A tool as the model is told of it: its description and input schema (an AI SDK `FlexibleSchema`). */
export interface ToolDeclaration {
  description?: string;
  inputSchema: unknown;
}

/** A tool call the model asked for. */
export interface ModelToolCall {
  toolCallId: string;
  toolName: string;
  input: unknown;
  /** Set when the SDK could not parse or validate the call's input: what was wrong. */
  invalid?: string;
}

/** What one model call gave: plain JSON, as recorded for replay. */
export interface ModelStep {
  /** The messages the call added to the conversation (the assistant's). */
  messages: ConversationMessage[];
  text: string;
  toolCalls: ModelToolCall[];
  tokens: StepTokens;
  finishReason: string;
}

/** One model call: the conversation so far in, the assistant's turn out, with its token usage. */
export async function callModel(request: {
  model: unknown;
  system: string | undefined;
  messages: readonly ConversationMessage[];
  tools: Record<string, ToolDeclaration>;
  signal: AbortSignal;
  /** When given, the call streams (`streamText`): told each piece of text as the model writes it. */
  onText?: (text: string) => void;
}): Promise<ModelStep> {
  const ai = await loadAi();
  const tools: Record<string, unknown> = {};
  for (const [name, declared] of Object.entries(request.tools)) {
    tools[name] = ai.tool({
      ...(declared.description === undefined ? {} : { description: declared.description }),
      inputSchema: declared.inputSchema as Parameters<typeof ai.tool>[0]['inputSchema'],
    } as Parameters<typeof ai.tool>[0]);
  }
  const call = {
    model: request.model as Parameters<typeof ai.generateText>[0]['model'],
    ...(request.system === undefined ? {} : { system: request.system }),
    messages: request.messages as unknown as import('ai').ModelMessage[],
    tools: tools as Parameters<typeof ai.generateText>[0]['tools'],
    stopWhen: ai.stepCountIs(1),
    abortSignal: request.signal,
  };
  const result: CallResult =
    request.onText === undefined ? await ai.generateText(call) : await streamed(ai, call, request.onText);
  const step: ModelStep = {
    messages: result.response.messages as unknown as ConversationMessage[],
    text: result.text,
    toolCalls: result.toolCalls.map((call) => {
      const c = call as { toolCallId: string; toolName: string; input: unknown; invalid?: boolean; error?: unknown };
      const made: ModelToolCall = { toolCallId: c.toolCallId, toolName: c.toolName, input: c.input };
      if (c.invalid === true) made.invalid = c.error instanceof Error ? c.error.message : String(c.error);
      return made;
    }),
    tokens: stepTokens(result.usage),
    finishReason: String(result.finishReason),
  };
  // Recorded as JSON and replayed from it: the first run returns what a replay would.
  return JSON.parse(JSON.stringify(step)) as ModelStep;
}

/** What `callModel` reads of a model call's result, made or streamed. */
interface CallResult {
  response: { messages: unknown[] };
  text: string;
  toolCalls: unknown[];
  usage: Parameters<typeof stepTokens>[0];
  finishReason: unknown;
}

/**
 * One model call through `streamText`: each text delta is told as it comes;
 * an error in the stream is thrown (not logged by the SDK), as
 * `generateText` would throw it.
 */
async function streamed(
  ai: Ai,
  call: Parameters<Ai['streamText']>[0],
  onText: (text: string) => void,
): Promise<CallResult> {
  const result = ai.streamText({ ...call, onError: () => undefined });
  for await (const part of result.fullStream) {
    if (part.type === 'text-delta') onText(part.text);
    else if (part.type === 'error') throw part.error;
  }
  const [response, text, toolCalls, usage, finishReason] = await Promise.all([
    result.response,
    result.text,
    result.toolCalls,
    result.usage,
    result.finishReason,
  ]);
  return { response, text, toolCalls, usage, finishReason };
}

/** A JSON Schema as the SDK takes it for a tool's input. */
export async function jsonSchemaOf(schema: Record<string, unknown>): Promise<unknown> {
  const ai = await loadAi();
  return ai.jsonSchema(schema as Parameters<typeof ai.jsonSchema>[0]);
}

/** A structured output schema (zod, Standard Schema, or the SDK's `jsonSchema()`): its JSON Schema and its check. */
export async function outputSchemaOf(schema: unknown): Promise<{
  jsonSchema: unknown;
  check: (value: unknown) => Promise<{ ok: true; value: unknown } | { ok: false; error: string }>;
}> {
  const ai = await loadAi();
  const asSchema = ai.asSchema(schema as Parameters<typeof ai.asSchema>[0]);
  const jsonSchema = await asSchema.jsonSchema;
  return {
    jsonSchema,
    check: async (value) => {
      if (asSchema.validate === undefined) return { ok: true, value };
      const checked = await asSchema.validate(value);
      return checked.success ? { ok: true, value: checked.value } : { ok: false, error: checked.error.message };
    },
  };
}
