import { z } from 'zod';
import { A2AToolStrictInputSchema } from '../protocol/a2a-tool.js';
import type { A2ATool, A2AToolFailure, A2AToolResult } from './a2a-tool.js';

/** A function tool as OpenAI's Chat Completions API takes it in `tools`. */
export interface OpenAIChatTool {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown>; strict: true };
}

/** A function tool as OpenAI's Responses API takes it in `tools`. */
export interface OpenAIResponsesTool {
  type: 'function';
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  strict: true;
}

/** A tool call of a Chat Completions answer (`choices[0].message.tool_calls[i]`). */
export interface OpenAIChatToolCall {
  id: string;
  function: { name: string; arguments: string };
}

/** The `tool` message that answers a Chat Completions tool call. */
export interface OpenAIChatToolMessage {
  role: 'tool';
  tool_call_id: string;
  content: string;
}

/** A `function_call` output item of a Responses API answer. */
export interface OpenAIFunctionCall {
  call_id: string;
  name: string;
  arguments: string;
}

/** The `function_call_output` input item that answers a Responses API function call. */
export interface OpenAIFunctionCallOutput {
  type: 'function_call_output';
  call_id: string;
  output: string;
}

/** The `A2A` tool for OpenAI function calling, in strict mode. */
export interface OpenAIA2ATool {
  /** For `tools` of Chat Completions. */
  chatTool: OpenAIChatTool;
  /** For `tools` of the Responses API. */
  responsesTool: OpenAIResponsesTool;
  /**
   * Runs one call from its arguments as the model wrote them (the JSON
   * string, or the parsed object): `null` fields are absent, `data` is read
   * from its JSON string. Never throws.
   */
  execute(args: unknown): Promise<A2AToolResult>;
  /** Answers a Chat Completions tool call to `A2A` (`undefined` for a call to another tool). */
  handleToolCall(call: OpenAIChatToolCall): Promise<OpenAIChatToolMessage | undefined>;
  /** Answers a Responses API function call to `A2A` (`undefined` for a call to another tool). */
  handleFunctionCall(call: OpenAIFunctionCall): Promise<OpenAIFunctionCallOutput | undefined>;
}

/**
 * The `A2A` tool's input schema for OpenAI strict mode, as JSON Schema:
 * `A2AToolStrictInputSchema` (every field required and nullable, data as a
 * JSON string, no bound keywords, `additionalProperties: false`).
 */
export function a2aToolStrictJsonSchema(): Record<string, unknown> {
  const { $schema: _dialect, ...schema } = z.toJSONSchema(A2AToolStrictInputSchema) as Record<string, unknown>;
  return schema;
}

/**
 * Adapts the `A2A` tool to OpenAI function calling with `strict: true`: the
 * strict schema, the tool definitions of both APIs and the handlers that
 * turn a call into the message answering it. Plain objects: no runtime
 * dependency on the `openai` package.
 */
export function toOpenAITool(tool: A2ATool): OpenAIA2ATool {
  const parameters = a2aToolStrictJsonSchema();
  const execute = async (args: unknown): Promise<A2AToolResult> => {
    const read = fromStrictArguments(args);
    return read.ok ? tool.execute(read.value) : read.failure;
  };
  return {
    chatTool: {
      type: 'function',
      function: { name: tool.name, description: tool.description, parameters, strict: true },
    },
    responsesTool: { type: 'function', name: tool.name, description: tool.description, parameters, strict: true },
    execute,
    async handleToolCall(call) {
      if (call.function.name !== tool.name) return undefined;
      const result = await execute(call.function.arguments);
      return { role: 'tool', tool_call_id: call.id, content: JSON.stringify(result) };
    },
    async handleFunctionCall(call) {
      if (call.name !== tool.name) return undefined;
      const result = await execute(call.arguments);
      return { type: 'function_call_output', call_id: call.call_id, output: JSON.stringify(result) };
    },
  };
}

/** Strict-mode arguments read back into the tool's input: parsed, `data` decoded (nulls stay: the tool drops them). */
function fromStrictArguments(args: unknown): Decoded {
  let raw = args;
  if (typeof raw === 'string') {
    try {
      raw = JSON.parse(raw);
    } catch {
      return invalid('The arguments were not valid JSON; call A2A again with one JSON object.');
    }
  }
  if (!isPlainObject(raw)) return invalid('The arguments must be one JSON object; call A2A again with one.');
  const out: Record<string, unknown> = { ...raw };
  const data = decodeData(out.data, 'data');
  if (!data.ok) return data;
  out.data = data.value;
  if (isPlainObject(out.artifact)) {
    const artifactData = decodeData(out.artifact.data, 'artifact.data');
    if (!artifactData.ok) return artifactData;
    out.artifact = { ...out.artifact, data: artifactData.value };
  }
  return { ok: true, value: out };
}

type Decoded = { ok: true; value: unknown } | { ok: false; failure: A2AToolFailure };

function decodeData(value: unknown, field: string): Decoded {
  if (typeof value !== 'string') return { ok: true, value };
  if (value.trim() === '') return { ok: true, value: null };
  try {
    const parsed: unknown = JSON.parse(value);
    if (isPlainObject(parsed)) return { ok: true, value: parsed };
  } catch {
    // Reported below.
  }
  return invalid(
    `The ${field} field must be a JSON object written as a string (such as "{\\"city\\":\\"Paris\\"}") or null; fix it and call A2A again.`,
  );
}

function invalid(message: string): Decoded {
  return { ok: false, failure: { ok: false, errorCode: 'INVALID_INPUT', message } };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
